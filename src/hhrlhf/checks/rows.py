"""Raw-row classes: a line that is not JSON, not an object, or lacks string fields."""

from __future__ import annotations

from collections.abc import Iterable

from ..reader import type_name
from .base import Check, CheckClass

__all__ = ["PairShape"]


class PairShape(Check):
    """A preference row must be a JSON object with string ``chosen`` and ``rejected``.

    ``bad_json`` comes from the lenient reader (the line does not decode); this check adds
    non-object rows to it. A damaged gzip stream is not a row: the reader raises
    :class:`~hhrlhf.errors.TruncatedStreamError` and the audit stops.
    """

    name = "pair_shape"
    looks_at = "row"
    classes = (
        CheckClass("bad_json", "error", "the line is not valid JSON, or not a JSON object"),
        CheckClass("missing_field", "error", "'chosen' or 'rejected' is missing"),
        CheckClass("not_a_string", "error", "'chosen' or 'rejected' is not a string"),
    )

    def check(self, obj: object) -> Iterable[tuple[str, str]]:
        if type(obj) is not dict:
            return [("bad_json", f"expected a JSON object, got {type_name(obj)}")]
        out: list[tuple[str, str]] = []
        missing = [k for k in ("chosen", "rejected") if k not in obj]
        if missing:
            out.append(("missing_field", "missing " + ", ".join(map(repr, missing))))
        wrong = [k for k in ("chosen", "rejected") if k in obj and type(obj[k]) is not str]
        if wrong:
            out.append(("not_a_string", ", ".join(f"{k!r} is {type_name(obj[k])}" for k in wrong)))
        return out
