"""``messages``: full conversations with an implicit (shared) prompt."""

from __future__ import annotations

from typing import Any

from ..records import PreferencePair
from .base import Format, messages_of, render_messages

__all__ = ["MessagesFormat"]


class MessagesFormat(Format):
    """``{"chosen": [messages], "rejected": [messages]}``: the prompt is ``chosen[:-1]``.

    The shape open-instruct, torchtune and RLHFlow read; TRL calls it conversational with an
    implicit prompt.
    """

    name = "messages"
    description = 'full conversations {"chosen": [...], "rejected": [...]} (implicit prompt)'

    def row(self, pair: PreferencePair) -> dict[str, Any]:
        return {"chosen": messages_of(pair.chosen), "rejected": messages_of(pair.rejected)}

    def read(self, row: dict[str, Any]) -> PreferencePair:
        return self._pair(
            row,
            render_messages(self._messages(row, "chosen")),
            render_messages(self._messages(row, "rejected")),
        )
