"""Benchmark ``hh show`` against ``hh stats`` on one pair whose response is 50 MB without a space.

Usage::

    python bench/bench_show.py [--mb 50] [--out bench/out/show]

Writes ``harmless-base/train.jsonl`` under ``--out`` holding a single pair whose chosen
response is ``--mb`` megabytes of generated letters with no whitespace (benign text), then
times ``hh show harmless-base --index 0`` (stdout to /dev/null) and ``hh stats
harmless-base --split train``, each in a fresh process, best of ``--repeats``. Target (issue 9):
show takes at most 3x what stats takes, i.e. wrapping is linear and costs about what loading
costs (``textwrap`` was quadratic: 8 MB took 7.8 s).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def write_corpus(out: Path, mb: int) -> Path:
    target = out / "harmless-base" / "train.jsonl"
    target.parent.mkdir(parents=True, exist_ok=True)
    unit = "abcdefghijklmnopqrstuvwxyz0123456789"
    word = (unit * (mb * 1_000_000 // len(unit) + 1))[: mb * 1_000_000]
    prompt = "\n\nHuman: Please write one very long word.\n\nAssistant: "
    pair = {"chosen": prompt + word, "rejected": prompt + "No."}
    target.write_text(json.dumps(pair) + "\n", encoding="utf-8")
    return target


def timed(args: list[str], repeats: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(HERE.parent / "src")}
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "hhrlhf", *args],
            check=True,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(HERE / "out" / "show"))
    a = ap.parse_args()
    out = Path(a.out)
    path = write_corpus(out, a.mb)
    show = timed(["show", "harmless-base", "--index", "0", "--data", str(out)], a.repeats)
    stats = timed(["stats", "harmless-base", "--split", "train", "--data", str(out)], a.repeats)
    result = {
        "file": str(path.relative_to(out)),
        "file_mb": round(path.stat().st_size / 1e6, 1),
        "show_s": round(show, 3),
        "stats_s": round(stats, 3),
        "ratio": round(show / stats, 2),
        "target_ratio": 3.0,
        "met": show <= 3 * stats,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
