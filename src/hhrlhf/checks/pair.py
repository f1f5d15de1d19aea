"""Per-pair classes from the foundation (:data:`hhrlhf.records.PAIR_CLASSES`)."""

from __future__ import annotations

from collections.abc import Iterable

from ..records import PAIR_CLASSES, PreferencePair
from .base import Check, CheckClass

__all__ = ["PairClasses"]

_SEVERITY = {
    "identical_pair": "error",
    "no_prompt": "error",
    "empty_response": "warning",
    "response_contains_turns": "warning",
    "non_alternating": "warning",
    "diverges_before_final_turn": "warning",
    "inline_speaker_label": "info",
}


class PairClasses(Check):
    """The structural classes every loaded pair carries (``PreferencePair.classes``)."""

    name = "pair_classes"
    classes = tuple(CheckClass(n, _SEVERITY.get(n, "warning"), d) for n, d in PAIR_CLASSES.items())

    def check(self, pair: PreferencePair) -> Iterable[tuple[str, str]]:
        return [(c, "") for c in sorted(pair.classes)]
