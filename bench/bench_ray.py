"""Benchmark: PM scoring on a local Ray (1 and 2 workers) against the same scoring in one process.

Run (from the repository root, after ``python bench/make_corpus.py --out bench/corpus``, with
``pip install 'hhrlhf[ray,reward]'``)::

    python bench/bench_ray.py --corpus bench/corpus                      # the four test files
    python bench/bench_ray.py --corpus bench/corpus --splits train test  # every pair (minutes)

Target (issue 44): pairs per second of ``score_pairs`` with 1 and 2 workers, the 2-worker run
at least 1.6x the 1-worker one, and the overhead against the same scoring in one process.

The model is a default linear PM trained on the bundled sample's train split (or ``--model
DIR``). The pairs are read first (``read_pairs(...).materialize()``, not timed), so the times
are the scoring alone: a run's time counts starting its actors, each loading the model, and
moving the batches; the one-process time is ``model.score_pairs`` on the same pairs in
memory. Each Ray run is followed by one scoring a single pair with the same pool size: its
time is the pool's start, printed with the rate once started. The scores of every Ray run are checked equal to the one-process scores, bit for bit.
Ray runs on the loopback address only, with at most 2 CPUs.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # every Ray process on 127.0.0.1
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import numpy as np  # noqa: E402

import hhrlhf  # noqa: E402


def _model(path: str | None, tmp: str) -> str:
    if path:
        return path
    from hhrlhf.reward import train_pm

    out = os.path.join(tmp, "pm")
    train_pm(hhrlhf.load_dataset(data="sample", split="train")).save(out)
    return out


def _one_process(model_dir: str, pairs: list) -> tuple[float, dict]:
    from hhrlhf.reward import load_model

    t = time.perf_counter()
    model = load_model(model_dir)
    chosen, rejected = model.score_pairs(pairs)
    took = time.perf_counter() - t
    keys = [(p.subset, p.split, p.index) for p in pairs]
    return took, dict(zip(keys, zip(chosen.tolist(), rejected.tolist(), strict=True), strict=True))


def _on_ray(ds, model_dir: str, workers: int, batch: int) -> tuple[float, dict]:
    from hhrlhf.integrations import ray as hray

    t = time.perf_counter()
    scored = hray.score_pairs(ds, model_dir, concurrency=workers, batch_size=batch).materialize()
    took = time.perf_counter() - t
    cols = ["subset", "split", "index", "chosen_score", "rejected_score"]
    got = {}
    for b in scored.select_columns(cols).iter_batches(batch_format="pyarrow", batch_size=None):
        for s, sp, i, c, r in zip(*(b.column(k).to_pylist() for k in cols), strict=True):
            got[(s, sp, i)] = (c, r)
    return took, got


def _start_cost(ds, model_dir: str, workers: int) -> float:
    """Seconds to score one pair: starting the pool's actors and loading the model in each,
    the fixed cost in every run's time."""
    import warnings

    from hhrlhf.integrations import ray as hray

    t = time.perf_counter()
    with warnings.catch_warnings():  # the pool is larger than one pair needs: on purpose
        warnings.filterwarnings("ignore", message="The minimum number of concurrent actors")
        hray.score_pairs(ds.limit(1), model_dir, concurrency=workers).materialize()
    return time.perf_counter() - t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--corpus", default="bench/corpus")
    ap.add_argument("--splits", nargs="+", default=["test"])
    ap.add_argument("--model", default=None, help="a saved PM directory (default: trained now)")
    ap.add_argument("--batch", type=int, default=1024, help="pairs per batch (default 1024)")
    ap.add_argument("--repeat", type=int, default=1, help="rounds of the three (best kept)")
    args = ap.parse_args(argv)

    import logging

    import ray

    from hhrlhf.integrations import ray as hray

    print(f"python {platform.python_version()}, ray {ray.__version__}, {os.cpu_count()} cores")
    if hasattr(os, "getloadavg"):
        print("load average at start: {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = _model(args.model, tmp)
        pairs = []
        for split in args.splits:
            pairs += hhrlhf.load_dataset(data=args.corpus, split=split)
        n = len(pairs)
        print(f"{n:,} pairs ({', '.join(args.splits)}), model {model_dir}")
        ray.init(
            num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING
        )
        try:
            ctx = ray.data.DataContext.get_current()
            ctx.enable_progress_bars = False
            ctx.print_on_execution_start = False
            ds = hray.read_pairs(args.corpus, splits=args.splits).materialize()
            times: dict[object, list[float]] = {"one": [], 1: [], 2: []}
            for round_ in range(1, args.repeat + 1):  # the three alternate: load shifts alike
                took, want = _one_process(model_dir, pairs)
                times["one"].append(took)
                print(f"round {round_}: one process {took:.2f} s, {n / took:,.0f} pairs/s")
                for workers in (1, 2):
                    took, got = _on_ray(ds, model_dir, workers, args.batch)
                    if got != want:
                        print(f"error: {workers} worker(s): scores differ from one process")
                        return 1
                    times[workers].append(took)
                    start = _start_cost(ds, model_dir, workers)
                    print(
                        f"round {round_}: ray, {workers} worker(s) {took:.2f} s, "
                        f"{n / took:,.0f} pairs/s (scores bit-identical to one process); "
                        f"starting the pool alone {start:.2f} s, so "
                        f"{n / max(took - start, 1e-9):,.0f} pairs/s once started"
                    )
        finally:
            ray.shutdown()
    best = {k: min(v) for k, v in times.items()}
    for k, label in (("one", "one process"), (1, "ray, 1 worker"), (2, "ray, 2 workers")):
        print(
            f"best {label}: {best[k]:.2f} s, {n / best[k]:,.0f} pairs/s "
            f"({best[k] / best['one']:.2f}x the one-process time)"
        )
    print(f"2 workers / 1 worker: {best[1] / best[2]:.2f}x (target 1.6x)")
    if hasattr(os, "getloadavg"):
        print("load average at end: {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))
    margin = np.asarray([c - r for c, r in want.values()])
    print(f"mean margin {margin.mean():.4f} (a check that the model says something)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
