"""Text from the data, made safe and readable for a terminal.

Transcripts are data, not terminal commands: :func:`printable` escapes every control character
(C0 except newline and tab, DEL, and C1) as a visible ``\\xNN`` escape, the way Python's
``repr`` spells it, so ``ESC ] 0 ; title BEL`` prints as the text ``\\x1b]0;title\\x07`` and
never retitles the window or clears the screen. Every human-readable output of the ``hh``
command goes through it (``hh show``, ``hh redteam query``, every table); JSON output needs no
help, as JSON escapes control characters itself.

:func:`wrap` fills a paragraph like :func:`textwrap.wrap` (same lines on ordinary text) but in
time linear in the text: ``textwrap`` copies the rest of an over-long word once per output
line, which is quadratic on a response of megabytes without a space.
"""

from __future__ import annotations

import re
import textwrap

__all__ = ["printable", "wrap", "wrap_paragraphs"]

_CONTROL = [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)]
_ESCAPES = {c: f"\\x{c:02x}" for c in _CONTROL}
_TABLE_KEEP = {c: _ESCAPES[c] for c in _CONTROL if c not in (0x09, 0x0A)}
_CONTROL_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_ANY_CONTROL_RE = re.compile("[\x00-\x1f\x7f-\x9f]")


def printable(text: str, *, keep_newlines: bool = True) -> str:
    """``text`` with its control characters escaped as visible ``\\xNN`` text.

    Escaped: C0 controls (U+0000-U+001F) except newline and tab, DEL (U+007F) and C1 controls
    (U+0080-U+009F). With ``keep_newlines=False`` (table cells) newline and tab are escaped too.
    Text without control characters is returned unchanged (the same object).
    """
    if keep_newlines:
        if _CONTROL_RE.search(text) is None:
            return text
        return text.translate(_TABLE_KEEP)
    if _ANY_CONTROL_RE.search(text) is None:
        return text
    return text.translate(_ESCAPES)


_SPACES = re.compile("( +)")
_ANY_SPACE = re.compile(r"\s")
# the whitespace textwrap expands and collapses (its private ``_whitespace``)
_WHITESPACE_TRANS = {ord(c): " " for c in "\t\n\x0b\x0c\r "}
_OTHER_WHITESPACE = re.compile("[\t\n\x0b\x0c\r]")
_SPLITTER = textwrap.TextWrapper()


def _chunks(text: str) -> list[str]:
    """``textwrap``'s chunks (words, hyphen parts, runs of space) in linear time.

    ``textwrap`` splits the whole text with one regular expression; whitespace always
    separates its chunks and its look-behinds never cross a space, so splitting on whitespace
    first and running the expression only on words holding a hyphen gives the same chunks.
    """
    if _OTHER_WHITESPACE.search(text) is not None:
        text = text.expandtabs(8).translate(_WHITESPACE_TRANS)
    out: list[str] = []
    for part in _SPACES.split(text):
        if not part:
            continue
        if "-" in part and part[0] != " ":
            out.extend(c for c in _SPLITTER.wordsep_re.split(part) if c)
        else:
            out.append(part)
    return out


def wrap(
    text: str, width: int = 70, *, initial_indent: str = "", subsequent_indent: str = ""
) -> list[str]:
    """The lines :func:`textwrap.wrap` gives with these arguments (its other options at their
    defaults), in time linear in ``len(text)``."""
    if width <= 0:
        raise ValueError(f"invalid width {width!r} (must be > 0)")
    chunks = _chunks(text)
    chunks.reverse()
    off = 0  # how much of chunks[-1] (an over-long word) is already on earlier lines
    rest_blank = 0  # chunks[-1][off:] is blank once off reaches this
    plain = False  # chunks[-1] (when off > 0) holds no hyphen and no whitespace at all
    lines: list[str] = []
    while chunks:
        cur: list[str] = []
        cur_len = 0
        indent = subsequent_indent if lines else initial_indent
        room = width - len(indent)
        if lines and (off >= rest_blank if off else chunks[-1].strip() == ""):
            del chunks[-1]
            off = 0
        if off and plain and room >= 1 and len(chunks[-1]) - off > room:
            # the middle of a long plain word: full lines of `room` characters, as below
            chunk = chunks[-1]
            full = (len(chunk) - off - 1) // room
            lines.extend(
                [indent + chunk[k : k + room] for k in range(off, off + full * room, room)]
            )
            off += full * room
        while chunks:
            n = len(chunks[-1]) - off
            if cur_len + n > room:
                break
            cur.append(chunks.pop()[off:] if off else chunks.pop())
            off = 0
            cur_len += n
        if chunks and len(chunks[-1]) - off > room:
            # textwrap's _handle_long_word, taking a slice instead of copying the rest
            space_left = 1 if room < 1 else room - cur_len
            chunk = chunks[-1]
            if off == 0:
                rest_blank = len(chunk.rstrip())
                plain = "-" not in chunk and _ANY_SPACE.search(chunk) is None
            end = space_left
            hyphen = chunk.rfind("-", off, off + space_left) - off
            if hyphen > 0 and chunk[off : off + hyphen].strip("-"):
                end = hyphen + 1
            cur.append(chunk[off : off + end])
            off += end
            if off == len(chunk):
                chunks.pop()
                off = 0
        if cur and cur[-1].strip() == "":
            del cur[-1]
        if cur:
            lines.append(indent + "".join(cur))
    return lines


def wrap_paragraphs(text: str, width: int, indent: str) -> str:
    """Each line of ``text`` wrapped to ``width`` with ``indent``; an empty line stays (indented)."""
    out: list[str] = []
    for para in text.split("\n"):
        out.extend(wrap(para, width, initial_indent=indent, subsequent_indent=indent) or [indent])
    return "\n".join(out)
