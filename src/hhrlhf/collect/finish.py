"""What every backend's text goes through: :func:`finalize` cuts any speaker marker the model
wrote and strips the ends; :class:`BackendError` is a backend's failure. Shared by
:mod:`.backends` and :mod:`.rerank` (which builds on the other backends)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import BackendError

__all__ = ["SPEAKER_MARKERS", "BackendError", "Finished", "finalize"]

SPEAKER_MARKERS = ("\n\nHuman:", "\n\nAssistant:")


@dataclass(frozen=True)
class Finished:
    text: str
    raw_text: str
    cut: bool
    finish_reason: str | None


def finalize(raw: str, finish_reason: str | None = None) -> Finished:
    """Cut at the first speaker marker (recording the cut) and strip surrounding whitespace."""
    cut_at = min((i for m in SPEAKER_MARKERS if (i := raw.find(m)) >= 0), default=-1)
    text = raw if cut_at < 0 else raw[:cut_at]
    # only the ends are normalised: inner blank lines are the model's own
    return Finished(text.strip(), raw, cut_at >= 0, finish_reason)
