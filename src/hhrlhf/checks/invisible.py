"""Invisible characters: bidi controls, zero-width characters and C1 controls in a pair.

Such a character displays as nothing, or reorders the text around it (a right-to-left
override makes ``report<U+202E>exe.txt`` display as ``reporttxt.exe``), so what a reader
sees is not what a model is trained on. ``hh show`` prints them escaped
(:func:`hhrlhf.text.printable`); this check counts the rows that hold them. None occur in
the real harmless-base test file.
"""

from __future__ import annotations

from collections import Counter

from ..text import INVISIBLE
from .base import Check, CheckClass

__all__ = ["InvisibleCharacters", "invisible_characters"]

_C1 = range(0x80, 0xA0)


def invisible_characters(text: str) -> Counter[str]:
    """How often each invisible character (:data:`hhrlhf.text.INVISIBLE`, and the C1
    controls) occurs in ``text``, keyed ``"U+202E"``."""
    return Counter(f"U+{ord(c):04X}" for c in text if ord(c) in INVISIBLE or ord(c) in _C1)


class InvisibleCharacters(Check):
    """Flags a pair whose chosen or rejected transcript holds an invisible character; the
    detail gives how many, and which."""

    name = "invisible_characters"
    classes = (
        CheckClass(
            "invisible_characters",
            "warning",
            "a transcript holds bidi controls, zero-width characters or C1 controls "
            "(it displays differently than it reads)",
        ),
    )

    def check(self, pair):
        found = invisible_characters(pair.chosen) + invisible_characters(pair.rejected)
        if not found:
            return []
        n = sum(found.values())
        which = ", ".join(f"{k} x{v}" if v > 1 else k for k, v in sorted(found.items()))
        return [("invisible_characters", f"{n} character(s): {which}")]
