"""Duplicates inside one file, found by hashing (one pass, no pairwise comparison).

The first occurrence is never flagged; each later one names the row it repeats, so
dropping the flagged rows keeps exactly one copy.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from ..records import PreferencePair
from .base import Check, CheckClass

__all__ = ["DuplicatePairs", "DuplicatePrompts", "digest"]


def digest(*parts: str) -> bytes:
    """A 128-bit digest of strings (length-prefixed, so part boundaries count)."""
    h = hashlib.blake2b(digest_size=16)
    for p in parts:
        b = p.encode("utf-8", "surrogatepass")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.digest()


class DuplicatePairs(Check):
    name = "duplicate_pairs"
    classes = (
        CheckClass(
            "duplicate_pair", "error", "the same chosen and rejected occur earlier in the split"
        ),
    )

    def __init__(self) -> None:
        self.start()

    def start(self) -> None:
        self._seen: dict[bytes, int | None] = {}

    def check(self, pair: PreferencePair) -> Iterable[tuple[str, str]]:
        first = self._seen.setdefault(digest(pair.chosen, pair.rejected), pair.index)
        if first != pair.index:
            return [("duplicate_pair", f"same pair as index {first}")]
        return ()


class DuplicatePrompts(Check):
    name = "duplicate_prompts"
    classes = (
        CheckClass(
            "duplicate_prompt",
            "info",
            "the same prompt occurs earlier in the split (counted, not an error)",
        ),
    )

    def __init__(self) -> None:
        self.start()

    def start(self) -> None:
        self._seen: dict[bytes, int | None] = {}

    def check(self, pair: PreferencePair) -> Iterable[tuple[str, str]]:
        if pair.prompt_end == 0:
            return ()
        first = self._seen.setdefault(digest(pair.prompt), pair.index)
        if first != pair.index:
            return [("duplicate_prompt", f"same prompt as index {first}")]
        return ()
