"""Mislabel flags (``hh pm flag``): quality on the real file, speed on it and at full size.

Run from the repository root (needs the [reward] extra)::

    HH_RLHF_REAL=../shared/data/hh-rlhf python bench/bench_flag.py timing   # 5 folds x 2 seeds
    HH_RLHF_REAL=../shared/data/hh-rlhf python bench/bench_flag.py flips    # 10% flips, 3 seeds
    HH_RLHF_REAL=../shared/data/hh-rlhf python bench/bench_flag.py solvers  # dual vs primal
    HH_RLHF_REAL=../shared/data/hh-rlhf python bench/bench_flag.py strata   # the real labels
    python bench/bench_flag.py corpus --corpus bench/corpus --jobs 2         # 42.5k pairs

- ``timing``: one flagging run on the real harmless-base/test.jsonl.gz (2,312 pairs), 5 folds
  x 2 seeds, the default settings (each fold through the dual kernel), with its wall time;
- ``flips``: 10% of the labels flipped at random (seeds 0, 1, 2), flagged (5 folds x 2 seeds);
  per seed the AUROC of p_mislabelled for the flipped pairs and the precision/recall at the
  top 2/5/10% and of likely_mislabelled, then the mean over the seeds;
- ``solvers``: one fold (seed 0, fold 1) fitted both ways, dual and primal, on the same
  features: each fit's time and how closely the margins agree;
- ``strata``: the real labels as given, the pairs in 5 margin strata, a PM trained on each
  alone and its held-out accuracy;
- ``corpus``: harmless-base/train.jsonl.gz of the full-size corpus (bench/make_corpus.py, 42,537
  pairs), 5 folds x 2 seeds; the training folds are above ``DUAL_MAX_PAIRS``, so each fit is
  the primal L-BFGS one.

Only counts, rates and times are printed; no text from the file.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

from hhrlhf import read_pairs
from hhrlhf.reward.flag_run import run_flag


def _real_pairs() -> list | None:
    root = os.environ.get("HH_RLHF_REAL")
    path = Path(root or "", "harmless-base", "test.jsonl.gz")
    if not root or not path.is_file():
        print("skipped: set HH_RLHF_REAL to the folder holding harmless-base/test.jsonl.gz")
        return None
    return list(read_pairs(path, subset="harmless-base", split="test"))


def _cpu() -> float:
    """CPU seconds of this process and its finished children (the featurising workers): on a
    shared machine the wall time says more about the neighbours than about the work."""
    own, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _counts(report: dict) -> str:
    total = report["counts"][-1]
    return ", ".join(f"{k} {total[k]:,}" for k in ("likely_mislabelled", "ambiguous", "clear"))


def timing(pairs: list, jobs: int) -> None:
    t0, c0 = time.perf_counter(), _cpu()
    _, report = run_flag(pairs, options={"n_jobs": jobs}, folds=5, seeds=2)
    print(
        f"| {len(pairs):,} pairs, 5 folds x 2 seeds | {time.perf_counter() - t0:.1f} s wall, "
        f"{_cpu() - c0:.1f} s CPU | fits: {report['fits']} | {_counts(report)} |"
    )


def flips(pairs: list, jobs: int, seeds: list[int]) -> None:
    keys = ("auroc", "precision@0.02", "precision@0.05", "precision@0.1", "precision@likely")
    keys += ("recall@0.05", "recall@likely")
    print("| seed | " + " | ".join(keys) + " | seconds |")
    print("|---" * (len(keys) + 2) + "|")
    values = []
    for s in seeds:
        _, report = run_flag(
            pairs, options={"n_jobs": jobs}, folds=5, seeds=2, inject=(0.1, s), resamples=1000
        )
        inj = report["injected"]
        values.append([inj[k]["value"] for k in keys])
        cells = [f"{inj[k]['value']:.3f} ({inj[k]['low']:.3f}-{inj[k]['high']:.3f})" for k in keys]
        print(f"| {s} | " + " | ".join(cells) + f" | {report['seconds']:.0f} |", flush=True)
    mean = np.mean(values, axis=0)
    print("| mean | " + " | ".join(f"{v:.3f}" for v in mean) + " | |")


def solvers(pairs: list, jobs: int) -> None:
    from hhrlhf.reward.flag_fit import LinearFitter
    from hhrlhf.reward.holdout import kfold

    train, test = (np.asarray(x) for x in kfold(pairs, 5, 0)[0])
    fitter = LinearFitter(pairs, n_jobs=jobs)
    margins, took = {}, {}
    for solver in ("dual", "primal"):
        fitter.solver = solver
        t0 = time.perf_counter()
        margins[solver] = fitter.margins(train, np.concatenate([train, test]))
        took[solver] = time.perf_counter() - t0
    d, p = margins["dual"], margins["primal"]
    print(
        f"| {len(train):,} training pairs | dual {took['dual']:.1f} s, primal {took['primal']:.1f} s "
        f"| correlation {np.corrcoef(d, p)[0, 1]:.7f}, max |difference| {np.abs(d - p).max():.4f} "
        f"(mean |margin| {np.abs(p).mean():.3f}), held-out accuracy {np.mean(d[len(train) :] > 0):.4f} "
        f"/ {np.mean(p[len(train) :] > 0):.4f} |"
    )


def strata(pairs: list, jobs: int) -> None:
    _, report = run_flag(pairs, options={"n_jobs": jobs}, folds=5, seeds=2, strata=5)
    print("| stratum | pairs | margins | held-out accuracy (95% CI) |")
    print("|---|---:|---|---|")
    for s in report["strata"]:
        lo, hi = s["ci95"]
        print(
            f"| {s['stratum']} | {s['pairs']} | {s['margin_low']:.2f} to {s['margin_high']:.2f} "
            f"| {100 * s['held_out_accuracy']:.1f}% ({100 * lo:.1f}-{100 * hi:.1f}) |"
        )
    print(f"({report['seconds']:.0f} s; {_counts(report)})")


def corpus(root: Path, jobs: int) -> None:
    path = root / "harmless-base" / "train.jsonl.gz"
    if not path.is_file():
        print(f"skipped: no {path} (python bench/make_corpus.py --out {root})")
        return
    pairs = list(read_pairs(path, subset="harmless-base", split="train"))
    t0, c0 = time.perf_counter(), _cpu()
    _, report = run_flag(pairs, options={"n_jobs": jobs}, folds=5, seeds=2)
    print(
        f"| {len(pairs):,} pairs, 5 folds x 2 seeds, --jobs {jobs} | "
        f"{time.perf_counter() - t0:.1f} s wall, {_cpu() - c0:.1f} s CPU | "
        f"fits: {report['fits']} | {_counts(report)} |"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("what", choices=("timing", "flips", "solvers", "strata", "corpus"))
    ap.add_argument("--jobs", type=int, default=1, help="featurisation processes")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="flips: seeds")
    ap.add_argument("--corpus", type=Path, default=Path("bench/corpus"))
    args = ap.parse_args(argv)
    if args.what == "corpus":
        corpus(args.corpus, args.jobs)
        return 0
    pairs = _real_pairs()
    if pairs is None:
        return 0
    {"timing": lambda: timing(pairs, args.jobs), "flips": lambda: flips(pairs, args.jobs, args.seeds),
     "solvers": lambda: solvers(pairs, args.jobs), "strata": lambda: strata(pairs, args.jobs),
     }[args.what]()  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
