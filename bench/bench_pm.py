"""Benchmark: train the linear PM on the full-scale corpus and score 100k dialogues.

Run (from the repository root, after ``python bench/make_corpus.py --out bench/corpus``)::

    python bench/bench_pm.py --corpus bench/corpus [--jobs 2] [--dialogues 100000]

Targets (issue 5): training on the 160,800 train pairs of the four preference subsets in under
3 minutes on two cores; scoring 100k dialogues (every assistant turn in context, min over
turns) in under 60 s. Also reports held-out accuracy on the corpus test splits with the
baselines, so a fast-but-broken model cannot pass.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np

import hhrlhf
from hhrlhf.reward import evaluate_model, train_pm
from hhrlhf.reward.score import score_dialogues


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default="bench/corpus")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--dialogues", type=int, default=100_000)
    ap.add_argument("--max-iter", type=int, default=300)
    args = ap.parse_args(argv)

    t = time.perf_counter()
    ds = hhrlhf.load_dataset(data=args.corpus)
    t_load = time.perf_counter() - t
    train, test = ds["train"], ds["test"]
    print(
        f"# machine: {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"{platform.platform()}"
    )
    print(
        f"# corpus: {args.corpus}: {len(train):,} train / {len(test):,} test pairs "
        f"(loaded in {t_load:.1f}s, not counted)"
    )
    t = time.perf_counter()
    model = train_pm(
        train,
        n_jobs=args.jobs,
        max_iter=args.max_iter,
        progress=lambda m: print(f"  {m}", file=sys.stderr, flush=True),
    )
    t_train = time.perf_counter() - t
    m = model.meta["metrics"]
    print(
        f"train: {t_train:.1f}s wall (featurise {m['featurise_seconds']:.1f}s, "
        f"{m['iterations']} L-BFGS iterations, converged={m['converged']}); "
        f"target < 180s: {'met' if t_train < 180 else 'NOT met'}"
    )

    t = time.perf_counter()
    report = evaluate_model(model, test, n_jobs=args.jobs)
    t_eval = time.perf_counter() - t
    acc = {
        "hhrlhf PM": report["overall"]["accuracy"],
        **{k: v["overall"]["accuracy"] for k, v in report["baselines"].items()},
    }
    print(
        f"held-out accuracy on {len(test):,} test pairs ({t_eval:.1f}s): "
        + ", ".join(f"{k} {100 * v:.1f}%" for k, v in acc.items())
    )

    # 100k dialogues: whole chosen transcripts of the train split, cycled if needed.
    texts = [p.chosen for p in train]
    texts = (texts * (args.dialogues // len(texts) + 1))[: args.dialogues]
    turns = sum(t.count("\n\nAssistant:") for t in texts)
    t = time.perf_counter()
    rows = score_dialogues(model, texts, n_jobs=args.jobs)
    t_score = time.perf_counter() - t
    assert len(rows) == len(texts)
    print(
        f"score: {len(texts):,} dialogues ({turns:,} assistant turns) in {t_score:.1f}s "
        f"({len(texts) / t_score:,.0f} dialogues/s); target < 60s: "
        f"{'met' if t_score < 60 else 'NOT met'}"
    )
    mins = np.array([r["min_score"] for r in rows if r["min_score"] is not None])
    print(f"  mean min score {mins.mean():.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
