"""Write the full-scale benchmark corpus (the real row counts and upstream layout).

Usage::

    python bench/make_corpus.py --out bench/corpus --from PATH/harmless-base/test.jsonl.gz
    python bench/make_corpus.py --out bench/corpus            # synthetic text (no real file)

The layout is upstream's: ``<out>/<subset>/{train,test}.jsonl.gz`` and
``<out>/red-team-attempts/red_team_attempts.jsonl.gz`` (one JSON array).

With ``--from`` (a real preference file, e.g. upstream's ``harmless-base/test.jsonl.gz``)
every preference pair is resampled from the real rows: each new pair takes the turn
structure of one real pair (how many turns the two transcripts share, which speakers, any
preamble before the first marker) with every shared turn replaced by a real turn of the
same speaker drawn from the whole file, and the two diverging tails (the responses, with any
speaker labels a model wrote into them) of another real pair. So lengths, markers, quirks
and the Unicode of the real text keep their real distribution, while no real row is
repeated whole. The red-team file is always synthetic (no real one is needed for the load
benchmarks). Without ``--from`` the text is the project's synthetic generator
(:mod:`hhrlhf.testing.synth`), nearly pure ASCII. A ``CORPUS.txt`` in ``<out>`` says which
was written. The corpus is generated, gitignored and never committed.
"""

from __future__ import annotations

import argparse
import gzip
import random
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import orjson

from hhrlhf.subsets import PREFERENCE_SUBSETS, RED_TEAM, SUBSETS
from hhrlhf.testing.synth import (
    generate_red_team,
    write_corpus,
    write_json_array_gz,
    write_jsonl_gz,
)

#: A speaker marker starts a segment; the text before the first one is a preamble.
_SEGMENT = re.compile(r"(?=\n\n(?:Human|Assistant):)")


def _segments(text: str) -> list[str]:
    """``text`` cut before each ``"\\n\\nHuman:"`` / ``"\\n\\nAssistant:"`` marker; joined
    back they give ``text`` exactly. The first segment may be a preamble (or empty)."""
    return _SEGMENT.split(text)


def _kind(segment: str) -> str:
    if segment.startswith("\n\nHuman:"):
        return "H"
    if segment.startswith("\n\nAssistant:"):
        return "A"
    return "P"  # preamble: text before the first marker


class Resampler:
    """New pairs made of real turns (see the module docstring)."""

    def __init__(self, rows: list[tuple[str, str]], seed: int = 0):
        self.rng = random.Random(f"hhrlhf-bench/resample/{seed}")
        #: each pair's shared segments as (kind, preamble): a preamble is kept as it is
        self.templates: list[list[tuple[str, str]]] = []
        self.tails: dict[str, list[tuple[list[str], list[str]]]] = {}
        self.pool: dict[str, list[str]] = {"H": [], "A": []}
        for chosen, rejected in rows:
            c, r = _segments(chosen), _segments(rejected)
            k = 0
            while k < min(len(c), len(r)) and c[k] == r[k]:
                k += 1
            if k == len(c) == len(r):  # identical transcripts: keep them whole, as one tail
                k = 0
            shared = c[:k]
            kinds = [_kind(s) for s in shared]
            self.templates.append(
                [(kind, s if kind == "P" else "") for kind, s in zip(kinds, shared, strict=True)]
            )
            for kind, seg in zip(kinds, shared, strict=True):
                if kind != "P":
                    self.pool[kind].append(seg)
            # what the tails follow: the kind of the last shared segment ("" at the start)
            self.tails.setdefault(kinds[-1] if kinds else "", []).append((c[k:], r[k:]))

    def pair(self) -> dict[str, str]:
        rng = self.rng
        template = rng.choice(self.templates)
        shared = [keep if kind == "P" else rng.choice(self.pool[kind]) for kind, keep in template]
        after = template[-1][0] if template else ""
        tails = self.tails.get(after) or [t for ts in self.tails.values() for t in ts]
        c_tail, r_tail = rng.choice(tails)
        prefix = "".join(shared)
        return {"chosen": prefix + "".join(c_tail), "rejected": prefix + "".join(r_tail)}

    def pairs(self, n: int) -> Iterator[dict[str, str]]:
        for _ in range(n):
            yield self.pair()


def read_rows(path: Path) -> list[tuple[str, str]]:
    opener = gzip.open if path.suffix == ".gz" else open
    rows = []
    with opener(path, "rb") as f:
        for line in f:
            if line.strip():
                obj = orjson.loads(line)
                rows.append((obj["chosen"], obj["rejected"]))
    if not rows:
        sys.exit(f"error: {path}: no pairs to resample")
    return rows


def write_resampled(root: Path, source: Path, *, seed: int = 0) -> dict[str, int]:
    """The full-scale corpus resampled from the real pairs of ``source``."""
    sampler = Resampler(read_rows(source), seed)
    written: dict[str, int] = {}
    for name in PREFERENCE_SUBSETS:
        for spec in SUBSETS[name].files:
            written[spec.path] = write_jsonl_gz(
                root / spec.path, sampler.pairs(spec.rows), fast=True
            )
    spec = SUBSETS[RED_TEAM].files[0]
    written[spec.path] = write_json_array_gz(
        root / spec.path, generate_red_team(spec.rows, seed=seed), fast=True
    )
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench/corpus"), help="output folder")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--from",
        dest="source",
        type=Path,
        help="a real preference file (.jsonl or .jsonl.gz) to resample the pairs from",
    )
    parser.add_argument(
        "--scale", choices=("full", "sample"), default="full", help="corpus size (default full)"
    )
    args = parser.parse_args(argv)
    start = time.perf_counter()
    if args.source is not None:
        if not args.source.is_file():
            print(f"error: {args.source}: no such file", file=sys.stderr)
            return 2
        if args.scale != "full":
            print("error: --from builds the full-scale corpus only", file=sys.stderr)
            return 2
        written = write_resampled(args.out, args.source, seed=args.seed)
        what = f"resampled from the real pairs of {args.source.name} ({args.source})"
    else:
        written = write_corpus(args.out, scale=args.scale, seed=args.seed)
        what = "synthetic (hhrlhf.testing.synth; no real file given with --from)"
    elapsed = time.perf_counter() - start
    (args.out / "CORPUS.txt").write_text(f"text: {what}\nseed: {args.seed}\n", encoding="utf-8")
    total = 0
    for path, rows in written.items():
        size = (args.out / path).stat().st_size
        total += size
        print(f"{path}\t{rows}\t{size}")
    print(
        f"wrote {sum(written.values()):,} rows, {total:,} bytes to {args.out} in {elapsed:.1f} s"
        f" ({what})",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
