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

A second core can be put to work, but is not by default. With ``parallel=True`` (or
``HH_RLHF_LOAD_WORKER=1`` and a big input), a forked worker process parses part of the
files exactly as above and ships each one back without pickling: its strings UTF-8 encoded
back to back in a shared memory file, with int64 tables of string lengths, line indices and
prompt ends; the parent parses the rest and then rebuilds the worker's strings and records
from slices of that memory. A file the worker refuses goes to the reference reader like
any other, so results, errors and reports are the same as without it. It does not pay on
two cores: rebuilding the strings costs the parent more than half of what parsing them
does (making the str objects is most of what the JSON decoder does), and after the fork
both processes pay copy-on-write faults on memory the heap had freed; the numbers are in
``bench/RESULTS-load.md``.
"""

from __future__ import annotations

import gc
import mmap
import os
import select
import signal
import sys
import threading
import zlib
from array import array
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import fields
from itertools import accumulate, islice, repeat
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


def _columns(blocks: Iterator[bytes]) -> Iterator[tuple[list[str], list[str], Sequence[int]]]:
    """``(chosen, rejected, indices)`` of a JSONL byte stream, a block of lines at a time.

    Raises :class:`Fallback` on anything unusual, and at the end when there was no pair at
    all. Blocks are parsed as they come, so the lines being decoded stay in cache."""
    rest = b""
    first = 1  # 1-based number of the next complete line
    seen = False
    for block in blocks:
        lines = (rest + block).split(b"\n") if rest else block.split(b"\n")
        rest = lines.pop()
        if lines:
            cols = _columns_of(lines, first)
            seen = seen or bool(cols[0])
            first += len(lines)
            yield cols
    if rest:
        cols = _columns_of([rest], first)
        seen = seen or bool(cols[0])
        yield cols
    if not seen:
        raise Fallback  # empty, or blank lines only: the reference names the problem


def _columns_of(lines: list[bytes], first: int) -> tuple[list[str], list[str], Sequence[int]]:
    objs, indices = _decode(lines, first)
    try:
        # itemgetter raises on anything but a dict (orjson gives dicts, lists, scalars)
        cs = list(map(_chosen, objs))
        rs = list(map(_rejected, objs))
    except (KeyError, TypeError, IndexError):
        raise Fallback from None
    if not (_all_str(cs) and _all_str(rs)):
        raise Fallback
    return cs, rs, indices


def _parse_stream(blocks: Iterator[bytes], subset, split) -> list[PreferencePair]:
    """Pairs of a JSONL byte stream given in blocks; raises :class:`Fallback` like
    :func:`parse_jsonl`. The memory held is the records plus a few blocks."""
    out: list[PreferencePair] = []
    for cs, rs, indices in _columns(blocks):
        out += _build(cs, rs, subset, split, indices, map(prompt_length, cs, rs))
    return out


# --------------------------------------------------------------------------- files


def _read_blocks(path: str) -> Iterator[bytes]:
    """A file's decompressed bytes in blocks, through the reference reader's own opener."""
    with open_data(path) as f:
        while True:
            block = f.read(BLOCK)
            if not block:
                return
            yield block


def _load_file(path: str, subset, split) -> list[PreferencePair] | None:
    """The fast path over one file; None when the reference reader must decide it."""
    try:
        return _parse_stream(_read_blocks(path), subset, split)
    except (Fallback, *_READ_ERRORS):
        return None


def load_files(
    jobs: Sequence[FileJob],
    *,
    lenient: bool = False,
    skipped: list[SkippedRow] | None = None,
    parallel: bool | None = None,
) -> list[list[PreferencePair]]:
    """Load preference files completely; one list of pairs per job, in order.

    Gives exactly what ``[list(read_pairs(path, subset=, split=, lenient=, skipped=)) ...]``
    gives over the jobs: the same records, the same first error, the same ``skipped``
    entries in the same order. The cyclic garbage collector is paused while it runs and
    restored before it returns.

    ``parallel``: ``True`` hands part of the files to a forked worker process whenever
    the platform can fork (Linux), whatever the size; ``False`` never does; ``None`` (the
    default) does only when the environment variable ``HH_RLHF_LOAD_WORKER=1`` asks for
    it and the input is big (see the module docstring for why it is off by default).
    """
    jobs = [(str(p), subset, split) for p, subset, split in jobs]
    results: list[list[PreferencePair] | None] = [None] * len(jobs)
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        weights = [] if parallel is False else [_work_of(path) for path, _, _ in jobs]
        if parallel is None:
            parallel = _use_worker(weights)
        if parallel and _CAN_FORK and jobs:
            _load_in_two_processes(jobs, weights, results)
        else:
            for k, (path, subset, split) in enumerate(jobs):
                results[k] = _load_file(path, subset, split)
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


# --------------------------------------------------------------------------- second process

#: Set to ``"1"`` to let :func:`load_files` hand part of the files to a worker process
#: (where the platform can fork); off by default: see the module docstring.
WORKER_ENV = "HH_RLHF_LOAD_WORKER"
#: Decompressed bytes from which the worker is used when enabled: below it, the fork,
#: the transfer and the rebuilding cost more than half the parsing saves.
MIN_WORKER_BYTES = 64 << 20
#: The worker's share of the work (by decompressed bytes). The parent also rebuilds the
#: worker's strings and records, so the worker takes more than half.
WORKER_SHARE = 0.58

_CAN_FORK = sys.platform.startswith("linux") and hasattr(os, "fork") and hasattr(os, "memfd_create")
_POPULATE = getattr(mmap, "MAP_POPULATE", 0)
# What the worker says about each of its files.
_DONE, _REFERENCE, _REDO = 1, 2, 3


def _work_of(path: str) -> int:
    """The decompressed size of a file (gzip's size trailer, or the plain size): its work."""
    try:
        with open(path, "rb") as f:
            gz = f.read(2) == b"\x1f\x8b"
            size = f.seek(0, os.SEEK_END)
            if gz and size >= 18:
                f.seek(-4, os.SEEK_END)
                return max(size, int.from_bytes(f.read(4), "little"))  # size mod 2**32
            return size
    except OSError:
        return 0  # the reference reader will report it


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _use_worker(weights: list[int]) -> bool:
    """``parallel=None``: the worker only when enabled by :data:`WORKER_ENV`, and then
    only for big inputs on two free cores."""
    return (
        os.environ.get(WORKER_ENV, "").strip() == "1"
        and _CAN_FORK
        and len(weights) >= 2
        and sum(weights) >= MIN_WORKER_BYTES
        and _cores() >= 2
        # forking a process that runs other threads can deadlock the child on a lock one
        # of them held (and Python 3.12 warns about it): stay serial then
        and threading.active_count() == 1
    )


def _split(weights: list[int], share: float) -> list[bool]:
    """Which files the worker takes: biggest first, each to the side least loaded for its
    share (ties to the worker)."""
    mine = [False] * len(weights)
    worker = parent = 0
    for k in sorted(range(len(weights)), key=weights.__getitem__, reverse=True):
        w = weights[k]
        if (worker + w) / share <= (parent + w) / (1 - share):
            mine[k] = True
            worker += w
        else:
            parent += w
    return mine


def _load_in_two_processes(jobs: list, weights: list[int], results: list) -> None:
    """Fill ``results`` like the serial loop, with a forked worker taking part of the files.

    The worker decodes, checks and aligns its files exactly as :func:`_load_file` does and
    writes each one to a shared memory file: every string UTF-8 encoded, back to back, then
    a table of string lengths, line indices and prompt ends (nothing pickled). It then
    tells the parent, through a pipe, where that file's part lies. The parent parses its
    own files meanwhile and, between them and after them, rebuilds the worker's finished
    files from slices of that memory, in the order the worker finishes them (biggest
    first, so the last one, rebuilt after everything else, is small). A file the worker
    refused is left to the reference reader; a file it did not finish (every remaining
    one, if it died) is parsed by the parent.
    """
    by_size = sorted(range(len(jobs)), key=weights.__getitem__, reverse=True)
    to_worker = _split(weights, WORKER_SHARE)
    mine = [k for k in by_size if not to_worker[k]]
    theirs = deque(k for k in by_size if to_worker[k])
    fd = os.memfd_create("hhrlhf-load", os.MFD_CLOEXEC)
    inbox, outbox = os.pipe()
    pid = None
    try:
        try:
            pid = os.fork()
        except OSError:  # no second process to be had: all in this one
            mine, theirs = by_size, deque()
        if pid == 0:  # the worker: never returns, whatever happens
            code = 1
            try:
                os.close(inbox)
                _work([jobs[k] for k in theirs], fd, outbox)
                code = 0
            finally:
                os._exit(code)
        os.close(outbox)
        outbox = -1
        for k in mine:
            results[k] = _load_file(*jobs[k])
            while theirs and select.select([inbox], [], [], 0)[0]:
                _take(inbox, fd, jobs, theirs.popleft(), results)
        while theirs:
            _take(inbox, fd, jobs, theirs.popleft(), results)
        if pid:
            os.waitpid(pid, 0)
            pid = None
    finally:
        if pid:  # interrupted before the worker was reaped: stop it, leave no zombie
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        for f in (fd, inbox, outbox):
            if f >= 0:
                os.close(f)


_NOTE = 32  # a note from the worker: outcome, start, table, pairs (four int64)


def _work(jobs: list, fd: int, outbox: int) -> None:
    """The worker's side: per file, its part of ``fd`` (page-aligned), then a note."""
    pos = 0
    with open(fd, "wb", closefd=False) as out:
        write = out.write
        for path, _, _ in jobs:
            pad = -pos % mmap.ALLOCATIONGRANULARITY
            if pad:
                pos += write(bytes(pad))
            lens, indices, ends = array("q"), array("q"), array("q")
            start = pos
            try:
                for cs, rs, idx in _columns(_read_blocks(path)):
                    texts = [None] * (2 * len(cs))
                    texts[0::2] = cs
                    texts[1::2] = rs
                    encoded = list(map(str.encode, texts))
                    lens.extend(map(len, encoded))
                    pos += write(b"".join(encoded))
                    indices.extend(idx)
                    ends.extend(map(prompt_length, cs, rs))
                table = pos
                for column in (lens, indices, ends):
                    pos += write(column.tobytes())
                note = (_DONE, start, table, len(indices))
            except (Fallback, *_READ_ERRORS):
                note = (_REFERENCE, 0, 0, 0)
            except Exception:  # noqa: BLE001 - e.g. a string UTF-8 cannot encode: parent's job
                note = (_REDO, 0, 0, 0)
            out.flush()
            os.write(outbox, array("q", note).tobytes())  # < PIPE_BUF: written whole


def _take(inbox: int, fd: int, jobs: list, k: int, results: list) -> None:
    """The parent's side for the worker's next file ``k``: its pairs, or what to do."""
    note = b""
    while len(note) < _NOTE:
        more = os.read(inbox, _NOTE - len(note))
        if not more:  # the worker is gone: this file is the parent's to parse
            results[k] = _load_file(*jobs[k])
            return
        note += more
    outcome, start, table, n = array("q", note)
    pairs = None
    if outcome == _DONE:
        _, subset, split = jobs[k]
        pairs = _rebuild(fd, start, table, n, subset, split)
    if pairs is not None:
        results[k] = pairs
    elif outcome != _REFERENCE:
        results[k] = _load_file(*jobs[k])
    # _REFERENCE: left to the reference reader


def _rebuild(fd: int, start: int, table: int, n: int, subset, split) -> list | None:
    """A file's pairs from the worker's part of ``fd``; None if that part is not whole."""
    size = table + 32 * n - start
    if start < 0 or table < start or n < 1 or start + size > os.fstat(fd).st_size:
        return None
    flags = mmap.MAP_SHARED | _POPULATE
    with mmap.mmap(fd, size, flags=flags, prot=mmap.PROT_READ, offset=start) as mm:
        view = memoryview(mm)
        try:
            table -= start
            columns = array("q")
            columns.frombytes(view[table:])
            offsets = list(accumulate(columns[: 2 * n], initial=0))
            if offsets[-1] != table:
                return None
            slices = map(slice, offsets, islice(offsets, 1, None))
            texts = list(map(str, map(view.__getitem__, slices), repeat("utf-8")))
        finally:
            view.release()
    chosen, rejected = texts[0::2], texts[1::2]
    return _build(chosen, rejected, subset, split, columns[2 * n : 3 * n], columns[3 * n :])
