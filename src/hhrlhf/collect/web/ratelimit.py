"""Per-token rate limits: a sliding window of requests per key, answered with 429 and Retry-After.

Two limits: logins per client address (``rate_login_per_minute``; guessing tokens through
``/login`` is slow) and state-changing requests per annotator (``rate_writes_per_minute``; a
leaked token or a runaway script cannot flood the database). The windows live in each worker
process: with N workers a key may reach N times the limit before every worker refuses it, which
still bounds it. 0 turns a limit off.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable

from ...errors import RateLimited

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

    def hit(self, key: str) -> int | None:
        """Count one request; None when allowed, else the seconds until the next is allowed."""
        if self.limit <= 0:
            return None
        t = self.clock()
        with self._lock:
            self._calls += 1
            if self._calls % 1024 == 0:
                self._prune(t)
            q = self._hits.setdefault(key, deque())
            while q and q[0] <= t - self.window:
                q.popleft()
            if len(q) >= self.limit:
                return max(1, math.ceil(q[0] + self.window - t))
            q.append(t)
            return None

    def _prune(self, t: float) -> None:
        for key in [k for k, q in self._hits.items() if not q or q[-1] <= t - self.window]:
            del self._hits[key]


class Limits:
    """The app's limits (``app.state.limits``)."""

    def __init__(self, login_per_minute: int, writes_per_minute: int, clock=time.monotonic):
        self.login = RateLimiter(login_per_minute, 60.0, clock)
        self.writes = RateLimiter(writes_per_minute, 60.0, clock)

    def check_login(self, client: str) -> None:
        wait = self.login.hit(client)
        if wait is not None:
            raise RateLimited(
                f"too many login attempts from this address; try again in {wait} s", wait
            )

    def check_write(self, annotator_id: int) -> None:
        wait = self.writes.hit(str(annotator_id))
        if wait is not None:
            raise RateLimited(f"too many requests; try again in {wait} s", wait)
