"""``trl-conversational``: TRL's conversational preference format with an explicit prompt."""

from __future__ import annotations

from typing import Any

from ..records import PreferencePair
from .base import Format, prompt_messages, render_messages, response_messages

__all__ = ["TrlConversationalFormat"]


class TrlConversationalFormat(Format):
    """``{"prompt": [messages], "chosen": [assistant message], "rejected": [assistant message]}``.

    ``prompt`` holds every turn before the final response, alternating or not; ``chosen`` and
    ``rejected`` are one-element lists (a pair without a shared prompt keeps its full
    conversations there instead, so no turn is lost).
    """

    name = "trl-conversational"
    description = "TRL conversational preference: prompt messages + one assistant message each"

    def row(self, pair: PreferencePair) -> dict[str, Any]:
        return {
            "prompt": prompt_messages(pair),
            "chosen": response_messages(pair, "chosen"),
            "rejected": response_messages(pair, "rejected"),
        }

    def read(self, row: dict[str, Any]) -> PreferencePair:
        prompt = self._messages(row, "prompt")
        return self._pair(
            row,
            render_messages(prompt + self._messages(row, "chosen", response=True)),
            render_messages(prompt + self._messages(row, "rejected", response=True)),
        )
