"""Benchmark: ``hh leaderboard --battles`` with many models and few votes each.

Usage::

    python bench/bench_many_models.py [--models 2000] [--votes 600] [--src DIR]

Target (issue 39): the fit costs the model pairs seen, not models squared: 2,000 models in
600 votes (a 52 KB file) rank with the default 1,000 resamples in bounded memory, and more
models than ``MAX_MODELS`` are one ``error:`` line, not a numpy traceback.

Writes a battles file of random pairs (no model in most pairs: most are unlinked in a
resample), runs the command in a fresh process (``--src``: another checkout's ``src``, to
time an older version the same way) and prints its CPU seconds, wall seconds and peak
memory (``getrusage`` of the child). CPU seconds are what to compare on a shared machine.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import orjson


def write(path: Path, models: int, votes: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, models, votes)
    b = (a + rng.integers(1, models, votes)) % models
    with open(path, "wb") as f:
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            row = {
                "model_a": f"model-{x:05d}",
                "model_b": f"model-{y:05d}",
                "winner": ("model_a", "model_b", "tie")[k % 3],
                "tstamp": 1.7e9 + k,
            }
            f.write(orjson.dumps(row) + b"\n")


def run(path: Path, src: str) -> tuple[float, float, int, int]:
    """(CPU s, wall s, peak KB, exit status) of one ``hh collect leaderboard`` (the older
    versions' name too) in a child process."""
    env = {**os.environ, "PYTHONPATH": src}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "hhrlhf",
            "collect",
            "leaderboard",
            "--battles",
            str(path),
            "--json",
        ],
        env=env,
        capture_output=True,
    )
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, after.ru_maxrss, done.returncode


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=2000)
    parser.add_argument("--votes", type=int, default=600)
    parser.add_argument("--src", default=str(Path(__file__).resolve().parents[1] / "src"))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "battles.jsonl"
        write(path, args.models, args.votes)
        cpu, wall, peak, status = run(path, args.src)
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"| {args.models:,} models, {args.votes:,} votes | {cpu:.1f} s CPU | {wall:.1f} s wall "
        f"| {peak / 1024:.0f} MiB peak | exit {status} | load {load} |"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
