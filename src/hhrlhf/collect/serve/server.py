"""The HTTP protocol ``hh serve`` runs: uvicorn's own, with a deadline for a request's headers
and a cap on open connections.

uvicorn closes a connection that stays idle after a response (``timeout_keep_alive``), but a
connection that never finishes its first request's headers has no deadline, and nothing caps
how many are open: a few hundred sockets trickling bytes would stay forever. Here:

- a connection must send a request's complete headers within ``header_timeout`` seconds of
  opening, or of its previous response; otherwise it is closed (a request being answered, an
  event stream included, is never cut);
- past ``max_connections`` open connections, a new one closes the oldest connection still
  waiting for its headers (or itself, when none is), so idle sockets cannot crowd out
  requests that are being made.

Both are ``hh serve --header-timeout/--max-connections``, read once per worker process from
its :class:`~.options.ServeOptions`.
"""

from __future__ import annotations

import asyncio
import functools
import time
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from .options import HEADER_TIMEOUT, MAX_CONNECTIONS, ServeOptions

__all__ = ["HEADER_TIMEOUT", "MAX_CONNECTIONS", "GuardedH11Protocol", "guarded_protocol"]


@functools.cache
def _limits() -> tuple[float, int]:
    """This worker's header deadline and connection cap (its environment does not change)."""
    options = ServeOptions.from_env()
    return options.header_timeout, options.max_connections


class _HeaderDeadline:
    """Mixin over a uvicorn HTTP protocol (``cycle``, ``loop``, ``transport``, ``connections``):
    put it first in the bases, so its hooks run around the protocol's own."""

    cycle: Any
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport
    connections: set[Any]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._guard_setup()

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        self._arm()
        self._make_room()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)  # type: ignore[misc]

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        if not self.transport.is_closing():
            self._arm()

    def _guard_setup(self) -> None:
        self.header_timeout, self.max_connections = _limits()
        self._header_timer: asyncio.TimerHandle | None = None
        self._armed_cycle: object = None
        self._waiting_since = time.monotonic()

    def _arm(self) -> None:
        self._disarm()
        self._armed_cycle = self.cycle
        self._waiting_since = time.monotonic()
        self._header_timer = self.loop.call_later(self.header_timeout, self._header_deadline)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def waiting_for_headers(self) -> bool:
        """No request started since the deadline was set, and none is being answered."""
        cycle = self.cycle
        return cycle is self._armed_cycle and (
            cycle is None or bool(getattr(cycle, "response_complete", True))
        )

    def _header_deadline(self) -> None:
        self._header_timer = None
        if self.waiting_for_headers() and not self.transport.is_closing():
            self.transport.close()

    def _make_room(self) -> None:
        if len(self.connections) <= self.max_connections:
            return
        live = [p for p in self.connections if not p.transport.is_closing()]
        if len(live) <= self.max_connections:  # the rest are closing already
            return
        idle = [
            p
            for p in live
            if p is not self and isinstance(p, _HeaderDeadline) and p.waiting_for_headers()
        ]
        victim = min(idle, key=lambda p: p._waiting_since, default=self)
        victim.transport.close()


class GuardedH11Protocol(_HeaderDeadline, H11Protocol):
    """uvicorn's h11 protocol with the header deadline and the connection cap."""


try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # httptools is not installed: uvicorn runs h11
    HttpToolsProtocol = None  # type: ignore[assignment, misc]

if HttpToolsProtocol is not None:

    class GuardedHttpToolsProtocol(_HeaderDeadline, HttpToolsProtocol):
        """uvicorn's httptools protocol with the header deadline and the connection cap."""


def guarded_protocol() -> str:
    """The protocol for ``uvicorn.run(http=...)``, as an import string (workers import it):
    httptools' when it is installed (what uvicorn would pick), else h11's, with the guards."""
    if HttpToolsProtocol is not None:
        return "hhrlhf.collect.serve.server:GuardedHttpToolsProtocol"
    return "hhrlhf.collect.serve.server:GuardedH11Protocol"
