"""What a transfer says on stderr: a progress bar on a terminal, plain lines otherwise."""

from __future__ import annotations

import sys
import time


def say(line: str) -> None:
    """One line on stderr, flushed."""
    print(line, file=sys.stderr, flush=True)


def human(n: float) -> str:
    """A byte count for people (``1.5 MB``)."""
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"  # pragma: no cover


class Progress:
    """A one-line progress bar on stderr (redrawn on a terminal, start/end lines otherwise)."""

    def __init__(self, label: str, total: int | None, done: int = 0):
        self.label = label
        self.total = total
        self.done = done
        self.start_done = done
        self.started = time.monotonic()
        self.last = 0.0
        self.tty = sys.stderr.isatty()
        if not self.tty:
            resumed = f" (resuming at {human(done)})" if done else ""
            size = f" {human(total)}" if total else ""
            print(f"downloading {label}{size}{resumed}", file=sys.stderr)
        else:
            self._draw()

    def update(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        if self.tty and now - self.last >= 0.1:
            self.last = now
            self._draw()
        elif not self.tty and now - self.last >= 10.0:  # a line every 10 s off a terminal
            if self.last:
                self._line()
            self.last = now

    def _line(self) -> None:
        of = f" of {human(self.total)}" if self.total else ""
        print(f"{self.label}: {human(self.done)}{of}", file=sys.stderr, flush=True)

    def _draw(self, end: str = "") -> None:
        elapsed = max(time.monotonic() - self.started, 1e-6)
        rate = (self.done - self.start_done) / elapsed
        if self.total:
            frac = min(self.done / self.total, 1.0)
            width = 24
            fill = int(frac * width)
            bar = f"[{'#' * fill}{'-' * (width - fill)}] {frac:4.0%} "
            amount = f"{human(self.done)}/{human(self.total)}"
        else:
            bar, amount = "", human(self.done)
        sys.stderr.write(f"\r{self.label} {bar}{amount} {human(rate)}/s\x1b[K{end}")
        sys.stderr.flush()

    def close(self) -> None:
        if self.tty:
            self._draw(end="\n")
        else:
            self._line()
