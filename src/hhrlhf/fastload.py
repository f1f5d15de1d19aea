"""Loading whole preference files fast, with results identical to :func:`hhrlhf.reader.read_pairs`.

``load_dataset`` hands back every pair with its prompt and both responses computed, so a
full load does four things per pair: decompress, decode the JSON line, align, build the
record. Done line by line on one core, that is slower than a bare ``gzip`` + ``orjson``
loop. This module overlaps the work on two cores and removes per-line Python frames:

* a background thread reads and inflates whole files ahead of the parser. ISA-L inflates
  an in-memory buffer in one call with the GIL released, so the thread needs the GIL only
  a few times per file (a thread that needs it per 128 KiB block would queue behind the
  parser's 5 ms switch interval every time);
* the main thread splits a file into lines with one ``bytes.split`` and decodes, checks,
  aligns and builds a whole batch of lines with ``map`` over C-level callables;
* the alignment is :func:`hhrlhf.transcript.prompt_length`, whose fast path answers the
  usual pair with two ``memrchr`` calls and one prefix comparison (proof in its docstring);
* the cyclic garbage collector is paused while the records are built: the records hold
  only strings and ints, so a collection pass over hundreds of thousands of fresh objects
  would find nothing to free.

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
import queue
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import fields
from itertools import repeat
from operator import itemgetter

import orjson

from .reader import SkippedRow, read_pairs
from .records import PreferencePair
from .transcript import prompt_length

try:
    from isal.isal_zlib import decompressobj as _decompressobj
except ImportError:  # pragma: no cover - isal is a core dependency
    from zlib import decompressobj as _decompressobj

__all__ = ["FileJob", "Fallback", "load_files", "parse_jsonl"]

#: A file to load and the labels its pairs get: ``(path, subset, split)``.
FileJob = tuple[str | os.PathLike, str | None, str | None]

#: Whole files the decompression thread may hold ready ahead of the parser.
AHEAD = 2
#: Lines decoded per batch: large enough to amortise ``map`` set-up, small enough that
#: the decoded JSON objects of one batch stay in cache.
BATCH = 4096

_GZIP_MAGIC = b"\x1f\x8b"
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


def parse_jsonl(data: bytes, *, subset=None, split=None) -> list[PreferencePair]:
    """All pairs of a JSONL file's bytes, as :func:`~hhrlhf.reader.read_pairs` would give them.

    Raises :class:`Fallback` instead of deciding anything unusual itself (see the module
    docstring); the caller then uses the reference reader.
    """
    lines = data.split(b"\n")
    if not lines[-1]:
        lines.pop()  # the text after the final newline: nothing, not a line
    out: list[PreferencePair] = []
    for start in range(0, len(lines), BATCH):
        objs, indices = _decode(lines[start : start + BATCH], start + 1)
        try:
            # itemgetter raises on anything but a dict (orjson gives dicts, lists, scalars)
            cs = list(map(_chosen, objs))
            rs = list(map(_rejected, objs))
        except (KeyError, TypeError, IndexError):
            raise Fallback from None
        if not (_all_str(cs) and _all_str(rs)):
            raise Fallback
        out += _build(cs, rs, subset, split, indices, map(prompt_length, cs, rs))
    if not out:
        raise Fallback  # empty, or blank lines only: the reference names the problem
    return out


# --------------------------------------------------------------------------- files


def _read_whole(path: str) -> bytes:
    """A file's bytes, gunzipped when it starts with the gzip magic number.

    One gzip member inflated in one call. Anything else (more members, bytes after the
    member, a stream that stops short) raises :class:`Fallback`: the reference reader
    decides what those mean.
    """
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] != _GZIP_MAGIC:
        return raw
    d = _decompressobj(wbits=31)
    data = d.decompress(raw)
    if not d.eof or d.unused_data:
        raise Fallback
    return data


def _produce(paths: Sequence[str], q: queue.Queue, stop: threading.Event) -> None:
    """Thread body: put ``(k, bytes)`` or ``(k, exception)`` for each path, in order."""
    for k, path in enumerate(paths):
        if stop.is_set():
            return
        try:
            item = _read_whole(path)
        except BaseException as exc:  # handed to the parser, which falls back
            item = exc
        q.put((k, item))


def load_files(
    jobs: Sequence[FileJob],
    *,
    lenient: bool = False,
    skipped: list[SkippedRow] | None = None,
) -> list[list[PreferencePair]]:
    """Load preference files completely; one list of pairs per job, in order.

    Gives exactly what ``[list(read_pairs(path, subset=, split=, lenient=, skipped=)) ...]``
    gives over the jobs (same records, same first error, same ``skipped`` entries in the
    same order), with decompression in a thread beside the parser.
    """
    jobs = [(str(p), subset, split) for p, subset, split in jobs]
    # Smallest first: the parser waits only for the first file's decompression.
    order = sorted(range(len(jobs)), key=lambda k: _size(jobs[k][0]))
    results: list[list[PreferencePair] | None] = [None] * len(jobs)
    q: queue.Queue = queue.Queue(maxsize=AHEAD)
    stop = threading.Event()
    worker = threading.Thread(
        target=_produce,
        args=([jobs[k][0] for k in order], q, stop),
        name="hhrlhf-decompress",
        daemon=True,
    )
    gc_was_enabled = gc.isenabled()
    gc.disable()
    worker.start()
    try:
        for pos, k in enumerate(order):
            got, data = q.get()
            if got != pos:  # pragma: no cover - an internal invariant
                raise RuntimeError("decompression thread out of step")
            if isinstance(data, BaseException):
                continue
            _, subset, split = jobs[k]
            try:
                results[k] = parse_jsonl(data, subset=subset, split=split)
            except Fallback:
                pass
            del data
    finally:
        stop.set()
        while worker.is_alive():  # unblock a producer waiting on a full queue
            try:
                q.get(timeout=0.05)
            except queue.Empty:
                pass
        worker.join()
        if gc_was_enabled:
            gc.enable()
    # The reference reader, in file order, for every file the fast path did not accept.
    for k, (path, subset, split) in enumerate(jobs):
        if results[k] is None:
            results[k] = list(
                read_pairs(path, subset=subset, split=split, lenient=lenient, skipped=skipped)
            )
    return results  # type: ignore[return-value]


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
