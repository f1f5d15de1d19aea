"""What every backend's text goes through: :func:`finalize` cuts any speaker marker the model
wrote and strips the ends; :class:`BackendError` is a backend's failure. Shared by
:mod:`.backends` and :mod:`.rerank` (which builds on the other backends)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import BackendError
from ..transcript import find_marker

__all__ = [
    "SPEAKER_MARKERS",
    "SIZE_CUT",
    "TIME_CUT",
    "STOP_CUT",
    "BackendError",
    "Finished",
    "finalize",
    "cut_reason",
]

SPEAKER_MARKERS = ("\n\nHuman:", "\n\nAssistant:")
#: the finish reason stored for a reply cut at ``max_response_chars``
SIZE_CUT = "max_response_chars"
#: the finish reason stored for a reply cut at ``max_response_seconds``
TIME_CUT = "max_response_seconds"
#: the finish reason stored for a reply the annotator stopped (its text so far kept)
STOP_CUT = "stopped"
#: what the page is told of each short cut (:func:`cut_reason`)
_SHORT_CUTS = {SIZE_CUT: "size", TIME_CUT: "time", STOP_CUT: "stopped"}


@dataclass(frozen=True)
class Finished:
    text: str
    raw_text: str
    cut: bool
    finish_reason: str | None


def finalize(
    raw: str,
    finish_reason: str | None = None,
    *,
    oversize: bool = False,
    cut_as: str | None = None,
) -> Finished:
    """Cut at the first speaker marker (recording the cut) and strip surrounding whitespace.

    A marker is found under any line-end convention (``"\\r\\n\\r\\nHuman:"``,
    ``"\\u2028\\u2028Human:"``...: :data:`hhrlhf.transcript.LOOSE_MARKER_RE`), so no consumer's
    normalisation of the exported line finds a turn the model invented.

    ``oversize``: ``raw`` was stopped at ``max_response_chars``: the reply is ``cut`` too, with
    the finish reason :data:`SIZE_CUT` (unless a speaker marker came first). ``cut_as``: ``raw``
    was cut short another way (:data:`TIME_CUT`, :data:`STOP_CUT`): likewise, that reason.
    """
    if oversize:
        cut_as = SIZE_CUT
    found = find_marker(raw)
    cut_at = -1 if found is None else found.start()
    text = raw if cut_at < 0 else raw[:cut_at]
    if cut_as and cut_at < 0:
        finish_reason = cut_as
    # only the ends are normalised: inner blank lines are the model's own
    return Finished(text.strip(), raw, cut_at >= 0 or bool(cut_as), finish_reason)


def cut_reason(cut: bool, finish_reason: str | None) -> str | None:
    """Why a stored reply was cut: ``"size"`` (``max_response_chars``), ``"time"``
    (``max_response_seconds``), ``"stopped"`` (the annotator's Stop), ``"speaker"`` (a speaker
    marker), or None (not cut). The page says which."""
    if not cut:
        return None
    return _SHORT_CUTS.get(finish_reason or "", "speaker")
