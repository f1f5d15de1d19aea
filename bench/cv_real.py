"""Seeded 5-fold cross-validation on the real harmless-base/test.jsonl.gz: our PM vs baselines.

Run (from the repository root; needs the [reward] extra and the real file)::

    HH_RLHF_REAL=../shared/data/hh-rlhf python bench/cv_real.py [--seed 0] [--folds 5]

It takes about 5 minutes on 2 cores (268 s for bench/RESULTS-pm.md): featurising the 2,312
pairs, then per fold 13 fits of the PM (4 l2 values x 3 inner folds, and the final fit) and one
of the TF-IDF baseline. Progress goes to stderr: a line per step, with the time so far and,
after the first fold, an estimate of the time left; the results table goes to stdout.

All models see the same folds in the same run:

- ``shorter wins``: the shorter final response scores higher (equal lengths are ties,
  counted as not correct);
- ``word-bigram TF-IDF BT``: sklearn's TfidfVectorizer (word 1-2 grams) fitted on the training
  responses, logistic regression without intercept on the feature differences of both pair
  orders (the Bradley-Terry model), C=1;
- ``hhrlhf PM``: :func:`hhrlhf.reward.train_pm` with the default features; its ``l2`` is chosen
  for each outer fold by an inner 3-fold CV on that fold's training pairs only (the test fold
  is never used to pick anything).

``--seed`` draws other folds (the same seed for all models); running ``--seed 1`` as well shows
how much a figure owes to one split. Only counts and accuracies are printed; no text from the
file.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from hhrlhf import read_pairs
from hhrlhf.reward.features import DENSE_GROUPS, WORD_TOKENIZERS, FeatureConfig, Featurizer
from hhrlhf.reward.loss import bt_objective

L2_GRID = (2e-4, 5e-4, 1e-3, 2e-3)


def _slice(raw: dict, idx) -> dict:
    return {k: v[idx] for k, v in raw.items()}


def _fit(feat_raw_c, feat_raw_r, tr, l2, config, max_iter=300):
    """Fit the PM on pairs ``tr`` from precomputed raw blocks; returns a scorer of pair indices."""
    from scipy.optimize import minimize

    f = Featurizer(config)
    both = {
        k: (np.vstack if k in DENSE_GROUPS else sp.vstack)([feat_raw_c[k][tr], feat_raw_r[k][tr]])
        for k in feat_raw_c
    }
    f.fit(None, None, raw=both)
    xc = f.transform(None, None, raw=feat_raw_c)
    xr = f.transform(None, None, raw=feat_raw_r)
    d = (xc - xr).tocsr()
    res = minimize(
        bt_objective,
        np.zeros(d.shape[1]),
        args=(d[tr], None, l2),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": max_iter},
    )
    return np.asarray(d @ res.x).ravel()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--inner", type=int, default=3, help="inner folds for choosing l2")
    ap.add_argument(
        "--word-tokenizer",
        choices=sorted(WORD_TOKENIZERS),
        default=FeatureConfig().word_tokenizer,
        help="the PM's word tokenizer (default: the FeatureConfig default)",
    )
    args = ap.parse_args(argv)

    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import KFold

    root = os.environ.get("HH_RLHF_REAL")
    path = Path(root or "", "harmless-base", "test.jsonl.gz")
    if not root or not path.is_file():
        print(
            "skipped: set HH_RLHF_REAL to the directory holding harmless-base/test.jsonl.gz",
            file=sys.stderr,
        )
        return 0
    t0 = time.perf_counter()

    def say(msg: str) -> None:
        print(f"[{time.perf_counter() - t0:5.0f} s] {msg}", file=sys.stderr, flush=True)

    fits = args.folds * (len(L2_GRID) * args.inner + 1)
    say(f"reading and featurising {path} (then {fits} PM fits in {args.folds} folds)")
    pairs = list(read_pairs(path, subset="harmless-base", split="test"))
    n = len(pairs)
    prompts = [p.prompt for p in pairs]
    chosen = [p.chosen_response for p in pairs]
    rejected = [p.rejected_response for p in pairs]
    config = FeatureConfig(word_tokenizer=args.word_tokenizer)
    f0 = Featurizer(config)
    raw_c, raw_r = f0._raw(prompts, chosen), f0._raw(prompts, rejected)
    outer = list(KFold(args.folds, shuffle=True, random_state=args.seed).split(np.arange(n)))
    results = {"shorter wins": [], "word-bigram TF-IDF BT": [], "hhrlhf PM": []}
    ties = {k: 0 for k in results}
    chosen_l2 = []
    done = 0
    t_folds = time.perf_counter()
    for k, (tr, te) in enumerate(outer):
        fold = f"fold {k + 1}/{args.folds}"
        say(f"{fold}: baselines")
        # shorter wins
        lc = np.array([len(chosen[i].strip()) for i in te])
        lr = np.array([len(rejected[i].strip()) for i in te])
        results["shorter wins"].append(np.mean(lc < lr))
        ties["shorter wins"] += int(np.sum(lc == lr))
        # plain word-bigram TF-IDF logistic BT
        vec = TfidfVectorizer(ngram_range=(1, 2))
        vec.fit([chosen[i] for i in tr] + [rejected[i] for i in tr])
        d = (vec.transform(chosen) - vec.transform(rejected)).tocsr()
        lr_model = LogisticRegression(C=1.0, fit_intercept=False, max_iter=2000)
        lr_model.fit(sp.vstack([d[tr], -d[tr]]), np.r_[np.ones(len(tr)), np.zeros(len(tr))])
        m = lr_model.decision_function(d[te])
        results["word-bigram TF-IDF BT"].append(np.mean(m > 0))
        ties["word-bigram TF-IDF BT"] += int(np.sum(m == 0))
        # our PM, l2 chosen by inner CV on the training pairs only
        inner = list(KFold(args.inner, shuffle=True, random_state=args.seed + 1 + k).split(tr))
        inner_acc = {}
        for l2 in L2_GRID:
            accs = []
            for j, (itr, ite) in enumerate(inner):
                say(
                    f"{fold}: PM fit {done + 1}/{fits} (l2={l2:g}, inner fold {j + 1}/{args.inner})"
                )
                margin = _fit(raw_c, raw_r, tr[itr], l2, config)
                accs.append(np.mean(margin[tr[ite]] > 0))
                done += 1
            inner_acc[l2] = float(np.mean(accs))
        best = max(L2_GRID, key=lambda v: (inner_acc[v], v))
        chosen_l2.append(best)
        say(f"{fold}: PM fit {done + 1}/{fits} (the fold's model, l2={best:g})")
        margin = _fit(raw_c, raw_r, tr, best, config)
        done += 1
        results["hhrlhf PM"].append(np.mean(margin[te] > 0))
        ties["hhrlhf PM"] += int(np.sum(margin[te] == 0))
        print(
            f"fold {k + 1}/{args.folds}: "
            + ", ".join(f"{name} {accs[-1]:.3f}" for name, accs in results.items())
            + f" (l2={best:g})",
            file=sys.stderr,
            flush=True,
        )
        left = (time.perf_counter() - t_folds) / (k + 1) * (args.folds - k - 1)
        if left:
            say(f"about {left:.0f} s left")
    elapsed = time.perf_counter() - t0
    print(
        f"# {args.folds}-fold CV on harmless-base/test ({n:,} pairs), seed {args.seed}, "
        f"word tokenizer {args.word_tokenizer}"
    )
    print(
        f"# machine: {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"{elapsed:.0f}s in all"
    )
    print("| model | mean accuracy | per fold | ties |")
    print("|---|---:|---|---:|")
    for name, accs in results.items():
        folds = ", ".join(f"{a:.3f}" for a in accs)
        print(f"| {name} | {100 * np.mean(accs):.1f}% | {folds} | {ties[name]} |")
    print(f"\nl2 chosen by inner CV per fold: {', '.join(f'{v:g}' for v in chosen_l2)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
