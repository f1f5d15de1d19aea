"""The fast loader's Arrow stage (``load_arrow``): each block's strings written by the C
parser into one UTF-8 buffer per column with int32 offsets, wrapped by Arrow without a copy
(no ``str`` made per row); the Python block parser's records, and whole files the reference
reader reads, as string columns built from buffers (never ``pa.array`` of Python objects,
which imports pandas)."""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from itertools import accumulate
from typing import Any, cast

from ..reader import Lenient, read_pairs
from ..records import PreferencePair
from ..transcript import prompt_length
from . import parse
from .files import _FALLBACK_ERRORS, FileJob, _read_blocks, _submit_files, threads
from .parse import Fallback, _chunks, _lines

__all__ = ["ARROW_COLUMNS", "load_files_arrow", "pairs_table"]

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


def _job_table(
    pa: Any,
    columns: str,
    strings: list[list[Any]],
    indices: list[Any],
    n: int,
    subset: str | None,
    split: str | None,
) -> Any:
    """One file's table: its string columns (lists of Arrow chunks), then subset, split,
    index (an int64 chunk list)."""
    names = ARROW_COLUMNS[columns]
    arrays = [pa.chunked_array(chunks, pa.string()) for chunks in strings]

    def label(value: str | None) -> Any:
        return _const_strings(pa, value, n) if value is not None else pa.nulls(n, pa.string())

    arrays += [label(subset), label(split), pa.chunked_array(indices, pa.int64())]
    return pa.Table.from_arrays(arrays, names=[*names, "subset", "split", "index"])


# Arrays are built from buffers: ``pa.array`` and ``pa.repeat`` of Python objects make
# pyarrow import pandas (about half a second) to check for its types, which a load needs not.
_INT32_MAX = (1 << 31) - 1


def _str_array(pa: Any, strings: Sequence[str | None]) -> Any:
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


def _int_array(pa: Any, values: Sequence[int]) -> Any:
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(array("q", values))])


def _const_strings(pa: Any, value: str, n: int) -> Any:
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


def pairs_table(pairs: Sequence[PreferencePair], columns: str = "dpo") -> Any:
    """A :func:`load_arrow`-shaped table of records already in memory (needs ``hhrlhf[hf]``):
    built column by column, with no row dicts. Subset and split are the records' own."""
    from ..errors import require

    pa = require("pyarrow", "hf", "Arrow tables")
    names = ARROW_COLUMNS[columns]
    arrays = [_str_array(pa, col) for col in _pairs_columns(pairs, columns == "dpo")]
    arrays += [
        _str_array(pa, [p.subset for p in pairs]),
        _str_array(pa, [p.split for p in pairs]),
        _int_array(pa, _indices(pairs)),
    ]
    return pa.Table.from_arrays(arrays, names=[*names, "subset", "split", "index"])


#: One file parsed for Arrow: its parts and its row count (see :func:`_arrow_parts`).
Parsed = tuple[list[Any], int]


def _arrow_parts(
    blocks: Iterator[bytes], columns: str, subset: str | None, split: str | None, native: bool
) -> Parsed:
    """One file's blocks parsed for Arrow, without ``pyarrow`` (so that its import can run
    meanwhile): ``(parts, rows)``, each part ``(columns, indices, count)`` from the C parser
    (UTF-8 data and int32 offsets per column, int64 indices) or a list of records from the
    Python block parser, for a block the C parser does not vouch for and every block without
    it. Raises :class:`Fallback` like :func:`parse_jsonl`."""
    dpo = columns == "dpo"
    parts: list[Any] = []
    n = 0
    first = 1  # 1-based number of the next complete line
    for chunk in _chunks(blocks):
        got = (
            parse._jsonl.parse_block_arrow(chunk, first - 1, prompt_length, dpo) if native else None
        )
        if got is None:  # the Python block parser: records
            lines = _lines(chunk)
            pairs = parse._parse_lines(lines, first, subset, split)
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


def _parts_table(
    pa: Any, parsed: Parsed, columns: str, subset: str | None, split: str | None
) -> Any:
    """The table of one file's :func:`_arrow_parts`: the C parser's buffers wrapped as Arrow
    arrays without a copy, the Python parser's records as string arrays."""
    parts, n = parsed
    dpo = columns == "dpo"
    strings: list[list[Any]] = [[] for _ in ARROW_COLUMNS[columns]]
    indices: list[Any] = []
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
) -> list[Any]:
    """Load preference files as Arrow tables, one per job, in order (needs ``hhrlhf[hf]``).

    ``columns="dpo"``: ``prompt``, ``chosen``, ``rejected`` (the dpo format's strings);
    ``"raw"``: upstream ``chosen``, ``rejected``; then ``subset``, ``split``, ``index``.
    The rows, the first error and the skipped rows in ``lenient`` are exactly those of
    :func:`load_files` (so of the reference reader): a file the fast path does not accept
    is read by :func:`~hhrlhf.reader.read_pairs` right away, and a file it accepts holds
    no error and no skipped row, so reading files one after the other in order meets the
    same first error and reports the same rows in the same order.
    """
    from ..errors import require, require_installed

    require_installed("pyarrow", "hf", "load_arrow()")
    if columns not in ARROW_COLUMNS:
        raise ValueError(f"columns must be one of {sorted(ARROW_COLUMNS)}, not {columns!r}")
    todo = [(str(p), subset, split) for p, subset, split in jobs]

    def fast(job: tuple[str, str | None, str | None]) -> Parsed | None:
        path, subset, split = job
        try:
            return _arrow_parts(_read_blocks(path), columns, subset, split, parse.NATIVE)
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
