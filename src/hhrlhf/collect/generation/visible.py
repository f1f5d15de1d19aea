"""What of a response being streamed may be shown: up to a speaker marker, holding back a
partial one (:class:`VisibleText`, fed a delta at a time)."""

from __future__ import annotations

from ...transcript import MARKER_STARTS, find_marker, partial_marker

__all__ = ["VisibleText"]

#: the first characters of the speaker markers (a text holding none holds no marker, whole or begun)
_MARKER_STARTS = MARKER_STARTS


def _visible(raw: str) -> str:
    """What may be shown while streaming: up to a speaker marker, holding back a partial one."""
    found = find_marker(raw)
    if found is not None:
        return raw[: found.start()]
    return raw[: len(raw) - partial_marker(raw)]


class VisibleText:
    """:func:`_visible` of a growing response, fed one delta at a time in linear time.

    Only the held-back tail (a possible partial marker) and the new delta are searched, so a
    long response in small chunks costs what its length does (a whole-text scan per delta
    would be quadratic: minutes of CPU for a megabyte in token-sized chunks).
    """

    def __init__(self) -> None:
        self.pending = ""  # raw text not shown yet: a prefix of a speaker marker
        self.cut = False
        self.started = False  # leading whitespace is dropped, as by ``.lstrip()``

    def feed(self, delta: str) -> str:
        """The text that became visible with ``delta`` ('' when none)."""
        if self.cut:
            return ""
        buf = self.pending + delta
        if not any(first in buf for first in _MARKER_STARTS):
            # no marker and no partial one can be in it (the usual delta: one word)
            out, self.pending = buf, ""
            if not self.started:
                out = out.lstrip()
                self.started = bool(out)
            return out
        found = find_marker(buf)
        if found is not None:
            out, self.pending, self.cut = buf[: found.start()], "", True
        else:
            hold = partial_marker(buf)
            out, self.pending = buf[: len(buf) - hold], buf[len(buf) - hold :]
        if not self.started:
            out = out.lstrip()
            self.started = bool(out)
        return out
