"""Writing the files: deterministic gzipped JSON Lines or JSON arrays, and a whole corpus
laid out like upstream (the bundled sample, or the real row counts for benchmarks)."""

from __future__ import annotations

import gzip
import json
import os
import random
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ...outputs import write_atomic
from ...subsets import PREFERENCE_SUBSETS, RED_TEAM, SUBSETS
from .pairs import Pair, PairMaker, one_pair
from .quirks import QuirkRates
from .red_team import generate_red_team

#: Rows per split at ``scale="sample"``.
SAMPLE_ROWS = {"train": 60, "test": 20}
SAMPLE_RED_TEAM_ROWS = 300


def _gzip_bytes(data: bytes, *, fast: bool) -> bytes:
    """Deterministic gzip: mtime 0, no file name in the header."""
    if fast:
        try:
            from isal import igzip
        except ImportError:  # pragma: no cover - isal is a core dependency
            return gzip.compress(data, compresslevel=6, mtime=0)
        return igzip.compress(data, 2, mtime=0)
    return gzip.compress(data, compresslevel=9, mtime=0)


def _dump(row: object) -> str:
    return json.dumps(row, ensure_ascii=False)


def write_jsonl_gz(
    path: str | os.PathLike[str], rows: Iterable[Mapping[str, Any]], *, fast: bool = False
) -> int:
    """Write ``rows`` as gzipped JSON Lines (one object a line, ``\\n`` after each); returns
    the row count. ``fast`` uses ``isal`` (bigger files, much quicker) instead of zlib level 9."""
    lines = [_dump(r) for r in rows]
    data = ("\n".join(lines) + "\n").encode() if lines else b""
    _write(path, _gzip_bytes(data, fast=fast))
    return len(lines)


def write_json_array_gz(
    path: str | os.PathLike[str], rows: Iterable[Mapping[str, Any]], *, fast: bool = False
) -> int:
    """Write ``rows`` as ONE gzipped JSON array (the red-team file's layout); returns the count."""
    rows = list(rows)
    _write(path, _gzip_bytes(_dump(rows).encode(), fast=fast))
    return len(rows)


def _write(path: str | os.PathLike[str], data: bytes) -> None:
    write_atomic(path, data)


#: Quirks forced into the sample, so each occurs at least once: (subset, split, row, quirk).
_SAMPLE_FORCED = (
    ("harmless-base", "test", 1, "empty_chosen"),
    ("harmless-base", "test", 3, "turns_in_chosen"),
    ("harmless-base", "test", 5, "turns_in_rejected"),
    ("harmless-base", "test", 7, "assistant_in_response"),
    ("harmless-base", "test", 9, "double_human"),
    ("harmless-base", "test", 11, "double_assistant"),
    ("harmless-base", "test", 12, "inline_label"),
    ("harmless-base", "test", 13, "identical"),
    ("harmless-base", "test", 14, "diverge_early"),
    ("harmless-base", "test", 15, "duplicate"),
    ("harmless-base", "test", 16, "shared_start"),
    ("harmless-base", "test", 17, "unicode"),
    ("harmless-base", "test", 18, "preamble"),
    ("helpful-base", "test", 2, "turns_in_rejected"),
    ("helpful-base", "test", 4, "inline_label"),
    ("helpful-base", "test", 6, "shared_start"),
    ("helpful-base", "test", 8, "unicode"),
    ("helpful-base", "train", 10, "empty_chosen"),
    ("helpful-online", "train", 5, "turns_in_chosen"),
    ("helpful-online", "train", 20, "duplicate"),
    ("helpful-online", "test", 3, "unicode"),
    ("helpful-rejection-sampled", "train", 7, "diverge_early"),
    ("helpful-rejection-sampled", "train", 11, "double_assistant"),
    ("helpful-rejection-sampled", "train", 30, "identical"),
    ("helpful-rejection-sampled", "test", 4, "shared_start"),
)


def _sample_pairs(subset: str, split: str, n: int, seed: int) -> list[Pair]:
    rng = random.Random(f"hhrlhf-synth/corpus/{seed}/{subset}/{split}")
    maker = PairMaker(rng, subset)
    rates = QuirkRates()
    forced = {row: q for s, sp, row, q in _SAMPLE_FORCED if s == subset and sp == split}
    recent: list[Pair] = []
    return [one_pair(rng, maker, rates, recent, forced.get(i)) for i in range(n)]


def _full_pairs(subset: str, split: str, n: int, seed: int) -> Iterator[Pair]:
    rng = random.Random(f"hhrlhf-synth/corpus/{seed}/{subset}/{split}")
    maker = PairMaker(rng, subset)
    rates = QuirkRates()
    recent: list[Pair] = []
    for _ in range(n):
        yield one_pair(rng, maker, rates, recent)


def write_corpus(
    root: str | os.PathLike[str], *, scale: str = "sample", seed: int = 0
) -> dict[str, int]:
    """Write a synthetic corpus laid out exactly like upstream under ``root``.

    ``<root>/<subset>/{train,test}.jsonl.gz`` for the four preference subsets and
    ``<root>/red-team-attempts/red_team_attempts.jsonl.gz`` (one JSON array).
    ``scale="sample"``: 60 train / 20 test pairs per subset and 300 attempts, every quirk
    forced in at least once, zlib level 9. ``scale="full"``: the real row counts from
    :data:`hhrlhf.subsets.SUBSETS`, compressed with ``isal``. Returns rows per file path.
    """
    if scale not in ("sample", "full"):
        raise ValueError(f"scale must be 'sample' or 'full', got {scale!r}")
    root = Path(root)
    full = scale == "full"
    written: dict[str, int] = {}
    rows: Iterable[Mapping[str, Any]]
    for name in PREFERENCE_SUBSETS:
        for spec in SUBSETS[name].files:
            if full:
                rows = _full_pairs(name, spec.split, spec.rows, seed)
            else:
                rows = _sample_pairs(name, spec.split, SAMPLE_ROWS[spec.split], seed)
            written[spec.path] = write_jsonl_gz(root / spec.path, rows, fast=full)
    spec = SUBSETS[RED_TEAM].files[0]
    n = spec.rows if full else SAMPLE_RED_TEAM_ROWS
    written[spec.path] = write_json_array_gz(
        root / spec.path, generate_red_team(n, seed=seed), fast=full
    )
    return written
