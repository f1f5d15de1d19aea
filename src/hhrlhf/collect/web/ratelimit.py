"""Rate limits: a sliding window of requests per key, answered with 429 and Retry-After.

Three limits: logins per client address (``rate_login_per_minute``; guessing tokens through
``/login`` is slow), state-changing requests per annotator (``rate_writes_per_minute``; a
leaked token or a runaway script cannot flood the database) and reads per annotator
(``rate_reads_per_minute``: every authenticated GET; a heavy one, a whole conversation, counts
as several). 0 turns a limit off. A fourth budget, the characters of markdown a worker renders
for an annotator each minute (``render_chars_per_minute``, :class:`CharBudget`), is this
worker's alone: it bounds the CPU one annotator takes from the others here.

Each worker process keeps its own windows (a request is checked without a query) and shares
its counts through the database about once a second (:meth:`Limits.share`,
``services.ratecounts``: per key and minute). A key is refused by every worker once its
count over all workers and hosts in the last 60 seconds reaches the limit, estimated from
this minute's count and the last minute's weighted by the part of it still in those 60
seconds (so a burst across a minute's end is not let through twice). Between two shares a
key can go over by what the other workers let through in that second.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from ...errors import RateLimited
from ..services import ratecounts
from ..services.ratecounts import Key

if TYPE_CHECKING:
    from ..db import Storage

__all__ = ["RateLimited", "RateLimiter", "Limits"]


class RateLimiter:
    """At most ``limit`` hits per key in any ``window`` seconds."""

    def __init__(
        self, limit: int, window: float = 60.0, clock: Callable[[], float] = time.monotonic
    ):
        self.limit = limit
        self.window = window
        self.clock = clock
        self._hits: dict[str, deque[float]] = {}
        self._lock = threading.Lock()
        self._calls = 0

    def hit(self, key: str, weight: int = 1) -> int | None:
        """Count a request of ``weight`` hits (at most the limit); None when allowed, else the
        seconds until it would be."""
        if self.limit <= 0:
            return None
        weight = min(max(1, weight), self.limit)
        t = self.clock()
        with self._lock:
            self._calls += 1
            if self._calls % 1024 == 0:
                self._prune(t)
            q = self._hits.setdefault(key, deque())
            while q and q[0] <= t - self.window:
                q.popleft()
            if len(q) + weight > self.limit:
                # the hit whose leaving makes room for this one
                return max(1, math.ceil(q[len(q) + weight - self.limit - 1] + self.window - t))
            q.extend([t] * weight)
            return None

    def fill(self, key: str) -> int:
        """Count ``key`` up to the limit now (a heavy request refused: what it would have
        cost is counted all the same, so the next ones are refused before their work);
        returns how many hits were added."""
        if self.limit <= 0:
            return 0
        t = self.clock()
        with self._lock:
            q = self._hits.setdefault(key, deque())
            added = max(0, self.limit - len(q))
            q.extend([t] * added)
            return added

    def wait(self, key: str) -> int:
        """The seconds until one more hit of ``key`` would be allowed (0: now); counts nothing."""
        if self.limit <= 0:
            return 0
        t = self.clock()
        with self._lock:
            q = self._hits.get(key)
            live = [x for x in q if x > t - self.window] if q else []
            if len(live) < self.limit:
                return 0
            return max(1, math.ceil(live[len(live) - self.limit] + self.window - t))

    def _prune(self, t: float) -> None:
        for key in [k for k, q in self._hits.items() if not q or q[-1] <= t - self.window]:
            del self._hits[key]


class Limits:
    """The app's limits (``AppContext.limits``): each worker's windows, and the counts of
    every worker as last shared (``worker``: this process's id in the shared counts)."""

    def __init__(
        self,
        login_per_minute: int,
        writes_per_minute: int,
        clock: Callable[[], float] = time.monotonic,
        *,
        worker: str = "local",
        wall: Callable[[], float] = time.time,
        reads_per_minute: int = 0,
        render_chars_per_minute: int = 0,
    ):
        self.login = RateLimiter(login_per_minute, 60.0, clock)
        self.writes = RateLimiter(writes_per_minute, 60.0, clock)
        self.reads = RateLimiter(reads_per_minute, 60.0, clock)
        self.renders = CharBudget(render_chars_per_minute, 60.0, clock)
        self.worker = worker
        self.wall = wall
        self._lock = threading.Lock()
        self._minute = int(wall() // 60)
        self._added: dict[tuple[str, str, int], int] = {}  # hits not shared yet, per minute
        # hits on their way to the database: counted here until the totals come back (else a
        # request in that moment sees neither them nor the totals holding them)
        self._sending: dict[tuple[str, str, int], int] = {}
        self._now: dict[Key, int] = {}  # every worker's hits this minute, as last shared
        self._before: dict[Key, int] = {}  # and in the minute before
        self._watched: set[Key] = set()  # the keys hit here this minute or the one before
        self._watched_before: set[Key] = set()

    def check_login(self, client: str) -> None:
        wait = self._hit(self.login, "login", client)
        if wait is not None:
            raise RateLimited(
                f"too many login attempts from this address; try again in {wait} s", wait
            )

    def check_write(self, annotator_id: int) -> None:
        wait = self._hit(self.writes, "writes", str(annotator_id))
        if wait is not None:
            raise RateLimited(f"too many requests; try again in {wait} s", wait)

    def check_read(self, annotator_id: int, weight: int = 1) -> None:
        """Count a read (a GET) of ``weight`` requests: a heavy route counts as several."""
        wait = self._hit(self.reads, "reads", str(annotator_id), weight)
        if wait is not None:
            raise RateLimited(f"too many requests; try again in {wait} s", wait)

    def take_render(self, annotator_id: int, chars: int) -> bool:
        """Whether this worker may render ``chars`` characters of markdown for the annotator
        now (and counts them); else the text is shown as plain text."""
        return self.renders.take(str(annotator_id), chars)

    def _hit(self, window: RateLimiter, kind: str, key: str, weight: int = 1) -> int | None:
        """None when the request is allowed (and counted), else the seconds to wait: until
        both the shared count and this worker's window let it through."""
        if window.limit <= 0:
            return None
        key = key[:128]
        weight = min(max(1, weight), window.limit)
        t = self.wall()
        with self._lock:
            self._turn_minute(int(t // 60))
            wait = self._shared_wait((kind, key), window.limit, t, weight)
            if wait is None:
                wait = window.hit(key, weight)
                counted = weight if wait is None else 0
            else:
                wait, counted = max(wait, window.wait(key)), 0
            if wait is not None and weight > 1:
                # a heavy request refused counts as the limit's worth all the same: the next
                # ones are refused before their work, until the window has room
                counted = window.fill(key)
                wait = max(wait, window.wait(key))
            if counted:
                at = (kind, key, self._minute)
                self._added[at] = self._added.get(at, 0) + counted
                self._watched.add((kind, key))
            return wait

    def _turn_minute(self, minute: int) -> None:
        """A new minute: this one's counts become the minute before's (or none, after a gap)."""
        if minute == self._minute:
            return
        if minute == self._minute + 1:
            before = dict(self._now)
            for pending in (self._added, self._sending):
                for (kind, key, at), n in pending.items():
                    if at == self._minute:
                        before[kind, key] = before.get((kind, key), 0) + n
            self._before, self._watched_before = before, self._watched
        else:
            self._before, self._watched_before = {}, set()
        self._minute, self._now, self._watched = minute, {}, set()

    def _shared_wait(self, k: Key, limit: int, t: float, weight: int = 1) -> int | None:
        """The seconds until ``k``'s count over every worker in the last 60 s (estimated),
        with ``weight`` more, is within ``limit`` again; None when it is now."""
        minute = self._minute
        at_k = (*k, minute)
        now = self._now.get(k, 0) + self._added.get(at_k, 0) + self._sending.get(at_k, 0)
        before = self._before.get(k, 0)
        into = t - 60 * minute  # seconds into this minute
        room = limit - weight + 1  # the count must be under this, weighted, to let it in
        if before * (1 - into / 60) + now < room:
            return None
        if now < room:
            # the minute before's share falls as this minute goes on
            at = (1 - (room - now) / before) * 60
        else:
            # this minute's count becomes the minute before's, then falls in its turn
            at = 60 + (1 - room / now) * 60
        return max(1, math.floor(at - into) + 1)  # past the moment it is exactly at the limit

    def share(self, storage: Storage) -> bool:
        """Add this worker's new counts to the database and read every worker's for the keys
        hit here this minute or the one before (one write transaction; nothing when no key
        was). True when it shared."""
        with self._lock:
            self._turn_minute(int(self.wall() // 60))  # keys idle for two minutes: none left
            watched = self._watched | self._watched_before
            if not watched:
                return False
            minute, added = self._minute, self._added
            self._added, self._sending = {}, added
        try:
            totals = ratecounts.share_counts(storage, self.worker, minute, added, watched)
        except Exception:
            with self._lock:  # counted again at the next share
                for at, n in added.items():
                    self._added[at] = self._added.get(at, 0) + n
                self._sending = {}
            raise
        with self._lock:
            if self._minute == minute:
                for k, (before, now) in totals.items():
                    self._before[k], self._now[k] = before, now
            self._sending = {}
        return True


class CharBudget:
    """At most ``limit`` characters per key in any ``window`` seconds (0: no limit)."""

    def __init__(
        self, limit: int, window: float = 60.0, clock: Callable[[], float] = time.monotonic
    ):
        self.limit = limit
        self.window = window
        self.clock = clock
        self._spent: dict[str, deque[tuple[float, int]]] = {}
        self._sums: dict[str, int] = {}
        self._lock = threading.Lock()

    def take(self, key: str, chars: int) -> bool:
        if self.limit <= 0:
            return True
        t = self.clock()
        with self._lock:
            q = self._spent.setdefault(key, deque())
            total = self._sums.get(key, 0)
            while q and q[0][0] <= t - self.window:
                total -= q.popleft()[1]
            if total + chars > self.limit:
                self._sums[key] = total
                return False
            q.append((t, chars))
            self._sums[key] = total + chars
            if len(self._spent) > 4096:
                for old in [
                    k for k, v in self._spent.items() if not v or v[-1][0] <= t - self.window
                ]:
                    del self._spent[old], self._sums[old]
            return True
