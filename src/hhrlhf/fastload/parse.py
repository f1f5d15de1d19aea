"""The fast loader's parsing stage: a JSONL byte stream cut into whole lines a block at a
time (a line longer than a block joined once), each block parsed by the C block parser
(``hhrlhf._jsonl``) where built or decoded with orjson, checked and built into records
through their slot descriptors. Anything the reference reader must decide raises
:class:`Fallback` (see :mod:`hhrlhf.fastload`).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import fields
from itertools import repeat
from operator import itemgetter
from typing import Any

import orjson

from ..file_stream import max_line_bytes
from ..records import PreferencePair, untrack
from ..transcript import prompt_length

try:  # the optional C block parser, built at install time where a compiler is at hand
    from .. import _jsonl as _jsonl  # the name the other stages use
except ImportError:  # pragma: no cover - depends on the install
    _jsonl = None  # type: ignore[assignment]  # tested for None where it is used

__all__ = ["BLOCK", "Fallback", "NATIVE", "parse_jsonl"]

#: Whether the native block parser is used: built, and not turned off with
#: ``HH_RLHF_NATIVE=0`` (results are the same either way; only the speed differs).
NATIVE: bool = _jsonl is not None and os.environ.get("HH_RLHF_NATIVE", "1") != "0"

#: Decompressed bytes parsed at a time: big enough to amortise the per-block work, small
#: enough that the block, its lines and their decoded objects stay in cache.
BLOCK = 1 << 20

_chosen = itemgetter("chosen")
_rejected = itemgetter("rejected")
_loads = orjson.loads
_consume = deque[Any](maxlen=0).extend
_new = object.__new__


class Fallback(Exception):
    """The fast path met something it does not vouch for: use the reference reader."""


# --------------------------------------------------------------------------- records

_FIELDS = ("chosen", "rejected", "subset", "split", "index", "prompt_end")
# Slot setters let a batch of records be filled by C-level ``map`` without running the
# dataclass ``__init__`` per record. Used only while the record's fields are exactly these
# (checked here); otherwise the records are built by calling the class.
_SLOTS: tuple[Any, ...] | None
_SETTERS: tuple[Any, ...] | None
if tuple(f.name for f in fields(PreferencePair)) == _FIELDS and all(
    type(PreferencePair.__dict__.get(name)).__name__ == "member_descriptor" for name in _FIELDS
):
    _SLOTS = tuple(PreferencePair.__dict__[name] for name in _FIELDS)
    _SETTERS = tuple(slot.__set__ for slot in _SLOTS)
else:  # pragma: no cover - only if records.PreferencePair changes shape
    _SLOTS = _SETTERS = None
#: The native record builder (one C loop per batch: allocate, fill the slots, untrack).
_native_build = getattr(_jsonl, "build", None) if _SLOTS is not None else None


def _build(
    cs: list[str],
    rs: list[str],
    subset: str | None,
    split: str | None,
    indices: Iterable[int],
    ends: Iterable[int],
) -> list[PreferencePair]:
    """``[PreferencePair(c, r, subset, split, i, e) ...]`` for a batch (prompt_end given)."""
    if _SETTERS is None:  # pragma: no cover
        return list(map(PreferencePair, cs, rs, repeat(subset), repeat(split), indices, ends))
    out = list(map(_new, repeat(PreferencePair, len(cs))))
    # untracked now, while they hold nothing, and for good: they will hold only atomic values
    untrack(out)
    s_c, s_r, s_subset, s_split, s_index, s_end = _SETTERS
    _consume(map(s_c, out, cs))
    _consume(map(s_r, out, rs))
    _consume(map(s_subset, out, repeat(subset)))
    _consume(map(s_split, out, repeat(split)))
    _consume(map(s_index, out, indices))
    _consume(map(s_end, out, ends))
    return out


# --------------------------------------------------------------------------- parsing


def _decode(lines: list[bytes], first: int) -> tuple[list[Any], list[int] | range]:
    """Decode complete lines numbered from ``first`` (1-based); skip blank ones."""
    try:
        return list(map(_loads, lines)), range(first - 1, first - 1 + len(lines))
    except orjson.JSONDecodeError:
        pass
    # Rare: blank lines (skipped, but still counted) or a bad line. Blank lines first,
    # without an exception each (a file may hold millions of them).
    indices = [n for n, line in enumerate(lines, first - 1) if line.strip()]
    try:
        return list(map(_loads, [lines[n - first + 1] for n in indices])), indices
    except orjson.JSONDecodeError:
        pass
    objs, indices = [], []
    for n, line in enumerate(lines, first):
        try:
            objs.append(_loads(line))
        except orjson.JSONDecodeError:
            if line.strip():
                raise Fallback from None
            continue
        indices.append(n - 1)
    return objs, indices


def _all_str(values: list[Any]) -> bool:
    return not values or set(map(type, values)) == {str}


def parse_jsonl(
    data: bytes,
    *,
    subset: str | None = None,
    split: str | None = None,
    block: int = BLOCK,
    native: bool | None = None,
) -> list[PreferencePair]:
    """All pairs of a JSONL file's bytes, as :func:`~hhrlhf.reader.read_pairs` would give them.

    The bytes are parsed in blocks of ``block`` bytes, as :func:`load_files` parses a
    stream. Raises :class:`Fallback` instead of deciding anything unusual itself (see the
    module docstring); the caller then uses the reference reader. ``native`` picks the
    block parser (default :data:`NATIVE`; ``True`` needs the built extension).
    """
    blocks = (data[i : i + block] for i in range(0, len(data), block))
    return _parse_stream(blocks, subset, split, NATIVE if native is None else native)


def _chunks(blocks: Iterator[bytes]) -> Iterator[bytes | memoryview]:
    """The stream's complete lines, a block at a time (the last line may lack its newline).

    A line longer than a block is kept as a list of pieces and joined once, when its
    newline (or the end) comes: each byte is copied at most once more, so a 50 MB line
    costs time proportional to its size, not to its size times the number of blocks. A line
    past :func:`~hhrlhf.reader.max_line_bytes` (at least a block long) raises
    :class:`Fallback` as soon as it is: the reference reader names it, reading no more."""
    limit = max_line_bytes()
    pending: list[bytes] = []  # the start of a line not yet complete
    held = 0  # bytes in pending
    for block in blocks:
        cut = block.rfind(b"\n") + 1
        if not cut:
            pending.append(block)
            held += len(block)
            if held > limit:
                raise Fallback
            continue
        if pending:
            if held + block.find(b"\n") > limit:
                raise Fallback
            pending.append(block[:cut])
            yield b"".join(pending)
            pending, held = [], 0
        else:
            yield memoryview(block)[:cut]
        if cut < len(block):
            pending.append(block[cut:])
            held = len(block) - cut
    if pending:
        yield b"".join(pending)


def _lines(chunk: bytes | memoryview) -> list[bytes]:
    lines = bytes(chunk).split(b"\n")
    if not lines[-1]:
        lines.pop()  # the chunk's final newline
    return lines


def _parse_stream(
    blocks: Iterator[bytes], subset: str | None, split: str | None, native: bool = False
) -> list[PreferencePair]:
    """Pairs of a JSONL byte stream given in blocks; raises :class:`Fallback` like
    :func:`parse_jsonl`. Blocks are parsed as they come, so the lines being decoded stay
    in cache and the memory held is the records plus a few blocks.

    With the C parser each block's complete lines take one call. A block it does not vouch
    for (an extra key, a duplicate key, a bad line, ...) is parsed again by the Python
    block parser, which accepts what orjson accepts or raises :class:`Fallback`; so the
    result never depends on which parser ran."""
    if native and _jsonl is None:
        raise RuntimeError("the native block parser hhrlhf._jsonl is not built")
    out: list[PreferencePair] = []
    first = 1  # 1-based number of the next complete line
    for chunk in _chunks(blocks):
        if native:
            first = _parse_chunk_native(chunk, first, subset, split, out)
        else:
            lines = _lines(chunk)
            out += _parse_lines(lines, first, subset, split)
            first += len(lines)
    if not out:
        raise Fallback  # empty, or blank lines only: the reference names the problem
    return out


def _parse_chunk_native(
    chunk: bytes | memoryview,
    first: int,
    subset: str | None,
    split: str | None,
    out: list[PreferencePair],
) -> int:
    """Append the pairs of ``chunk`` (whole lines) to ``out``; the next line's number."""
    got = _jsonl.parse_block(chunk, first - 1, prompt_length)
    if got is None:  # rare: the Python parser decides (or raises Fallback)
        lines = _lines(chunk)
        out += _parse_lines(lines, first, subset, split)
        return first + len(lines)
    cs, rs, ends, indices, n_lines = got
    if _native_build is not None:
        out += _native_build(PreferencePair, _SLOTS, (cs, rs, subset, split, indices, ends))
    else:  # pragma: no cover - a stale build of the extension
        out += _build(cs, rs, subset, split, indices, ends)
    return first + n_lines


def _parse_lines(
    lines: list[bytes], first: int, subset: str | None, split: str | None
) -> list[PreferencePair]:
    objs, indices = _decode(lines, first)
    try:
        # itemgetter raises on anything but a dict (orjson gives dicts, lists, scalars)
        cs = list(map(_chosen, objs))
        rs = list(map(_rejected, objs))
    except (KeyError, TypeError, IndexError):
        raise Fallback from None
    if not (_all_str(cs) and _all_str(rs)):
        raise Fallback
    return _build(cs, rs, subset, split, indices, map(prompt_length, cs, rs))
