"""Loading whole preference files fast, with results identical to :func:`hhrlhf.reader.read_pairs`.

``load_dataset`` hands back every pair with its prompt and both responses computed, so a
full load does four things per pair: decompress, decode the JSON line, align, build the
record. The reference reader does them one line at a time, with a Python frame or two per
line. This module does them a block of lines at a time:

* decompressed bytes are read in 1 MiB blocks through the reference reader's own opener
  (ISA-L), so the block, its lines and their decoded objects stay in cache. Reading whole
  files instead, even with the inflating moved to a second thread, measured slower: the
  hundreds of megabytes of fresh memory cost more than the overlap saved, and the thread
  only helps when a core is idle;
* each block is cut into lines with one ``bytes.split``, and the lines are decoded,
  checked, aligned and built with ``map`` over C-level callables (no per-line frames);
* the alignment is :func:`hhrlhf.transcript.prompt_length`, whose fast path answers the
  usual pair with two ``memrchr`` calls and one prefix comparison (proof in its docstring);
* records are filled through their slot descriptors, and the cyclic garbage collector is
  paused meanwhile: the records hold only strings and ints, so collection passes over
  hundreds of thousands of fresh objects would find nothing to free.

The fast path only ever *accepts* a file it fully understood: every line decoded to a JSON
object with string ``chosen`` and ``rejected`` (blank lines skipped, as the reference
does). Anything else (an invalid line, a missing or mistyped key, a truncated or corrupt
gzip stream, a JSON array, an empty file) discards that file's fast result, and the file
is read again by :func:`~hhrlhf.reader.read_pairs`, in the original file order, after the
fast pass. That raises the reference's precise :class:`~hhrlhf.errors.DataFormatError`,
or, when lenient, records every skipped row in the same order. So records, line numbers,
errors and lenient reports are exactly the reference's; ``tests/test_fastload.py`` checks
it on generated corpora with every quirk and on every malformed-file fixture.
"""

from __future__ import annotations

import gc
import os
import zlib
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import fields
from itertools import repeat
from operator import itemgetter

import orjson

from .reader import SkippedRow, open_data, read_pairs
from .records import PreferencePair
from .transcript import prompt_length

__all__ = ["FileJob", "Fallback", "load_files", "parse_jsonl"]

#: A file to load and the labels its pairs get: ``(path, subset, split)``.
FileJob = tuple[str | os.PathLike, str | None, str | None]

#: Decompressed bytes parsed at a time: big enough to amortise the per-block work, small
#: enough that the block, its lines and their decoded objects stay in cache.
BLOCK = 1 << 20
#: What reading a damaged or unreadable file raises (the reference reader reports it).
_READ_ERRORS = (EOFError, zlib.error, OSError, UnicodeDecodeError)

_chosen = itemgetter("chosen")
_rejected = itemgetter("rejected")
_loads = orjson.loads
_consume = deque(maxlen=0).extend
_new = object.__new__


class Fallback(Exception):
    """The fast path met something it does not vouch for: use the reference reader."""


# --------------------------------------------------------------------------- records

_FIELDS = ("chosen", "rejected", "subset", "split", "index", "prompt_end")
# Slot setters let a batch of records be filled by C-level ``map`` without running the
# dataclass ``__init__`` per record. Used only while the record's fields are exactly these
# (checked here); otherwise the records are built by calling the class.
if tuple(f.name for f in fields(PreferencePair)) == _FIELDS and all(
    type(PreferencePair.__dict__.get(name)).__name__ == "member_descriptor" for name in _FIELDS
):
    _SETTERS = tuple(PreferencePair.__dict__[name].__set__ for name in _FIELDS)
else:  # pragma: no cover - only if records.PreferencePair changes shape
    _SETTERS = None


def _build(cs, rs, subset, split, indices, ends) -> list[PreferencePair]:
    """``[PreferencePair(c, r, subset, split, i, e) ...]`` for a batch (prompt_end given)."""
    if _SETTERS is None:  # pragma: no cover
        return list(map(PreferencePair, cs, rs, repeat(subset), repeat(split), indices, ends))
    out = list(map(_new, repeat(PreferencePair, len(cs))))
    s_c, s_r, s_subset, s_split, s_index, s_end = _SETTERS
    _consume(map(s_c, out, cs))
    _consume(map(s_r, out, rs))
    _consume(map(s_subset, out, repeat(subset)))
    _consume(map(s_split, out, repeat(split)))
    _consume(map(s_index, out, indices))
    _consume(map(s_end, out, ends))
    return out


# --------------------------------------------------------------------------- parsing


def _decode(lines: list[bytes], first: int) -> tuple[list, list[int] | range]:
    """Decode complete lines numbered from ``first`` (1-based); skip blank ones."""
    try:
        return list(map(_loads, lines)), range(first - 1, first - 1 + len(lines))
    except orjson.JSONDecodeError:
        pass
    # Rare: blank lines (skipped, but still counted) or a bad line.
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


def _all_str(values: list) -> bool:
    return not values or set(map(type, values)) == {str}


def parse_jsonl(
    data: bytes, *, subset=None, split=None, block: int = BLOCK
) -> list[PreferencePair]:
    """All pairs of a JSONL file's bytes, as :func:`~hhrlhf.reader.read_pairs` would give them.

    The bytes are parsed in blocks of ``block`` bytes, as :func:`load_files` parses a
    stream. Raises :class:`Fallback` instead of deciding anything unusual itself (see the
    module docstring); the caller then uses the reference reader.
    """
    blocks = (data[i : i + block] for i in range(0, len(data), block))
    return _parse_stream(blocks, subset, split)


# --------------------------------------------------------------------------- files


def _parse_stream(blocks: Iterator[bytes], subset, split) -> list[PreferencePair]:
    """Pairs of a JSONL byte stream given in blocks; raises :class:`Fallback` like
    :func:`parse_jsonl`. Blocks are parsed as they come, so the lines being decoded stay
    in cache and the memory held is the records plus a few blocks."""
    out: list[PreferencePair] = []
    rest = b""
    first = 1  # 1-based number of the next complete line
    for block in blocks:
        lines = (rest + block).split(b"\n") if rest else block.split(b"\n")
        rest = lines.pop()
        if lines:
            out += _parse_lines(lines, first, subset, split)
            first += len(lines)
    if rest:
        out += _parse_lines([rest], first, subset, split)
    if not out:
        raise Fallback  # empty, or blank lines only: the reference names the problem
    return out


def _parse_lines(lines: list[bytes], first: int, subset, split) -> list[PreferencePair]:
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


def _read_blocks(path: str) -> Iterator[bytes]:
    """A file's decompressed bytes in blocks, through the reference reader's own opener."""
    with open_data(path) as f:
        while True:
            block = f.read(BLOCK)
            if not block:
                return
            yield block


def load_files(
    jobs: Sequence[FileJob],
    *,
    lenient: bool = False,
    skipped: list[SkippedRow] | None = None,
) -> list[list[PreferencePair]]:
    """Load preference files completely; one list of pairs per job, in order.

    Gives exactly what ``[list(read_pairs(path, subset=, split=, lenient=, skipped=)) ...]``
    gives over the jobs: the same records, the same first error, the same ``skipped``
    entries in the same order. The cyclic garbage collector is paused while it runs and
    restored before it returns.
    """
    jobs = [(str(p), subset, split) for p, subset, split in jobs]
    results: list[list[PreferencePair] | None] = [None] * len(jobs)
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for k, (path, subset, split) in enumerate(jobs):
            try:
                results[k] = _parse_stream(_read_blocks(path), subset, split)
            except (Fallback, *_READ_ERRORS):
                pass  # decided below by the reference reader
    finally:
        if gc_was_enabled:
            gc.enable()
    # The reference reader, in file order, for every file the fast path did not accept.
    for k, (path, subset, split) in enumerate(jobs):
        if results[k] is None:
            results[k] = list(
                read_pairs(path, subset=subset, split=split, lenient=lenient, skipped=skipped)
            )
    return results  # type: ignore[return-value]
