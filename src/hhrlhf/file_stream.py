"""A data file as bytes: opened with gzip detected by its magic number (ISA-L where
installed), read line by line under a length limit, and the damage of a broken gzip stream
named precisely (truncated, a CRC mismatch, corrupt data) with the rows read before it.

Both readers (:mod:`hhrlhf.reader`, :mod:`hhrlhf.fastload`) and ``hh clean`` read through it.
"""

from __future__ import annotations

import io
import os
import zlib
from collections.abc import Iterator
from typing import cast

from .errors import DataFormatError, HHError, TruncatedStreamError

try:  # ISA-L decompresses gzip several times faster than zlib
    from isal import igzip as _gzip
    from isal import igzip_threaded as _gzip_threaded
    from isal.igzip_lib import IsalError as _IsalError
except ImportError:  # pragma: no cover - isal is a core dependency, kept optional for vendoring
    # mypy types the names by the first branch; the fallback is the same interface
    import gzip as _gzip  # type: ignore[no-redef]

    _gzip_threaded = None  # type: ignore[assignment]

    class _IsalError(Exception):  # type: ignore[no-redef]
        pass


__all__ = [
    "MAX_LINE_BYTES",
    "is_gzip",
    "open_data",
    "max_line_bytes",
    "line_too_long",
    "iter_lines",
]

_GZIP_MAGIC = b"\x1f\x8b"
#: A gzip file is at least 18 bytes (header, an empty deflate block, trailer): a shorter
#: file named ``.gz`` was cut short, not an empty split.
_GZIP_MIN = 18
_GZIP_ERRORS: tuple[type[BaseException], ...] = (
    EOFError,
    zlib.error,
    OSError,
    _IsalError,  # type: ignore[assignment]  # isal's stub calls the class an instance
)


def is_gzip(path: str | os.PathLike[str]) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == _GZIP_MAGIC


def open_data(path: str | os.PathLike[str], *, threaded: bool = False) -> io.BufferedIOBase:
    """Open a data file for binary reading, decompressing gzip (detected by magic number).

    ``threaded=True`` decompresses in a background thread (ISA-L releases the GIL), which
    overlaps decompression with parsing.
    """
    if is_gzip(path):
        if threaded and _gzip_threaded is not None:
            # a buffered reader (isal's untyped ``open`` is seen as returning BinaryIO)
            threaded_stream = _gzip_threaded.open(path, "rb", threads=1)  # type: ignore[no-untyped-call]
            return cast(io.BufferedIOBase, threaded_stream)
        # buffered already
        return cast(io.BufferedIOBase, _gzip.open(path, "rb"))  # type: ignore[no-untyped-call]
    return cast(io.BufferedIOBase, open(path, "rb", buffering=1 << 20))  # a BufferedReader


def _gzip_problem(exc: BaseException) -> tuple[str, str]:
    """``(kind, problem)`` for an exception raised while decompressing (see
    :class:`~hhrlhf.errors.TruncatedStreamError` for the kinds)."""
    if isinstance(exc, EOFError):
        return "truncated", "truncated gzip stream (the file ends before the end-of-stream marker)"
    text = str(exc)
    if "crc" in text.lower():
        return "crc", (
            "gzip CRC check failed: the decompressed data does not match the checksum "
            f"stored in the file, so it is corrupt ({text})"
        )
    return "corrupt", f"corrupt gzip data ({text})"


def _stream_error(
    path: str, exc: BaseException, lines_read: int, unit: str = "line"
) -> TruncatedStreamError:
    kind, problem = _gzip_problem(exc)
    return TruncatedStreamError(
        path, problem, last_good_line=lines_read, rows_read=lines_read, kind=kind, unit=unit
    )


def _stream_damage(path: str) -> TruncatedStreamError | None:
    """The damage of ``path``'s gzip stream, or None if it decompresses intact.

    Run only when a row of a gzip file is bad: a flipped byte in the compressed data turns
    into garbage lines long before the stream's CRC is checked at its end, and the garbage
    must be reported as the corrupt file it is, not as a bad row.
    """
    try:
        if not is_gzip(path):
            return None
        lines = 0
        with _gzip.open(path, "rb") as f:  # type: ignore[no-untyped-call]
            for _ in f:  # counted as iter_lines counts them
                lines += 1
    except _GZIP_ERRORS as exc:
        return _stream_error(path, exc, lines)
    return None


_DAMAGE_SEEN: dict[tuple[str, int, int], TruncatedStreamError | None] = {}


def _damage_of(path: str) -> TruncatedStreamError | None:
    """:func:`_stream_damage`, checked once per version of a file (lenient skips ask per row)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (path, st.st_size, st.st_mtime_ns)
    if key not in _DAMAGE_SEEN:
        if len(_DAMAGE_SEEN) > 64:
            _DAMAGE_SEEN.clear()
        _DAMAGE_SEEN[key] = _stream_damage(path)
    return _DAMAGE_SEEN[key]


def _row_error(path: str, line: int | None, problem: str, unit: str = "line") -> DataFormatError:
    """The error for a bad row: the stream's own damage when the file is a broken gzip."""
    return _stream_damage(path) or DataFormatError(path, line, problem, unit=unit)


#: The most bytes a line of a JSON lines file may hold (its newline not counted): a longer line
#: is one error naming the file and the line, read no further than this (a small gzip file can
#: hold a line of gigabytes). ``HH_MAX_LINE_BYTES`` sets another (at least 1 MiB).
MAX_LINE_BYTES = 64 << 20
_MIN_LINE_LIMIT = 1 << 20


def max_line_bytes() -> int:
    """The line length limit in force: ``HH_MAX_LINE_BYTES``, else :data:`MAX_LINE_BYTES`."""
    raw = os.environ.get("HH_MAX_LINE_BYTES", "").strip()
    if not raw:
        return MAX_LINE_BYTES
    try:
        limit = int(raw)
    except ValueError:
        limit = -1
    if limit < _MIN_LINE_LIMIT:
        raise HHError(
            f"HH_MAX_LINE_BYTES={raw!r}: expected a whole number of bytes, at least "
            f"{_MIN_LINE_LIMIT:,} (1 MiB)"
        )
    return limit


def line_too_long(limit: int) -> str:
    """The problem of a line past ``limit`` bytes, as both readers word it."""
    return (
        f"line longer than {limit:,} bytes, the most a line may hold (HH_MAX_LINE_BYTES raises "
        "it); not read further"
    )


def iter_lines(
    path: str | os.PathLike[str], *, threaded: bool = False
) -> Iterator[tuple[int, bytes]]:
    """``(line number, raw line)`` of a file, 1-based, decompressing gzip.

    A damaged gzip stream raises :class:`~hhrlhf.errors.TruncatedStreamError` naming the
    last line read and how many were read, after yielding every line before it. A line past
    :func:`max_line_bytes` raises :class:`~hhrlhf.errors.DataFormatError` naming it, having
    read at most that much of it. Used by the reader and by ``hh clean`` (which copies kept
    lines byte for byte).
    """
    path = str(path)
    limit = max_line_bytes()
    lineno = 0
    f = open_data(path, threaded=threaded)
    try:
        readline = f.readline
        while True:
            try:
                line = readline(limit + 2)
            except _GZIP_ERRORS as exc:
                raise _stream_error(path, exc, lineno) from None
            if not line:
                return
            lineno += 1
            if len(line) > limit and len(line) - (line[-1:] == b"\n") > limit:
                raise DataFormatError(path, lineno, line_too_long(limit))
            yield lineno, line
    finally:
        f.close()
