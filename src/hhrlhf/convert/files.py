"""Containers: rows to and from ``.jsonl``, ``.jsonl.gz`` and ``.parquet`` files.

The container follows the file name. Files are written next to their final name and
renamed into place when complete, so an interrupted export never leaves a half file that
looks whole. JSONL is read back with :func:`hhrlhf.reader.read_objects`, so a bad line is
reported with its file and line number like any other data file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import orjson

from ..errors import DataFormatError, NoDataError, UnknownNameError, require
from ..outputs import atomic_file
from ..reader import Lenient, read_objects

__all__ = ["CONTAINERS", "container_of", "split_path", "write_rows", "read_rows"]

#: File name endings and the container each one means.
CONTAINERS = {".jsonl.gz": "jsonl.gz", ".jsonl": "jsonl", ".parquet": "parquet"}


def container_of(path: str | os.PathLike) -> str:
    name = Path(path).name
    for ending, kind in CONTAINERS.items():
        if name.endswith(ending):
            return kind
    raise UnknownNameError("file ending", name, list(CONTAINERS))


def split_path(path: str | os.PathLike, split: str) -> Path:
    """The file of one split when one ``--out`` name stands for several splits: the split goes
    before the container ending (``pairs.jsonl`` -> ``pairs.train.jsonl``, ``pairs.jsonl.gz``
    -> ``pairs.train.jsonl.gz``)."""
    path = Path(path)
    kind = container_of(path)
    ending = next(e for e, k in CONTAINERS.items() if k == kind)
    return path.with_name(f"{path.name[: -len(ending)]}.{split}{ending}")


def _encode(row: dict) -> bytes:
    return orjson.dumps(row, option=orjson.OPT_APPEND_NEWLINE)


def _open_gzip_writer(path: Path):
    try:  # ISA-L compresses several times faster than zlib; a thread overlaps it with encoding
        from isal import igzip_threaded

        return igzip_threaded.open(path, "wb", threads=1)
    except ImportError:  # pragma: no cover - isal is a core dependency
        import gzip

        return gzip.open(path, "wb", compresslevel=6)


def write_rows(
    rows: Iterable[dict],
    path: str | os.PathLike,
    *,
    encode: Callable[[dict], bytes] | None = None,
) -> int:
    """Write rows to ``path`` (container from the name); returns the number of rows."""
    kind = container_of(path)
    with atomic_file(path) as part:
        if kind == "parquet":
            return _write_parquet(rows, part)
        return _write_jsonl(rows, part, encode or _encode, gz=kind == "jsonl.gz")


def _write_jsonl(rows, path: Path, encode, *, gz: bool) -> int:
    f = _open_gzip_writer(path) if gz else open(path, "wb", buffering=1 << 20)
    n = 0
    buf: list[bytes] = []
    with f:
        for row in rows:
            buf.append(encode(row))
            n += 1
            if len(buf) >= 2048:
                f.write(b"".join(buf))
                buf.clear()
        f.write(b"".join(buf))
    return n


def write_table(table, path: str | os.PathLike) -> int:
    """Write a ``pyarrow.Table`` to a ``.parquet`` file (through a temporary file, like
    :func:`write_rows`); returns the number of rows."""
    pq = require("pyarrow.parquet", "hf", "writing .parquet")
    with atomic_file(path) as part:
        pq.write_table(table, part)
    return table.num_rows


def _write_parquet(rows, path: Path) -> int:
    from .tables import arrow_table

    pq = require("pyarrow.parquet", "hf", "writing .parquet")
    table = arrow_table(list(rows))
    pq.write_table(table, path)
    return table.num_rows


def read_rows(
    path: str | os.PathLike, *, lenient: Lenient | None = None
) -> Iterator[tuple[int, dict]]:
    """Yield ``(position, row)``: the 1-based line (JSONL) or row number (parquet).

    ``lenient``: a :class:`~hhrlhf.reader.Lenient` policy that skips (and records) the JSONL
    lines that do not decode; None: strict."""
    path = Path(path)
    if not path.exists():
        raise NoDataError(path, "no such file")
    if container_of(path) == "parquet":
        pq = require("pyarrow.parquet", "hf", "reading .parquet")
        try:
            pf = pq.ParquetFile(path)
        except Exception as exc:  # pyarrow raises its own ArrowInvalid
            raise DataFormatError(str(path), None, f"not a parquet file ({exc})") from None
        n = 0
        for batch in pf.iter_batches(batch_size=4096):
            for row in batch.to_pylist():
                n += 1
                yield n, row
        return
    yield from read_objects(path, lenient=lenient)
