"""``dpo``: prompt and responses split exactly where the DPO reference code splits them."""

from __future__ import annotations

from typing import Any

from ..records import PreferencePair
from .base import Format, require_key

__all__ = ["DpoFormat"]


class DpoFormat(Format):
    """``{"prompt", "chosen", "rejected"}``: the prompt ends with ``"\\n\\nAssistant:"`` and each
    response keeps its leading space, so ``prompt + chosen`` is the upstream chosen string.

    The split point is the pair's turn-level alignment (:attr:`PreferencePair.prompt_end`),
    never a right-most split of one side.
    """

    name = "dpo"
    description = 'exact {"prompt", "chosen", "rejected"} strings; prompt + chosen == upstream'
    exact = True
    normalisation = "none"

    def row(self, pair: PreferencePair) -> dict[str, Any]:
        return {
            "prompt": pair.prompt,
            "chosen": pair.chosen_response,
            "rejected": pair.rejected_response,
        }

    def read(self, row: dict[str, Any]) -> PreferencePair:
        prompt = require_key(row, "prompt", str)
        return self._pair(
            row,
            prompt + require_key(row, "chosen", str),
            prompt + require_key(row, "rejected", str),
        )
