"""``openai``: OpenAI's preference fine-tuning JSONL (the chat ``input`` plus two outputs)."""

from __future__ import annotations

from typing import Any

from ..records import PreferencePair
from .base import Format, prompt_messages, render_messages, require_key, response_messages

__all__ = ["OpenAIFormat"]


class OpenAIFormat(Format):
    """``{"input": {"messages": [...]}, "preferred_output": [...], "non_preferred_output": [...]}``.

    The chat fine-tuning JSONL of OpenAI's preference (DPO) method. Its supervised method
    takes ``{"messages": [...]}``: that is the ``sft`` format. Upload with ``--no-source``,
    since the service expects no other keys.
    """

    name = "openai"
    description = "OpenAI preference fine-tuning JSONL (input messages, preferred/non-preferred)"

    def row(self, pair: PreferencePair) -> dict[str, Any]:
        return {
            "input": {"messages": prompt_messages(pair)},
            "preferred_output": response_messages(pair, "chosen"),
            "non_preferred_output": response_messages(pair, "rejected"),
        }

    def read(self, row: dict[str, Any]) -> PreferencePair:
        prompt = self._messages(require_key(row, "input", dict), "messages")
        return self._pair(
            row,
            render_messages(prompt + self._messages(row, "preferred_output", response=True)),
            render_messages(prompt + self._messages(row, "non_preferred_output", response=True)),
        )
