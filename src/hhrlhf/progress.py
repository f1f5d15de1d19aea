"""Progress of long work, the same way for the whole tool.

``progress(iterable, desc)`` (or ``progress(total=N, desc=...)`` and ``.update(n)``) shows a
tqdm bar on stderr when stderr is a terminal, and otherwise prints a line every
:data:`INTERVAL` seconds and one when the work ends, such as
``check harmless-base/train: 42,537 rows in 3.1 s``; work done in under :data:`SUMMARY_AFTER`
seconds prints nothing, since the command's own summary already says what it did. stdout is
never touched, so machine output stays clean.

The library is silent by default: the ``hh`` command turns progress on (:func:`enable`)
unless it is given ``--quiet``, which also silences the progress bars of ``datasets`` and
``huggingface_hub`` (saving a ``DatasetDict``, loading a model): :func:`quiet_libraries`.

Counts are whole units (``3/40 iterations``, never ``3.00``), and work that ends early (a
fit that converges before its iteration limit) ends its bar at 100% with :meth:`Progress.finish`.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator

__all__ = [
    "progress",
    "enable",
    "enabled",
    "quiet_libraries",
    "Progress",
    "INTERVAL",
    "SUMMARY_AFTER",
]

#: Seconds between two progress lines when stderr is not a terminal.
INTERVAL = 5.0

#: Off a terminal, work that ends sooner than this (in seconds) prints no closing line.
SUMMARY_AFTER = 1.0

_enabled = False


#: Libraries whose own progress bars ``enable(False)`` turns off too: the module, the
#: environment variable it reads when imported, and its module holding the two switches.
_THIRD_PARTY = (
    ("datasets", "HF_DATASETS_DISABLE_PROGRESS_BARS", "datasets.utils"),
    ("huggingface_hub", "HF_HUB_DISABLE_PROGRESS_BARS", "huggingface_hub.utils"),
)
_silenced: dict[str, str] = {}  # module -> how: "env" (variable set) or "call"


def quiet_libraries(quiet: bool = True) -> None:
    """Turn the progress bars of ``datasets`` and ``huggingface_hub`` off (``quiet``) or back
    on, if this module turned them off. A library not imported yet is told by its environment
    variable (it is not imported here: that would slow every command down); one imported
    already, by its ``disable_progress_bars()``. A variable the user set is left alone."""
    import importlib

    for module, env, switches in _THIRD_PARTY:
        if quiet and module not in _silenced:
            if module in sys.modules:
                importlib.import_module(switches).disable_progress_bars()
                _silenced[module] = "call"
            elif env not in os.environ:
                os.environ[env] = "1"
                _silenced[module] = "env"
        elif not quiet and module in _silenced:
            how = _silenced.pop(module)
            if how == "env":
                os.environ.pop(env, None)
                if module not in sys.modules:
                    continue
            if os.environ.get(env) is None:
                importlib.import_module(switches).enable_progress_bars()


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

            # whole units: tqdm's unit_scale would show 3 iterations as "3.00"
            self._bar = tqdm(total=total, desc=desc, unit=" " + unit, leave=False, file=stream)
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

    def finish(self) -> None:
        """The work is done before the total (a fit that converged): the total becomes what
        was counted, so the bar ends at 100%."""
        if self.total is not None and self.n < self.total:
            self.total = self.n
            if self._bar is not None:
                self._bar.total = self.n
                self._bar.refresh()

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
