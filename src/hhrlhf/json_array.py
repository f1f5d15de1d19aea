"""The JSON array reader: a file holding one top-level JSON array (the red-team file) decoded
one element at a time, so memory stays flat on any file size, with every problem named by
its record (1-based) and a broken gzip stream named as such (:mod:`hhrlhf.file_stream`).
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any, BinaryIO, cast

from .errors import DataFormatError
from .file_stream import _GZIP_ERRORS, _row_error, _stream_error, open_data

__all__ = ["read_array"]

#: Characters read at a time.
_CHUNK = 1 << 20


class _ArrayText:
    """The array's text as it is read: a buffer, the position in it, and the records
    decoded so far (what an error names)."""

    def __init__(self, path: str, text: io.TextIOWrapper) -> None:
        self.path = path
        self.text = text
        self.buf = ""
        self.pos = 0
        self.eof = False
        self.record = 0
        self.decoder = json.JSONDecoder()

    def fill(self) -> bool:
        """Read more text after what is left of the buffer; False at the end of the file."""
        try:
            chunk = self.text.read(_CHUNK)
        except _GZIP_ERRORS as exc:
            raise _stream_error(self.path, exc, self.record, "record") from None
        except UnicodeDecodeError as exc:
            raise self.error(self.record + 1, f"invalid UTF-8 ({exc})") from None
        if not chunk:
            self.eof = True
            return False
        self.buf = self.buf[self.pos :] + chunk
        self.pos = 0
        return True

    def skip_ws(self) -> None:
        """Move past blanks, reading more text as needed."""
        while True:
            buf, pos = self.buf, self.pos
            n = len(buf)
            while pos < n and buf[pos] in " \t\r\n":
                pos += 1
            self.pos = pos
            if pos < n or not self.fill():
                return

    def peek(self) -> str:
        """The next character ("" at the end)."""
        return self.buf[self.pos : self.pos + 1]

    def error(self, record: int, problem: str) -> DataFormatError:
        return _row_error(self.path, record, problem, unit="record")

    def open(self) -> None:
        """Move past the opening ``[``; an error when there is no array or it is empty."""
        self.fill()
        self.skip_ws()
        if self.peek() != "[":  # detect_container already checked; defensive
            raise DataFormatError(self.path, None, "expected a JSON array")
        self.pos += 1
        self.skip_ws()
        if self.peek() == "]":
            raise DataFormatError(self.path, None, "empty JSON array (no records)")

    def element(self) -> Any:
        """Decode the next element, reading more text until it is complete."""
        while True:
            try:
                obj, end = self.decoder.raw_decode(self.buf, self.pos)
                # a number or literal cut at the buffer's edge could parse short
                if end == len(self.buf) and not self.eof and self.fill():
                    continue
                break
            except json.JSONDecodeError as exc:
                if not self.eof and self.fill():
                    continue
                ends = "; the file ends inside the array" if exc.pos >= len(self.buf) - 1 else ""
                raise self.error(
                    self.record + 1, f"invalid JSON in array element ({exc.msg}){ends}"
                ) from None
        self.record += 1
        self.pos = end
        return obj

    def at_end(self) -> bool:
        """After an element: True past the closing ``]`` (nothing may follow it), False past
        a ``,``; an error on anything else."""
        self.skip_ws()
        c = self.peek()
        if c == ",":
            self.pos += 1
            return False
        if c == "]":
            self.pos += 1
            self.skip_ws()
            if self.pos < len(self.buf):
                raise self.error(self.record, "unexpected data after the closing ']'")
            return True
        if not c:
            raise self.error(self.record, "the file ends inside the array (missing ']')")
        raise self.error(self.record + 1, f"expected ',' or ']' between records, found {c!r}")


def read_array(path: str) -> Iterator[tuple[int, Any]]:
    """``(record, object)`` of a top-level JSON array, element by element (constant memory)."""
    raw = open_data(path)
    text = io.TextIOWrapper(cast(BinaryIO, raw), encoding="utf-8", errors="strict")
    array = _ArrayText(path, text)
    try:
        array.open()
        while True:
            array.skip_ws()
            obj = array.element()
            yield array.record, obj
            if array.at_end():
                return
    finally:
        text.close()
