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
* where the optional C extension ``hhrlhf._jsonl`` is built (``pip install`` compiles it
  when a C compiler is at hand), one call per block parses its lines, unescapes both strings
  with 16-byte vector scans, aligns the usual pair on the bytes and makes the str objects:
  about twice as fast as ``orjson.loads`` per line, which builds a dict per line that the
  loader throws away. It accepts only lines of exactly the two keys with string values;
  any other block goes to the Python path below, so the choice never changes a result;
* otherwise each block is cut into lines with one ``bytes.split``, and the lines are decoded,
  checked, aligned and built with ``map`` over C-level callables (no per-line frames);
* the alignment is :func:`hhrlhf.transcript.prompt_length`, whose fast path answers the
  usual pair with two ``memrchr`` calls and one prefix comparison (proof in its docstring);
* files are independent, so they load in parallel threads, one per core this process may
  use (ISA-L inflates and the C parser decodes without the GIL; ``HH_RLHF_THREADS=N`` sets
  the count, 1 one file after the other). Fallbacks to the reference reader run afterwards,
  in file order, so errors and lenient reports do not depend on the threads;
* records are filled through their slot descriptors, and the cyclic garbage collector is
  paused meanwhile: the records hold only strings and ints, so collection passes over
  hundreds of thousands of fresh objects would find nothing to free.

Three things are built on the same blocks: lists of records (:func:`load_files`, behind
``load_dataset``), Arrow tables (:func:`load_files_arrow`, behind ``load_arrow``: the C
parser writes each block's strings into one UTF-8 buffer per column with int32 offsets,
which Arrow wraps without a copy, so no ``str`` is made per row), and a stream of records
(:func:`iter_file`, behind ``iter_pairs``). A line longer than a block is joined once, so
cost stays proportional to size (a 50 MB line, 100,000 turns, millions of blank lines).
Records hold only strings and ints and are untracked by the cyclic garbage collector.

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
from array import array
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import fields
from itertools import accumulate, repeat
from operator import itemgetter
from typing import Any, cast

import orjson

from .file_stream import _GZIP_ERRORS, max_line_bytes, open_data
from .reader import Lenient, read_pairs
from .records import PreferencePair, untrack
from .transcript import prompt_length

try:  # the optional C block parser, built at install time where a compiler is at hand
    from . import _jsonl
except ImportError:  # pragma: no cover - depends on the install
    _jsonl = None  # type: ignore[assignment]  # tested for None where it is used

__all__ = [
    "ARROW_COLUMNS",
    "FileJob",
    "Fallback",
    "iter_file",
    "NATIVE",
    "load_files",
    "load_files_arrow",
    "pairs_table",
    "parse_jsonl",
]

#: Whether the native block parser is used: built, and not turned off with
#: ``HH_RLHF_NATIVE=0`` (results are the same either way; only the speed differs).
NATIVE: bool = _jsonl is not None and os.environ.get("HH_RLHF_NATIVE", "1") != "0"

#: A file to load and the labels its pairs get: ``(path, subset, split)``.
FileJob = tuple[str | os.PathLike, str | None, str | None]

#: Decompressed bytes parsed at a time: big enough to amortise the per-block work, small
#: enough that the block, its lines and their decoded objects stay in cache.
BLOCK = 1 << 20
#: What reading a damaged or unreadable file raises (the reference reader reports it).
_READ_ERRORS: tuple[type[BaseException], ...] = (*_GZIP_ERRORS, UnicodeDecodeError)

_chosen = itemgetter("chosen")
_rejected = itemgetter("rejected")
_loads = orjson.loads
_consume = deque[Any](maxlen=0).extend
_new = object.__new__


class Fallback(Exception):
    """The fast path met something it does not vouch for: use the reference reader."""


#: What sends a file to the reference reader.
_FALLBACK_ERRORS: tuple[type[BaseException], ...] = (Fallback, *_READ_ERRORS)


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


def _build(cs, rs, subset, split, indices, ends) -> list[PreferencePair]:
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


def _decode(lines: list[bytes], first: int) -> tuple[list, list[int] | range]:
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


def _all_str(values: list) -> bool:
    return not values or set(map(type, values)) == {str}


def parse_jsonl(
    data: bytes, *, subset=None, split=None, block: int = BLOCK, native: bool | None = None
) -> list[PreferencePair]:
    """All pairs of a JSONL file's bytes, as :func:`~hhrlhf.reader.read_pairs` would give them.

    The bytes are parsed in blocks of ``block`` bytes, as :func:`load_files` parses a
    stream. Raises :class:`Fallback` instead of deciding anything unusual itself (see the
    module docstring); the caller then uses the reference reader. ``native`` picks the
    block parser (default :data:`NATIVE`; ``True`` needs the built extension).
    """
    blocks = (data[i : i + block] for i in range(0, len(data), block))
    return _parse_stream(blocks, subset, split, NATIVE if native is None else native)


# --------------------------------------------------------------------------- files


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


def _lines(chunk) -> list[bytes]:
    lines = bytes(chunk).split(b"\n")
    if not lines[-1]:
        lines.pop()  # the chunk's final newline
    return lines


def _parse_stream(
    blocks: Iterator[bytes], subset, split, native: bool = False
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


def _parse_chunk_native(chunk, first: int, subset, split, out: list) -> int:
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


def _read_blocks(path: str | os.PathLike) -> Iterator[bytes]:
    """A file's decompressed bytes in blocks, through the reference reader's own opener."""
    with open_data(path) as f:
        while True:
            block = f.read(BLOCK)
            if not block:
                return
            yield block


def iter_file(
    path: str | os.PathLike,
    *,
    subset: str | None = None,
    split: str | None = None,
    lenient: Lenient | None = None,
) -> Iterator[PreferencePair]:
    """Stream one file's pairs a block at a time: exactly what :func:`~hhrlhf.reader.read_pairs`
    yields, raises and reports, at the block parser's speed and in constant memory.

    Blocks are parsed (natively where built) and their pairs yielded as they come. At the
    first block the fast path does not accept (a bad line, a damaged stream, a JSON array,
    ...), the reference reader takes over: it reads the file again from the start and its
    pairs are yielded from that block's first line on. Every line before it was accepted,
    so it holds no error and no skipped row: the caller sees the reference's sequence of
    pairs, then its error or its lenient reports, line numbers included.
    """
    path = str(path)
    resume = 0  # the 0-based line from which the reference reader takes over
    try:
        found = False
        first = 1  # 1-based number of the next complete line
        for chunk in _chunks(_read_blocks(path)):
            if NATIVE:
                out: list[PreferencePair] = []
                nxt = _parse_chunk_native(chunk, first, subset, split, out)
            else:
                lines = _lines(chunk)
                out = _parse_lines(lines, first, subset, split)
                nxt = first + len(lines)
            found = found or bool(out)
            yield from out
            first = nxt
            resume = first - 1
        if found:
            return
        raise Fallback  # empty, or blank lines only: the reference names the problem
    except _FALLBACK_ERRORS:
        pass
    for pair in read_pairs(path, subset=subset, split=split, lenient=lenient):
        if pair.index is None or pair.index >= resume:
            yield pair


def threads(n_files: int) -> int:
    """Threads a load uses for ``n_files`` files, at most one per file: ``HH_RLHF_THREADS``
    when set to a positive number, else one per core this process may run on. On 2 cores,
    two threads were faster than one idle (load_arrow 0.30x the floor against 0.40x), with
    one core busy with other work (0.37x against 0.43x) and with both busy (0.33x against
    0.41x); bench/RESULTS-load.md."""
    value = os.environ.get("HH_RLHF_THREADS", "").strip()
    wanted = int(value) if value.isdigit() and int(value) > 0 else usable_cores()
    return max(1, min(wanted, n_files))


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS says, else all)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS and Windows have no affinity call
        return os.cpu_count() or 1


def _map_files(fn, jobs: list) -> list:
    """``[fn(job) for job in jobs]``, files in parallel threads: the files are independent,
    and inflating (ISA-L) and the native block parser run without the GIL."""
    n = threads(len(jobs))
    if n <= 1:
        return [fn(job) for job in jobs]
    with ThreadPoolExecutor(n, thread_name_prefix="hhrlhf-load") as pool:
        return [f.result() for f in _submit_files(pool, fn, jobs)]


def _submit_files(pool: ThreadPoolExecutor, fn, jobs: list) -> list:
    """``fn`` of each job submitted largest file first, so that the threads finish together
    (in upstream's order, the largest file comes last and one thread reads it alone); the
    futures in the jobs' order, so results and the first error keep it."""

    def size(k: int) -> int:
        try:
            return os.path.getsize(jobs[k][0])
        except OSError:
            return 0

    futures: dict[int, Future] = {}
    for k in sorted(range(len(jobs)), key=size, reverse=True):
        futures[k] = pool.submit(fn, jobs[k])
    return [futures[k] for k in range(len(jobs))]


def load_files(
    jobs: Sequence[FileJob],
    *,
    lenient: Lenient | None = None,
) -> list[list[PreferencePair]]:
    """Load preference files completely; one list of pairs per job, in order.

    Gives exactly what ``[list(read_pairs(path, subset=, split=, lenient=)) ...]`` gives
    over the jobs: the same records, the same first error, the same skipped rows in
    ``lenient`` (a :class:`~hhrlhf.reader.Lenient` policy; None: strict) in the same order. The cyclic garbage collector is paused while it runs and
    restored before it returns.
    """
    jobs = [(str(p), subset, split) for p, subset, split in jobs]

    def fast(job: tuple[str, str | None, str | None]) -> list[PreferencePair] | None:
        path, subset, split = job
        try:
            return _parse_stream(_read_blocks(path), subset, split, NATIVE)
        except _FALLBACK_ERRORS:
            return None  # decided below by the reference reader

    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        results = _map_files(fast, jobs)
    finally:
        if gc_was_enabled:
            gc.enable()
    # The reference reader, in file order, for every file the fast path did not accept.
    for k, (path, subset, split) in enumerate(jobs):
        if results[k] is None:
            results[k] = list(read_pairs(path, subset=subset, split=split, lenient=lenient))
    return results


# --------------------------------------------------------------------------- Arrow tables

#: The string columns of a table, by ``columns=``: the dpo format's strings, or upstream's.
ARROW_COLUMNS = {"dpo": ("prompt", "chosen", "rejected"), "raw": ("chosen", "rejected")}


def _pairs_columns(pairs: Sequence[PreferencePair], dpo: bool) -> list[list[str]]:
    """The string columns of records (the pure-Python path and fallbacks)."""
    if dpo:
        return [
            [p.prompt for p in pairs],
            [p.chosen_response for p in pairs],
            [p.rejected_response for p in pairs],
        ]
    return [[p.chosen for p in pairs], [p.rejected for p in pairs]]


def _job_table(pa, columns: str, strings: list[list], indices: list, n: int, subset, split):
    """One file's table: its string columns (lists of Arrow chunks), then subset, split,
    index (an int64 chunk list)."""
    names = ARROW_COLUMNS[columns]
    arrays = [pa.chunked_array(chunks, pa.string()) for chunks in strings]

    def label(value):
        return _const_strings(pa, value, n) if value is not None else pa.nulls(n, pa.string())

    arrays += [label(subset), label(split), pa.chunked_array(indices, pa.int64())]
    return pa.Table.from_arrays(arrays, names=[*names, "subset", "split", "index"])


# Arrays are built from buffers: ``pa.array`` and ``pa.repeat`` of Python objects make
# pyarrow import pandas (about half a second) to check for its types, which a load needs not.
_INT32_MAX = (1 << 31) - 1


def _str_array(pa, strings: Sequence[str | None]):
    """A ``string`` array of ``strings`` (None: null), from one UTF-8 buffer and its offsets."""
    if None in strings:  # a file's records all have a subset and split, or none
        if all(s is None for s in strings):
            return pa.nulls(len(strings), pa.string())
        return pa.array(strings, pa.string())  # pragma: no cover - records made by hand
    encoded = [s.encode("utf-8") for s in cast("Sequence[str]", strings)]
    offsets = array("q", accumulate(map(len, encoded), initial=0))
    if offsets[-1] > _INT32_MAX:  # pragma: no cover - over 2 GiB in one column
        return pa.array(strings, pa.string())
    return pa.Array.from_buffers(
        pa.string(),
        len(encoded),
        [None, pa.py_buffer(array("i", offsets)), pa.py_buffer(b"".join(encoded))],
    )


def _indices(pairs: Sequence[PreferencePair]) -> list[int]:
    """The pairs' line indices (records read from a file always have theirs)."""
    return cast("list[int]", [p.index for p in pairs])


def _int_array(pa, values: Sequence[int]):
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(array("q", values))])


def _const_strings(pa, value: str, n: int):
    """``n`` times the string ``value``, as a ``string`` array."""
    data = value.encode("utf-8")
    if len(data) * n > _INT32_MAX:  # pragma: no cover
        return pa.array([value] * n, pa.string())
    offsets = (
        array("i", range(0, len(data) * (n + 1), len(data))) if data else array("i", [0]) * (n + 1)
    )
    return pa.Array.from_buffers(
        pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data * n)]
    )


def pairs_table(pairs: Sequence[PreferencePair], columns: str = "dpo"):
    """A :func:`load_arrow`-shaped table of records already in memory (needs ``hhrlhf[hf]``):
    built column by column, with no row dicts. Subset and split are the records' own."""
    from .errors import require

    pa = require("pyarrow", "hf", "Arrow tables")
    names = ARROW_COLUMNS[columns]
    arrays = [_str_array(pa, col) for col in _pairs_columns(pairs, columns == "dpo")]
    arrays += [
        _str_array(pa, [p.subset for p in pairs]),
        _str_array(pa, [p.split for p in pairs]),
        _int_array(pa, _indices(pairs)),
    ]
    return pa.Table.from_arrays(arrays, names=[*names, "subset", "split", "index"])


def _arrow_parts(blocks: Iterator[bytes], columns: str, subset, split, native: bool):
    """One file's blocks parsed for Arrow, without ``pyarrow`` (so that its import can run
    meanwhile): ``(parts, rows)``, each part ``(columns, indices, count)`` from the C parser
    (UTF-8 data and int32 offsets per column, int64 indices) or a list of records from the
    Python block parser, for a block the C parser does not vouch for and every block without
    it. Raises :class:`Fallback` like :func:`parse_jsonl`."""
    dpo = columns == "dpo"
    parts: list = []
    n = 0
    first = 1  # 1-based number of the next complete line
    for chunk in _chunks(blocks):
        got = _jsonl.parse_block_arrow(chunk, first - 1, prompt_length, dpo) if native else None
        if got is None:  # the Python block parser: records
            lines = _lines(chunk)
            pairs = _parse_lines(lines, first, subset, split)
            first += len(lines)
            if pairs:
                parts.append(pairs)
                n += len(pairs)
            continue
        cols, idx, count, n_lines = got
        first += n_lines
        parts.append((cols, idx, count))
        n += count
    if not n:
        raise Fallback  # empty, or blank lines only: the reference names the problem
    return parts, n


def _parts_table(pa, parsed, columns: str, subset, split):
    """The table of one file's :func:`_arrow_parts`: the C parser's buffers wrapped as Arrow
    arrays without a copy, the Python parser's records as string arrays."""
    parts, n = parsed
    dpo = columns == "dpo"
    strings: list[list] = [[] for _ in ARROW_COLUMNS[columns]]
    indices: list = []
    string, int64, from_buffers, py_buffer = (
        pa.string(),
        pa.int64(),
        pa.Array.from_buffers,
        pa.py_buffer,
    )
    for part in parts:
        if isinstance(part, list):
            for out, col in zip(strings, _pairs_columns(part, dpo), strict=True):
                out.append(_str_array(pa, col))
            indices.append(_int_array(pa, _indices(part)))
            continue
        cols, idx, count = part
        for out, (data, offsets) in zip(strings, cols, strict=True):
            out.append(from_buffers(string, count, [None, py_buffer(offsets), py_buffer(data)]))
        indices.append(from_buffers(int64, count, [None, py_buffer(idx)]))
    return _job_table(pa, columns, strings, indices, n, subset, split)


def load_files_arrow(
    jobs: Sequence[FileJob],
    *,
    columns: str = "dpo",
    lenient: Lenient | None = None,
) -> list:
    """Load preference files as Arrow tables, one per job, in order (needs ``hhrlhf[hf]``).

    ``columns="dpo"``: ``prompt``, ``chosen``, ``rejected`` (the dpo format's strings);
    ``"raw"``: upstream ``chosen``, ``rejected``; then ``subset``, ``split``, ``index``.
    The rows, the first error and the skipped rows in ``lenient`` are exactly those of
    :func:`load_files` (so of the reference reader): a file the fast path does not accept
    is read by :func:`~hhrlhf.reader.read_pairs` right away, and a file it accepts holds
    no error and no skipped row, so reading files one after the other in order meets the
    same first error and reports the same rows in the same order.
    """
    from .errors import require, require_installed

    require_installed("pyarrow", "hf", "load_arrow()")
    if columns not in ARROW_COLUMNS:
        raise ValueError(f"columns must be one of {sorted(ARROW_COLUMNS)}, not {columns!r}")
    todo = [(str(p), subset, split) for p, subset, split in jobs]

    def fast(job: tuple[str, str | None, str | None]):
        path, subset, split = job
        try:
            return _arrow_parts(_read_blocks(path), columns, subset, split, NATIVE)
        except _FALLBACK_ERRORS:
            return None  # decided below by the reference reader

    # the files are parsed in worker threads (one at least) while this thread imports
    # pyarrow (a sixth of a whole load_arrow in a fresh process); the parse needs none of it
    with ThreadPoolExecutor(threads(len(todo)), thread_name_prefix="hhrlhf-load") as pool:
        futures = _submit_files(pool, fast, todo)
        try:
            pa = require("pyarrow", "hf", "load_arrow()")
            parsed = [f.result() for f in futures]
        except BaseException:
            pool.shutdown(cancel_futures=True)
            raise
    out = [
        None if got is None else _parts_table(pa, got, columns, subset, split)
        for got, (_, subset, split) in zip(parsed, todo, strict=True)
    ]
    # The reference reader, in file order, for every file the fast path did not accept.
    for k, (path, subset, split) in enumerate(todo):
        if out[k] is None:
            pairs = list(read_pairs(path, subset=subset, split=split, lenient=lenient))
            out[k] = pairs_table(pairs, columns)
    return out
