"""Text from the data, made safe and readable for a terminal.

Transcripts are data, not terminal commands: :func:`printable` escapes every control character
(C0 except newline and tab, DEL, and C1) as a visible ``\\xNN`` escape, the way Python's
``repr`` spells it, so ``ESC ] 0 ; title BEL`` prints as the text ``\\x1b]0;title\\x07`` and
never retitles the window or clears the screen. It escapes the invisible format characters as
``\\uNNNN`` too (:data:`INVISIBLE`: bidi embeddings, overrides and isolates, which make text
display in another order than it reads, and zero-width characters, which hide inside words),
so what a terminal shows is what the data holds. Every human-readable output of the ``hh``
command goes through it (``hh show``, ``hh redteam query``, every table).

JSON escapes only C0 controls, so :func:`json_safe` escapes the rest (DEL, C1 and
:data:`INVISIBLE`) in encoded JSON as ``\\uNNNN``: the decoded values are the same strings,
and the printed JSON shows no invisible or terminal-controlling character (``--json`` output).

:func:`wrap` fills a paragraph like :func:`textwrap.wrap` (same lines on ordinary text) but in
time linear in the text: ``textwrap`` copies the rest of an over-long word once per output
line, which is quadratic on a response of megabytes without a space.
"""

from __future__ import annotations

import re
import textwrap

__all__ = ["INVISIBLE", "printable", "json_safe", "wrap", "wrap_paragraphs"]

#: Invisible format characters that change how text displays or hide inside it: the bidi
#: marks, embeddings, overrides and isolates (U+061C, U+200E-U+200F, U+202A-U+202E,
#: U+2066-U+2069) and the zero-width characters (U+200B-U+200D, U+2060, U+FEFF).
INVISIBLE = frozenset(
    [0x061C, *range(0x200B, 0x2010), *range(0x202A, 0x202F), 0x2060, *range(0x2066, 0x206A)]
    + [0xFEFF]
)
_CONTROL = [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)]
_ESCAPES = {c: f"\\x{c:02x}" for c in _CONTROL} | {c: f"\\u{c:04x}" for c in INVISIBLE}
_TABLE_KEEP = {c: e for c, e in _ESCAPES.items() if c not in (0x09, 0x0A)}
_INVISIBLE_CLASS = "".join(f"\\u{c:04x}" for c in sorted(INVISIBLE))
_CONTROL_RE = re.compile(f"[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f{_INVISIBLE_CLASS}]")
_ANY_CONTROL_RE = re.compile(f"[\\x00-\\x1f\\x7f-\\x9f{_INVISIBLE_CLASS}]")
#: what JSON leaves as it is and a terminal should not see: DEL, C1 and the invisible ones
_JSON_UNSAFE_RE = re.compile(f"[\\x7f-\\x9f{_INVISIBLE_CLASS}]")


def printable(text: str, *, keep_newlines: bool = True) -> str:
    """``text`` with its control characters escaped as visible ``\\xNN`` text.

    Escaped: C0 controls (U+0000-U+001F) except newline and tab, DEL (U+007F) and C1 controls
    (U+0080-U+009F) as ``\\xNN``; the :data:`INVISIBLE` characters (bidi controls, zero-width
    characters) as ``\\uNNNN``. With ``keep_newlines=False`` (table cells) newline and tab are
    escaped too. Text without such characters is returned unchanged (the same object).

    >>> printable("abc\\u202edcba\\u200b!")
    'abc\\\\u202edcba\\\\u200b!'
    """
    if keep_newlines:
        if _CONTROL_RE.search(text) is None:
            return text
        return text.translate(_TABLE_KEEP)
    if _ANY_CONTROL_RE.search(text) is None:
        return text
    return text.translate(_ESCAPES)


def json_safe(encoded: str) -> str:
    """Encoded JSON with DEL, C1 controls and :data:`INVISIBLE` characters written as
    ``\\uNNNN`` escapes: the same JSON values, nothing invisible or terminal-controlling.

    Those characters occur only inside strings in valid JSON, where the escape means the
    character itself. JSON without them is returned unchanged (the same object).

    >>> json_safe('{"a": "x\\u202ey"}')
    '{"a": "x\\\\u202ey"}'
    """
    if _JSON_UNSAFE_RE.search(encoded) is None:
        return encoded
    return _JSON_UNSAFE_RE.sub(lambda m: f"\\u{ord(m.group()):04x}", encoded)


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
