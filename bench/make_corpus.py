"""Write the full-scale synthetic corpus (the real row counts) for benchmarks.

Usage: ``python bench/make_corpus.py --out bench/corpus [--seed 0]``. The layout is
upstream's: ``<out>/<subset>/{train,test}.jsonl.gz`` and
``<out>/red-team-attempts/red_team_attempts.jsonl.gz`` (one JSON array). The text is
benign and written by the project (see ``hhrlhf.testing.synth``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from hhrlhf.testing.synth import write_corpus


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench/corpus"), help="output folder")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--scale", choices=("full", "sample"), default="full", help="corpus size (default full)"
    )
    args = parser.parse_args(argv)
    start = time.perf_counter()
    written = write_corpus(args.out, scale=args.scale, seed=args.seed)
    elapsed = time.perf_counter() - start
    total = 0
    for path, rows in written.items():
        size = (args.out / path).stat().st_size
        total += size
        print(f"{path}\t{rows}\t{size}")
    print(
        f"wrote {sum(written.values()):,} rows, {total:,} bytes to {args.out} in {elapsed:.1f} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
