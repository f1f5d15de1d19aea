"""``redteam``: red-team attempts with clean field names and the transcript as messages."""

from __future__ import annotations

from typing import Any

from ..reader import attempt_from_object
from ..records import RED_TEAM_KEYS, RedTeamAttempt
from .base import Format, messages_of, render_messages

__all__ = ["RedTeamFormat"]

_FIELDS = tuple(k for k in RED_TEAM_KEYS if k != "transcript")


class RedTeamFormat(Format):
    """``{"messages": [...], "min_harmlessness_score_transcript": ..., ...}``.

    The task score is always ``task_description_harmlessness_score`` (the real file's key
    has a typo). Reads back into :class:`~hhrlhf.records.RedTeamAttempt`, its transcript in
    normal form.
    """

    name = "redteam"
    kind = "red-team"
    description = "red-team attempts: clean field names, transcript as messages"

    def row(self, attempt: RedTeamAttempt) -> dict[str, Any]:
        row = {"messages": messages_of(attempt.transcript)}
        for key in _FIELDS:
            row[key] = getattr(attempt, key)
        return row

    def read(self, row: dict[str, Any]) -> RedTeamAttempt:
        obj = dict(row)
        obj["transcript"] = render_messages(self._messages(row, "messages"))
        return attempt_from_object(obj, index=row.get("index"))
