"""``trl-standard``: TRL's standard preference format with an explicit prompt, as clean text."""

from __future__ import annotations

from typing import Any

from ..records import PreferencePair
from .base import Format, prompt_messages, require_key, response_messages

__all__ = ["TrlStandardFormat", "render_clean"]

_LABEL = {"user": "Human", "assistant": "Assistant"}


def render_clean(messages: list[dict[str, str]]) -> str:
    """``"Human: a\\n\\nAssistant: b"``: one space after each label, no leading blank line."""
    return "\n\n".join(f"{_LABEL[m['role']]}: {m['content']}" for m in messages)


class TrlStandardFormat(Format):
    """``{"prompt": "Human: ...\\n\\nAssistant:", "chosen": " ...", "rejected": " ..."}``.

    Each turn's text is stripped and rejoined with one space after its label; the prompt
    has no leading ``"\\n\\n"`` and ends with ``"Assistant:"``; responses start with one
    space, so ``prompt + chosen`` reads as one clean conversation. A pair without a shared
    prompt has an empty prompt and whole conversations as responses.
    """

    name = "trl-standard"
    description = 'TRL standard preference: clean-text {"prompt", "chosen", "rejected"}'

    def row(self, pair: PreferencePair) -> dict[str, Any]:
        if pair.prompt_end == 0:
            return {
                "prompt": "",
                "chosen": render_clean(response_messages(pair, "chosen")),
                "rejected": render_clean(response_messages(pair, "rejected")),
            }
        head = render_clean(prompt_messages(pair))
        prompt = (head + "\n\n" if head else "") + "Assistant:"
        return {
            "prompt": prompt,
            "chosen": " " + pair.chosen_response.strip(),
            "rejected": " " + pair.rejected_response.strip(),
        }

    def read(self, row: dict[str, Any]) -> PreferencePair:
        prompt = require_key(row, "prompt", str)
        chosen = require_key(row, "chosen", str)
        rejected = require_key(row, "rejected", str)
        if prompt:
            return self._pair(row, "\n\n" + prompt + chosen, "\n\n" + prompt + rejected)
        return self._pair(
            row, "\n\n" + chosen if chosen else "", "\n\n" + rejected if rejected else ""
        )
