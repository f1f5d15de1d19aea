"""Synthetic HH-RLHF: benign text we write ourselves, shaped like the real files.

The real data is offensive by design and is never copied. This module writes cooking,
travel, gardening, coding, pets and homework conversations, and benign "attacks" (asking
for a made-up secret recipe, a rude limerick about a fictional captain, a way to skip the
safety steps of a flat-pack wardrobe), with the shapes, marginals and quirks the real files
have (each listed below):

* :func:`generate_pairs` yields ``{"chosen": str, "rejected": str}`` transcripts with 1 to 18
  human turns, the chosen side longer in about 45% of pairs and, at the rates in
  :class:`QuirkRates`, every quirk class: an empty final response, a response holding
  speaker markers (on either side), non-alternating markers, inline speaker labels,
  identical and duplicate pairs, pairs diverging before the final turn, responses that
  start alike (the trap for character-level common prefixes), unicode and emoji, and a
  preamble before the first marker.
* :func:`generate_red_team` yields red-team attempts with the ten real keys (the real typo
  ``task_descripton_harmlessness_score`` included), the cell counts of the paper's Table 1,
  the rating marginal, per-cell mean scores of its Fig. 1, a heavy-tailed member
  distribution, rare upworkers and rare tags.
* :func:`write_corpus` lays files out exactly like upstream, at ``scale="sample"`` (the
  bundled sample, every quirk forced in at least once) or ``scale="full"`` (the real row
  counts, for benchmarks).

Everything is seeded and deterministic: the same arguments give the same bytes.
"""

from __future__ import annotations

from ...records import RED_TEAM_KEYS_REAL

# imported by callers from here before the package was split
from ...subsets import PREFERENCE_SUBSETS as PREFERENCE_SUBSETS
from .corpus import (
    SAMPLE_RED_TEAM_ROWS,
    SAMPLE_ROWS,
    write_corpus,
    write_json_array_gz,
    write_jsonl_gz,
)
from .pairs import generate_pairs
from .quirks import QUIRKS, QuirkRates
from .red_team import generate_red_team
from .themes import TAG_VOCABULARY

__all__ = [
    "QuirkRates",
    "QUIRKS",
    "generate_pairs",
    "generate_red_team",
    "write_jsonl_gz",
    "write_json_array_gz",
    "write_corpus",
    "SAMPLE_ROWS",
    "SAMPLE_RED_TEAM_ROWS",
    "RED_TEAM_KEYS_REAL",
    "TAG_VOCABULARY",
]
