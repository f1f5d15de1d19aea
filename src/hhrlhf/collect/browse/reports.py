"""Red-team reports for the data browser: cached per filter set, at most a few computed at
once (:class:`ReportGate`); a request beyond that is refused at once, never queued."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import TypeVar

from ...errors import ReportBusy

REPORT_SLOTS = 2
#: what a refused report request is told to wait, in seconds
REPORT_RETRY_AFTER = 5
#: report numbers kept per data source (:attr:`DataIndex.reports`), and as many report pages
REPORT_CACHE = 8

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class ReportGate:
    """A cache in front of a costly computation, computing at most ``slots`` values at once.

    :meth:`get` answers from the cache when it can; otherwise it computes in the calling
    thread if a slot is free and nobody is computing the same key, else raises
    :class:`ReportBusy` at once (no thread waits for another's computation).
    """

    def __init__(self, slots: int = REPORT_SLOTS) -> None:
        self._slots = threading.BoundedSemaphore(slots)
        self._lock = threading.Lock()
        self._running: set[Hashable] = set()

    def get(self, cache: dict[K, V], key: K, compute: Callable[[], V]) -> V:
        value = cache.get(key)
        if value is not None:
            return value
        with self._lock:
            value = cache.get(key)
            if value is not None:
                return value
            if key in self._running:
                raise ReportBusy(
                    "this report is being computed; try again in a few seconds", REPORT_RETRY_AFTER
                )
            if not self._slots.acquire(blocking=False):
                raise ReportBusy(
                    "the server is computing other reports; try again shortly", REPORT_RETRY_AFTER
                )
            self._running.add(key)
        try:
            value = compute()
            _keep(cache, key, value, REPORT_CACHE)
            return value
        finally:
            with self._lock:
                self._running.discard(key)
            self._slots.release()


def _keep(cache: dict[K, V], key: K, value: V, size: int) -> None:
    """Keep ``value`` under ``key``, dropping the oldest entries past ``size`` (requests run in
    threads: another may drop the same entry first, which is fine)."""
    while len(cache) >= size:
        try:
            cache.pop(next(iter(cache)), None)
        except (StopIteration, RuntimeError):  # emptied or changed meanwhile
            break
    cache[key] = value
