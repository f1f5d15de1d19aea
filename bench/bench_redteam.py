"""Benchmark: the red-team report on the full-scale synthetic file (38,961 attempts).

Usage::

    python bench/make_corpus.py --out bench/corpus        # once
    python bench/bench_redteam.py [--file PATH] [--repeats 3]

Target: the whole analysis (read, statistics, clustering, plots, report.html/json) in under
30 s on two cores. Measures the end-to-end command in a fresh process (imports included),
each phase in-process, and two alternatives in the same run: k-means with the default OpenMP
threads vs one thread (why the report pins one), and our pure-Python Spearman vs
``scipy.stats.spearmanr`` when scipy is installed (same answer, and what it costs).
Prints a Markdown report to stdout.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT = Path(__file__).parent / "corpus" / "red-team-attempts" / "red_team_attempts.jsonl.gz"


def timed(fn, repeats: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), result


def end_to_end(path: Path, repeats: int) -> list[float]:
    hh = Path(sys.executable).with_name("hh")
    times = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as out:
            t = time.perf_counter()
            subprocess.run(
                [str(hh), "redteam", "report", "--data", str(path), "--out", out],
                check=True,
                capture_output=True,
            )
            times.append(time.perf_counter() - t)
    return times


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, default=DEFAULT, help="red-team file to analyse")
    parser.add_argument("--repeats", type=int, default=3, help="runs per measurement (median)")
    args = parser.parse_args(argv)
    if not args.file.exists():
        print(
            f"{args.file} is missing: run python bench/make_corpus.py --out bench/corpus",
            file=sys.stderr,
        )
        return 2

    from threadpoolctl import threadpool_limits

    from hhrlhf.dataset import iter_attempts
    from hhrlhf.redteam import stats as st
    from hhrlhf.redteam.plots import figure_png
    from hhrlhf.redteam.report import compute_report, draw_figures, render_html
    from hhrlhf.redteam.themes import cluster_texts

    e2e = end_to_end(args.file, args.repeats)

    t_read, attempts = timed(lambda: list(iter_attempts(data=args.file)), args.repeats)
    texts = [a.task_description for a in attempts]
    t_themes, _ = timed(lambda: cluster_texts(texts), args.repeats)
    t_compute, report = timed(lambda: compute_report(attempts), args.repeats)
    t_draw, figs = timed(lambda: draw_figures(report, attempts), args.repeats)
    t_png, pngs = timed(lambda: {k: figure_png(v) for k, v in figs.items()}, args.repeats)
    t_html, page = timed(lambda: render_html(report, pngs), args.repeats)

    # alternative 1: k-means threads (the selection fits on 3,000 documents, as the report does)
    from sklearn.cluster import KMeans
    from sklearn.feature_extraction.text import TfidfVectorizer

    x = TfidfVectorizer(
        stop_words="english", sublinear_tf=True, min_df=2, max_df=0.5
    ).fit_transform(texts[:3000])

    def fits():
        for k in range(2, 11):
            KMeans(n_clusters=k, n_init=3, random_state=0).fit(x)

    t_fit_default, _ = timed(fits, args.repeats)
    with threadpool_limits(1):
        t_fit_one, _ = timed(fits, args.repeats)

    # alternative 2: Spearman
    pairs = [(a.rating, a.min_harmlessness_score_transcript) for a in attempts]
    xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
    t_ours, rho = timed(lambda: st.spearman(xs, ys), args.repeats)
    try:
        from scipy.stats import spearmanr
    except ImportError:
        t_scipy = rho_scipy = None
    else:
        t_scipy, res = timed(lambda: spearmanr(xs, ys), args.repeats)
        rho_scipy = float(res.statistic)

    print("# Red-team report benchmark\n")
    print(
        f"- machine: {platform.machine()}, {os.cpu_count()} CPUs visible, "
        f"Python {platform.python_version()}, {platform.system()}"
    )
    print(f"- file: `{args.file}` ({args.file.stat().st_size:,} bytes, {len(attempts):,} attempts)")
    print(
        f"- command: `python bench/bench_redteam.py --repeats {args.repeats}` "
        f"(medians of {args.repeats} runs)\n"
    )
    print("| step | seconds |")
    print("|---|---|")
    print(
        f"| **`hh redteam report` end to end, fresh process** | **{statistics.median(e2e):.2f}**"
        f" (runs: {', '.join(f'{t:.2f}' for t in e2e)}) |"
    )
    print(f"| read 38,961 attempts | {t_read:.2f} |")
    print(
        f"| attack themes alone (TF-IDF, k = 2..10 on 3,000, final fit on all) | {t_themes:.2f} |"
    )
    print(
        f"| compute_report (all statistics, themes included; 2 x 12 cells bootstrapped) | "
        f"{t_compute:.2f} |"
    )
    print(f"| draw_figures (13 figures) | {t_draw:.2f} |")
    print(f"| PNG encoding | {t_png:.2f} |")
    print(f"| render_html ({len(page):,} characters) | {t_html:.3f} |")
    print("\nAlternatives measured in the same run:\n")
    print("| comparison | seconds | ratio |")
    print("|---|---|---|")
    print(
        f"| k-means selection fits (k = 2..10), default OpenMP threads | {t_fit_default:.2f} | "
        f"{t_fit_default / t_fit_one:.1f}x slower |"
    )
    print(f"| same, one thread (what the report uses) | {t_fit_one:.2f} | 1.0 |")
    print(
        f"| Spearman, ours (pure Python, average ranks) | {t_ours:.3f} | "
        + (f"{t_ours / t_scipy:.1f}x scipy |" if t_scipy else "– |")
    )
    if t_scipy:
        print(f"| Spearman, scipy.stats.spearmanr | {t_scipy:.3f} | 1.0 |")
        print(
            f"\nrho ours = {rho:.6f}, scipy = {rho_scipy:.6f} (same to {abs(rho - rho_scipy):.1e})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
