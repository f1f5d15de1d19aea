"""Progress of long work, the same way for the whole tool.

``progress(iterable, desc)`` (or ``progress(total=N, desc=...)`` and ``.update(n)``) shows a
tqdm bar on stderr when stderr is a terminal, and otherwise prints a line every
:data:`INTERVAL` seconds and one when the work ends, such as
``check harmless-base/train: 42,537 rows in 3.1 s``; work done in under :data:`SUMMARY_AFTER`
seconds prints nothing, since the command's own summary already says what it did. stdout is
never touched, so machine output stays clean.

The library is silent by default: the ``hh`` command turns progress on (:func:`enable`)
unless it is given ``--quiet``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator

__all__ = ["progress", "enable", "enabled", "Progress", "INTERVAL", "SUMMARY_AFTER"]

#: Seconds between two progress lines when stderr is not a terminal.
INTERVAL = 5.0

#: Off a terminal, work that ends sooner than this (in seconds) prints no closing line.
SUMMARY_AFTER = 1.0

_enabled = False


def enable(on: bool = True) -> None:
    """Turn progress output on (the ``hh`` command does, unless ``--quiet``) or off."""
    global _enabled
    _enabled = on


def enabled() -> bool:
    return _enabled


class Progress:
    """A bar (terminal), periodic lines (otherwise) or nothing (disabled); see :func:`progress`."""

    def __init__(self, iterable=None, *, total=None, desc: str = "", unit: str = "it"):
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)
        self.iterable, self.total, self.desc, self.unit = iterable, total, desc, unit
        self.n = 0
        self._start = self._last = time.monotonic()
        self._bar = None
        self._lines = False
        self._closed = False
        if not _enabled:
            return
        stream = sys.stderr
        if stream is not None and stream.isatty():
            from tqdm import tqdm

            self._bar = tqdm(
                total=total, desc=desc, unit=unit, unit_scale=True, leave=False, file=stream
            )
        else:
            self._lines = True

    def _count(self) -> str:
        if self.total:
            return f"{self.n:,}/{self.total:,} {self.unit} ({100 * self.n / self.total:.0f}%)"
        return f"{self.n:,} {self.unit}"

    def update(self, n: int = 1) -> None:
        self.n += n
        if self._bar is not None:
            self._bar.update(n)
        elif self._lines:
            now = time.monotonic()
            if now - self._last >= INTERVAL:
                self._last = now
                print(f"{self.desc}: {self._count()} ...", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._bar is not None:
            self._bar.close()
        elif self._lines:
            took = time.monotonic() - self._start
            if took < SUMMARY_AFTER:
                return
            print(
                f"{self.desc}: {self.n:,} {self.unit} in {took:.1f} s", file=sys.stderr, flush=True
            )

    def __iter__(self) -> Iterator:
        try:
            for item in self.iterable:
                yield item
                self.update(1)
        finally:
            self.close()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def progress(
    iterable: Iterable | None = None, *, total: int | None = None, desc: str = "", unit: str = "it"
) -> Progress:
    """Wrap ``iterable`` (or count to ``total`` with ``.update``) with progress on stderr."""
    return Progress(iterable, total=total, desc=desc, unit=unit)
