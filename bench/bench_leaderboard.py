"""Benchmark: the leaderboard on 1,000,000 simulated votes of 16 models.

Usage::

    python bench/bench_leaderboard.py [--votes 1000000] [--models 16] [--repeats 3]

Target (issue 25): ``hh collect leaderboard --battles FILE`` work (read the file, fit, the
default 1,000 vote-bootstrap resamples) in well under half the time of the notebook route
(pandas reads the JSON lines, a per-vote design matrix, one scikit-learn logistic regression,
no bootstrap), measured in the same run, with ratings that agree within a few points.

Writes a battles file of simulated votes (known strengths, 10% ties, lengths that sway
votes) to a temporary folder, times both routes in this process (median of ``--repeats``),
and also times style control and the robustness search. Prints a Markdown report.
"""

from __future__ import annotations

import argparse
import gzip
import math
import os
import platform
import statistics
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import orjson


def simulate(path: Path, votes: int, models: int, seed: int = 0) -> None:
    """Write ``votes`` battles of models 40 Elo points apart, longer answers favoured."""
    rng = np.random.default_rng(seed)
    names = [f"model-{k:02d}" for k in range(models)]
    truth = np.linspace(-300, 300, models)
    a = rng.integers(0, models, votes)
    b = (a + rng.integers(1, models, votes)) % models
    la = rng.integers(50, 2000, votes)
    lb = rng.integers(50, 2000, votes)
    logit = (truth[a] - truth[b]) / (400 / math.log(10)) + 0.3 * (la - lb) / (la + lb)
    win_a = rng.random(votes) < 1 / (1 + np.exp(-logit))
    tie = rng.random(votes) < 0.1
    winner = np.where(tie, "tie", np.where(win_a, "model_a", "model_b"))
    t0 = 1.7e9
    with open(path, "wb") as f:
        for k in range(votes):
            f.write(
                orjson.dumps(
                    {
                        "model_a": names[a[k]],
                        "model_b": names[b[k]],
                        "winner": str(winner[k]),
                        "tstamp": t0 + k,
                        "conv_metadata": {
                            "sum_assistant_a_tokens": int(la[k]),
                            "sum_assistant_b_tokens": int(lb[k]),
                        },
                    }
                )
                + b"\n"
            )


def notebook_route(path: Path) -> dict[str, float]:
    """The public notebook's way: pandas reads every vote, one row per vote (ties as one
    row each way), an unpenalised logistic regression without intercept."""
    import pandas as pd
    from sklearn.linear_model import LogisticRegression

    df = pd.read_json(path, lines=True)
    names = pd.unique(pd.concat([df["model_a"], df["model_b"]]))
    index = pd.Series(np.arange(len(names)), index=names)
    df = pd.concat([df, df], ignore_index=True)  # each vote twice: a tie is one win each way
    n = len(df)
    design = np.zeros((n, len(names)))
    design[np.arange(n), index[df["model_a"]].to_numpy()] = math.log(10)
    design[np.arange(n), index[df["model_b"]].to_numpy()] = -math.log(10)
    y = (df["winner"] == "model_a").to_numpy().astype(float)
    tie = df["winner"].isin(["tie", "tie (bothbad)"]).to_numpy().copy()
    tie[n // 2 :] = False
    y[tie] = 1.0
    with warnings.catch_warnings():  # newer scikit-learn deprecates penalty=None
        warnings.simplefilter("ignore", FutureWarning)
        lr = LogisticRegression(fit_intercept=False, penalty=None, tol=1e-8)
        lr.fit(design, y)
    coef = 400 * lr.coef_[0]
    coef = coef - coef.mean() + 1000
    return dict(zip(names, coef.tolist(), strict=True))


def ours(path: Path, **kw) -> dict:
    from hhrlhf.ranking import rank, read_battles

    return rank(read_battles(path), **kw)


CPU: dict[str, float] = {}


def timed(fn, repeats: int, name: str = ""):
    """Median wall seconds, every run's wall seconds, the result; the median CPU seconds
    (this process, all threads) go to ``CPU[name]``."""
    times, cpu, result = [], [], None
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        result = fn()
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    CPU[name] = statistics.median(cpu)
    return statistics.median(times), times, result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--votes", type=int, default=1_000_000)
    parser.add_argument("--models", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "battles.jsonl"
        t = time.perf_counter()
        simulate(path, args.votes, args.models)
        made = time.perf_counter() - t
        size = path.stat().st_size
        gz = Path(tmp) / "battles.jsonl.gz"
        with open(path, "rb") as src, gzip.open(gz, "wb", compresslevel=6) as dst:
            dst.write(src.read())

        from hhrlhf.ranking import read_battles

        t_read, _, _ = timed(lambda: read_battles(path), args.repeats)
        t_ours, times_ours, board = timed(lambda: ours(path), args.repeats, "ours")
        t_nb, times_nb, nb = timed(lambda: notebook_route(path), args.repeats, "notebook")
        t_gz, _, _ = timed(lambda: ours(gz), 1)
        t_style, _, styled = timed(lambda: ours(path, style_control=True), 1)
        t_rob, _, robust = timed(lambda: ours(path, resamples=0, robustness=True), 1)

    mine = {r["name"]: r["rating"] for r in board["models"]}
    diff = max(abs(mine[n] - nb[n]) for n in mine)
    width = statistics.median(r["ci_high"] - r["ci_low"] for r in board["models"])
    print("## Leaderboard (`bench/bench_leaderboard.py`)\n")
    print(
        f"{args.votes:,} simulated votes of {args.models} models ({size / 2**20:.0f} MiB JSONL, "
        f"written in {made:.1f} s), {platform.python_version()}, {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f}; median of {args.repeats} runs.\n"
    )
    print("| route | seconds | runs |")
    print("|---|---|---|")
    print(
        f"| ours: read + fit + {board['intervals']['resamples']} vote-bootstrap resamples | "
        f"{t_ours:.2f} | {', '.join(f'{x:.2f}' for x in times_ours)} |"
    )
    print(f"| ours: of which reading the file | {t_read:.2f} | |")
    print(f"| ours, the same file gzipped | {t_gz:.2f} | 1 |")
    print(
        "| notebook route: pandas read_json + per-vote design matrix + sklearn "
        f"LogisticRegression (one fit, no intervals) | {t_nb:.2f} | "
        f"{', '.join(f'{x:.2f}' for x in times_nb)} |"
    )
    print(f"| ours with --style-control (1,000 resamples) | {t_style:.2f} | 1 |")
    print(f"| ours with --robustness (no intervals) | {t_rob:.2f} | 1 |")
    print()
    print(
        f"- ratio ours / notebook route: **{t_ours / t_nb:.2f}x** wall; CPU seconds "
        f"{CPU['ours']:.2f} vs {CPU['notebook']:.2f}: {CPU['ours'] / CPU['notebook']:.2f}x"
    )
    print(f"- largest rating difference from the notebook route: {diff:.2f} points")
    print(f"- median 95% interval width: {width:.1f} points")
    print(
        f"- style control: coefficient {styled['style']['length']['coef']} per unit of the "
        "scaled length difference (the votes were simulated with 0.3 logits per unit of the "
        "unscaled difference, which is about 0.1 per scaled unit, less 10% for the ties)"
    )
    flip = robust["robustness"]["flip_top"]
    print(
        "- robustness: "
        + (
            "no flip within the limit"
            if flip is None
            else f"the top rank changes (to {flip['new_top']}) if {flip['votes']:,} votes are "
            f"removed (limit {robust['robustness']['limit']:,}; verified by a refit)"
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
