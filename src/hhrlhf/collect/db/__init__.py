"""The collection database: :class:`Storage` is its handle (the engines, one short transaction
per unit of work, the schema's migrations). The rules over it are the services
(:mod:`hhrlhf.collect.services`); the tables are :mod:`.models`.

The services are plain functions that take the storage first and block on the database. The
app's event loop runs them with :meth:`Storage.call`: on PostgreSQL on the loop itself, each
wait for the server an ``await`` on psycopg's async connection (SQLAlchemy's greenlet bridge,
the mechanism under its ``AsyncSession.run_sync``); on SQLite in a worker thread. A thread per
call woke a thread at every answer from the server, which then queued for the worker's GIL
(bench/RESULTS-collect.md, fifth pass)."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar

from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session as DBSession
from sqlalchemy.orm import sessionmaker

from ...errors import HHError
from .engine import (
    WriterLock,
    bookkeeping,
    is_sqlite,
    loop_share,
    make_engine,
    make_loop_engine,
    pool_limits,
    shown_url,
    sqlite_file,
)
from .models import Base

if TYPE_CHECKING:
    from alembic.config import Config
    from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = ["Storage", "Base", "MIGRATIONS"]

MIGRATIONS = Path(__file__).resolve().parent / "migrations"

#: PostgreSQL's bookkeeping commit: returns before its WAL is flushed; the next synchronous
#: commit flushes the log up to itself, this one included (SET LOCAL: this transaction only)
_ASYNC_COMMIT = text("SET LOCAL synchronous_commit TO OFF")

T = TypeVar("T")
P = ParamSpec("P")

#: the storage whose :meth:`Storage.call` is running this code on its event loop, or None
#: (a worker thread, the CLI, a test): its sessions then use that loop's async connections
_on_loop: ContextVar[Storage | None] = ContextVar("hh_storage_on_loop", default=None)


#: seconds :meth:`Storage.dispose` waits for another thread's loop to close its connections
DISPOSE_SECONDS = 10.0


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


@dataclass
class _LoopDB:
    """An event loop's way to PostgreSQL: its async engine, sessions on it, and the gate
    that admits as many units of work as the engine has connections."""

    engine: AsyncEngine
    sessions: sessionmaker[DBSession]
    gate: _FairGate


class _FairGate:
    """A semaphore that admits in order of arrival: a task arriving while others wait queues
    behind them even when a slot has just come free (its own, so that the order does not
    depend on the Python version's ``asyncio.Semaphore``)."""

    def __init__(self, slots: int):
        self._free = slots
        self._waiting: collections.deque[asyncio.Future[None]] = collections.deque()

    async def __aenter__(self) -> None:
        if self._free > 0 and not self._waiting:
            self._free -= 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        try:
            await waiter  # the slot is handed over by __aexit__
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._release()  # handed a slot while being cancelled: pass it on
            else:
                with contextlib.suppress(ValueError):  # not yet handed over: leave the queue
                    self._waiting.remove(waiter)
            raise

    async def __aexit__(self, *exc: object) -> None:
        self._release()

    def _release(self) -> None:
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the slot goes to the longest waiting
                return
        self._free += 1


class Storage:
    """The collection database's handle: its engines, its transactions, its migrations."""

    def __init__(self, url: str, *, connections: int | None = None):
        """``connections``: the most PostgreSQL connections this handle may hold (``hh
        serve`` gives each worker its share of ``db_connections``), split between its event
        loop's engine (:meth:`call`) and its threads' (:func:`.engine.loop_share`); None:
        each engine keeps 5 open and opens 10 more under load."""
        self.url = url
        self._postgres = not is_sqlite(url)
        threads = connections
        if self._postgres and connections is not None:
            # the event loop's pool holds most of the budget; worker threads (pages, the
            # CLI's work in the same process) the rest
            threads = connections - loop_share(connections)
        self.engine = make_engine(url, connections=threads)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        if is_sqlite(url):
            # writers queue on a lock (in this process, and across processes on the same file)
            # instead of SQLite's sleeping busy handler, which makes the tail latency of
            # concurrent writes long; readers never wait (WAL)
            self._write_lock: WriterLock | contextlib.nullcontext[None] = WriterLock(
                sqlite_file(url)
            )
            self.read_engine = make_engine(url, writer=False)
        else:
            self._write_lock = contextlib.nullcontext()
            self.read_engine = self.engine
        self._readers = sessionmaker(self.read_engine, expire_on_commit=False)
        self._connections = connections
        #: PostgreSQL: an async engine (and its sessions) per event loop that called
        #: :meth:`call`: a server worker has one; a test's clients each run their own
        self._loops: dict[asyncio.AbstractEventLoop, _LoopDB] = {}

    # -- units of work from the event loop ---------------------------------------------
    async def call(
        self, fn: Callable[Concatenate[Storage, P], T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """``fn(self, *args, **kwargs)`` (a service function: plain code that blocks on this
        database) without blocking the event loop: on PostgreSQL on the loop, its database
        waits awaited; on SQLite in a worker thread (SQLite's calls are in-process file I/O,
        and its writers take a file lock).

        On PostgreSQL no more units run at once than the loop's pool has connections; the
        others wait their turn in order of arrival (the pool's own queue lets a newcomer take
        a connection just returned before those already waiting, which left a few waiting
        for a second or more when every connection was busy: bench/RESULTS-collect.md)."""
        if not self._postgres:
            import anyio.to_thread

            return await anyio.to_thread.run_sync(functools.partial(fn, self, *args, **kwargs))
        from sqlalchemy.util import greenlet_spawn

        db = await self._loop_db()
        async with db.gate:
            token = _on_loop.set(self)
            try:
                return await greenlet_spawn(functools.partial(fn, self, *args, **kwargs))
            finally:
                _on_loop.reset(token)

    async def _loop_db(self) -> _LoopDB:
        """The running loop's async engine, made on its first call; those of loops that have
        closed since (a test's earlier clients) are disposed of."""
        loop = asyncio.get_running_loop()
        found = self._loops.get(loop)
        if found is not None:
            return found
        for old in [x for x in self._loops if x.is_closed()]:
            await self._loops.pop(old).engine.dispose()
        connections = None if self._connections is None else loop_share(self._connections)
        engine = make_loop_engine(self.url, connections=connections)
        slots = sum(pool_limits(connections))  # every connection the loop's pool may open
        db = _LoopDB(
            engine, sessionmaker(engine.sync_engine, expire_on_commit=False), _FairGate(slots)
        )
        self._loops[loop] = db
        return db

    async def close_loop(self) -> None:
        """Close the running loop's database connections (the app's shutdown)."""
        found = self._loops.pop(asyncio.get_running_loop(), None)
        if found is not None:
            await found.engine.dispose()

    def _maker(self, default: sessionmaker[DBSession]) -> sessionmaker[DBSession]:
        """The loop's sessions inside :meth:`call` on PostgreSQL, else ``default``."""
        if _on_loop.get() is self:
            return self._loops[asyncio.get_running_loop()].sessions
        return default

    # -- schema ---------------------------------------------------------------------------
    def _alembic_config(self, connection: Connection | None) -> Config:
        from alembic.config import Config

        cfg = Config()
        cfg.set_main_option("script_location", str(MIGRATIONS))
        cfg.set_main_option("sqlalchemy.url", self.url.replace("%", "%%"))
        cfg.attributes["connection"] = connection
        return cfg

    def upgrade(self, revision: str = "head") -> None:
        """Create or migrate the database (``alembic upgrade head``)."""
        from alembic import command

        with self.engine.begin() as connection:
            command.upgrade(self._alembic_config(connection), revision)

    def downgrade(self, revision: str = "base") -> None:
        from alembic import command

        with self.engine.begin() as connection:
            command.downgrade(self._alembic_config(connection), revision)

    def revision(self) -> str | None:
        """The database's migration revision (None for an empty database)."""
        from alembic.runtime.migration import MigrationContext

        with self.engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()

    def head(self) -> str:
        from alembic.script import ScriptDirectory

        head = ScriptDirectory.from_config(self._alembic_config(None)).get_current_head()
        if head is None:  # the package ships its migrations: never so
            raise HHError(f"{MIGRATIONS}: no migration found")
        return head

    def check_current(self) -> None:
        current = self.revision()
        if current != self.head():
            raise HHError(
                f"{shown_url(self.url)}: database schema is at {current or 'nothing'}, the "
                f"code needs {self.head()}; run `hh serve` (it migrates) first"
            )

    def dispose(self) -> None:
        if isinstance(self._write_lock, WriterLock):
            self._write_lock.close()
        self.engine.dispose()
        self.read_engine.dispose()
        # each loop's async connections are closed on that loop: one running in another
        # thread (a test's client) is asked to; those of a closed loop (its app's shutdown
        # closed them: :meth:`close_loop`) or of the loop calling this (which cannot wait
        # here) are dropped, and close when they are collected
        here = _running_loop()
        while self._loops:
            loop, db = self._loops.popitem()
            engine = db.engine
            if loop.is_closed() or loop is here:
                continue
            if loop.is_running():
                asyncio.run_coroutine_threadsafe(engine.dispose(), loop).result(DISPOSE_SECONDS)
            else:
                loop.run_until_complete(engine.dispose())

    def read(self) -> DBSession:
        """A session for reading (SQLite: a deferred transaction, concurrent with a writer)."""
        return self._maker(self._readers)()

    @contextlib.contextmanager
    def write(self, *, durable: bool = True) -> Iterator[DBSession]:
        """One write transaction, committed on exit (SQLite: BEGIN IMMEDIATE, one writer at a time).

        ``durable=False``: state the app can redo after a power loss (a lease, generated
        candidates, a login session): SQLite commits it with NORMAL sync (see
        :func:`.engine.bookkeeping`), PostgreSQL with ``synchronous_commit`` off. Either way a
        crash of the app loses nothing, a crash of the machine or the database server at most
        the last fraction of a second of such commits, and each durable commit (a choice, a
        message, a finish) makes every earlier one durable too.
        """
        with contextlib.ExitStack() as stack:
            # (SQLite's flag is per thread: on PostgreSQL, units of work interleave as greenlets
            # in the loop's thread, and one's restore would undo another's)
            if not durable and not self._postgres:
                stack.enter_context(bookkeeping())
            with self._write_lock, self._maker(self._sessions)() as s, s.begin():
                if not durable and self._postgres:
                    s.execute(_ASYNC_COMMIT)
                yield s

    def session(self) -> DBSession:
        """A plain session (no lock, no transaction): for tests and tools that add rows by hand."""
        return self._sessions()
