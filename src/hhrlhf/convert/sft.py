"""``sft``: the chosen conversation as ``{"messages": [...]}`` for supervised fine-tuning."""

from __future__ import annotations

from typing import Any

from ..records import PreferencePair
from ..transcript import Dialogue
from .base import Format, messages_of

__all__ = ["SftFormat"]


class SftFormat(Format):
    """``{"messages": [...]}`` from the chosen side; the rejected response is not exported.

    It reads back into a :class:`~hhrlhf.transcript.Dialogue` (one conversation, not a pair).
    """

    name = "sft"
    kind = "conversation"
    description = 'the chosen conversation as {"messages": [...]} (SFT)'

    def row(self, pair: PreferencePair) -> dict[str, Any]:
        return {"messages": messages_of(pair.chosen)}

    def read(self, row: dict[str, Any]) -> Dialogue:
        return Dialogue.from_messages(self._messages(row, "messages"))
