"""``raw``: ``{"chosen", "rejected"}`` exactly as upstream publishes them."""

from __future__ import annotations

from typing import Any

import orjson

from ..records import PreferencePair
from .base import Format, require_key

__all__ = ["RawFormat"]


class RawFormat(Format):
    """Whole transcripts, untouched (TRL's "preference, implicit prompt", standard text).

    Lines are encoded the way the upstream files are (``json.dumps(..., ensure_ascii=False)``),
    so ``--no-source`` output of a file is byte-identical to the decompressed input.
    """

    name = "raw"
    description = 'upstream {"chosen", "rejected"} transcripts, byte-identical'
    exact = True
    normalisation = "none"

    def row(self, pair: PreferencePair) -> dict[str, Any]:
        return {"chosen": pair.chosen, "rejected": pair.rejected}

    def read(self, row: dict[str, Any]) -> PreferencePair:
        return self._pair(row, require_key(row, "chosen", str), require_key(row, "rejected", str))

    def encode(self, row: dict[str, Any]) -> bytes:
        # json.dumps(row, ensure_ascii=False) spelling (", " and ": "), at orjson's speed
        dumps = orjson.dumps
        return b"{" + b", ".join(dumps(k) + b": " + dumps(v) for k, v in row.items()) + b"}\n"
