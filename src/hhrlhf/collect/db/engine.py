"""Engine setup: SQLite with WAL, ``synchronous=FULL``, foreign keys and a busy timeout; PostgreSQL by URL."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import select
import threading
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, DisconnectionError

from ...errors import HHError

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = [
    "make_engine",
    "make_loop_engine",
    "loop_share",
    "prepare_threshold",
    "pool_sizes",
    "pool_limits",
    "worker_connections",
    "is_sqlite",
    "bookkeeping",
    "WriterLock",
    "sqlite_file",
    "count_statements",
]

BUSY_TIMEOUT_MS = 10_000
#: database connections of an engine made without a budget (the CLI's commands, a lone
#: ``Storage``): kept open, and extra under load
POOL_SIZE = 5
MAX_OVERFLOW = 10
#: PostgreSQL connections one ``hh serve`` host may hold, all its workers together
#: (``db_connections``): each worker's pool gets its share (:func:`pool_sizes`)
DB_CONNECTIONS = 40
#: seconds a request waits for a free pooled connection before it is refused (503, Retry-After)
POOL_TIMEOUT = 30.0


#: the statement tally of the unit of work running now (a request: its thread-pool calls and
#: the tasks it starts share it, since both copy the context), or None: not counted
_tally: ContextVar[list[int] | None] = ContextVar("hh_statement_tally", default=None)


@contextlib.contextmanager
def count_statements() -> Iterator[list[int]]:
    """Count the SQL statements sent inside (this context and what it hands work to):
    ``[n]``, read when the block ends or while it runs."""
    tally = [0]
    token = _tally.set(tally)
    try:
        yield tally
    finally:
        _tally.reset(token)


@event.listens_for(Engine, "before_cursor_execute")
def _count(*_args: Any) -> None:
    tally = _tally.get()
    if tally is not None:
        tally[0] += 1


def is_sqlite(url: str) -> bool:
    return str(url).startswith("sqlite")


def sqlite_file(url: str) -> Path | None:
    """The database file of a SQLite URL (None for an in-memory database or another kind)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database:
        return None
    if parsed.database == ":memory:" or parsed.database.startswith("file:"):
        return None
    return Path(parsed.database).expanduser()


class WriterLock:
    """One SQLite writer at a time: a thread lock in this process, then ``flock`` across processes.

    Without the second lock, writers of different ``hh serve`` workers meet in SQLite's busy
    handler, which sleeps and retries (up to 100 ms a sleep): a writer of one worker can lose
    to a queue of the other's again and again, for a second or more. A blocked ``flock`` is
    woken when the lock is released. The lock file (``<database>-writer``) holds nothing; a
    killed process's lock goes with it.
    """

    def __init__(self, database: Path | None):
        self._thread = threading.Lock()
        self._path = None if database is None else Path(f"{database}-writer")
        self._fd: int | None = None

    def __enter__(self) -> WriterLock:
        self._thread.acquire()
        if self._path is None:
            return self
        try:
            if self._fd is None:
                try:
                    self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
                except OSError:
                    # a read-only folder: SQLite's own locking still holds (and says what fails)
                    self._path = None
                    return self
            fcntl.flock(self._fd, fcntl.LOCK_EX)
        except BaseException:
            self._thread.release()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self._fd is not None:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            self._thread.release()

    def close(self) -> None:
        with self._thread:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def _sqlite_pragmas(dbapi_connection: Any, record: Any) -> None:
    # the driver's own transaction handling would delay BEGIN; SQLAlchemy emits it (below)
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    # FULL: an acknowledged choice survives a power loss, not only a crash (bookkeeping
    # transactions switch to NORMAL for themselves: see bookkeeping())
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    cursor.close()
    record.info[_SYNC] = "FULL"


#: the connection's ``synchronous`` level now (in its pool entry's info): set only on a change
_SYNC = "hh_synchronous"


_local = threading.local()


@contextlib.contextmanager
def bookkeeping() -> Iterator[None]:
    """SQLite write transactions begun inside (in this thread) commit with ``synchronous=NORMAL``.

    For state that a power loss only makes the app redo (a generation lease, generated
    candidates, login sessions): a crash of the app still loses nothing, and the next FULL
    commit (every choice, message and finish is one) makes these WAL frames durable too, since
    it syncs the log up to itself.
    """
    before = getattr(_local, "bookkeeping", False)
    _local.bookkeeping = True
    try:
        yield
    finally:
        _local.bookkeeping = before


def _sqlite_begin(conn: Connection) -> None:
    level = "NORMAL" if getattr(_local, "bookkeeping", False) else "FULL"
    if conn.info.get(_SYNC) != level:
        conn.exec_driver_sql(f"PRAGMA synchronous={level}")
        conn.info[_SYNC] = level
    # take the write lock up front: two writers never deadlock upgrading a read lock
    conn.exec_driver_sql("BEGIN IMMEDIATE")


def _sqlite_begin_deferred(conn: Connection) -> None:
    conn.exec_driver_sql("BEGIN")


def pool_sizes(connections: int) -> tuple[int, int]:
    """``(pool size, overflow)`` for an engine allowed ``connections`` (at least 2): all of
    them in the pool, opened as the load first needs them and then kept. (Overflow
    connections are closed as soon as they are returned, so a load above the pool size would
    start a PostgreSQL backend per transaction.)"""
    return max(2, connections), 0


def worker_connections(db_connections: int, workers: int) -> int:
    """Each worker's share of a host's ``db_connections`` (at least 2)."""
    return max(2, db_connections // max(1, workers))


#: the ``--db`` URL's query parameter (psycopg's name) for server-side prepared statements
PREPARE_PARAM = "prepare_threshold"
#: psycopg's default: a statement run this many times on a connection is prepared on the
#: server, which then parses and plans it once per connection (about 40% of PostgreSQL's
#: CPU per turn saved: bench/RESULTS-collect.md)
PREPARE_THRESHOLD = 5


def prepare_threshold(url: str, value: str | tuple[str, ...] | None) -> int | None:
    """``?prepare_threshold=`` of a PostgreSQL URL: ``none`` turns prepared statements off
    (needed behind a transaction-mode pooler that cannot carry them: PgBouncer before 1.21,
    or later without ``max_prepared_statements``); a number is how many runs of a statement
    come before it is prepared; absent, :data:`PREPARE_THRESHOLD`."""
    if value is None:
        return PREPARE_THRESHOLD
    if isinstance(value, tuple):
        raise HHError(f"--db {shown_url(url)}: {PREPARE_PARAM} is given more than once")
    if value.strip().lower() in ("none", "off"):
        return None
    try:
        number = int(value)
    except ValueError:
        number = -1
    if number < 0:
        raise HHError(
            f"--db {shown_url(url)}: {PREPARE_PARAM}={value!r} is not a number of runs "
            "(0 or more) or none"
        )
    return number


def make_engine(url: str, *, writer: bool = True, connections: int | None = None) -> Engine:
    """A SQLAlchemy engine for ``url`` (``sqlite:///path.db`` or ``postgresql+psycopg://...``).

    SQLite: ``writer`` engines start every transaction with ``BEGIN IMMEDIATE``; the others
    with a plain (deferred) ``BEGIN``, for reads that never block on a writer under WAL.
    """
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError) as exc:  # not a URL; a port that is not a number
        raise HHError(
            f"--db {shown_url(url)!r}: not a database URL (e.g. sqlite:///hh-collect.db)"
        ) from exc
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database
        if database and database != ":memory:":
            folder = Path(database).expanduser().resolve().parent
            if not folder.is_dir():
                raise HHError(f"--db {shown_url(url)}: folder {folder} does not exist")
        pool = {}
        if database and database != ":memory:" and not database.startswith("file:"):
            pool = dict(pool_size=POOL_SIZE, max_overflow=MAX_OVERFLOW, pool_timeout=POOL_TIMEOUT)
        engine = create_engine(
            parsed,
            connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000},
            **pool,
        )
        event.listen(engine, "connect", _sqlite_pragmas)
        event.listen(engine, "begin", _sqlite_begin if writer else _sqlite_begin_deferred)
        return engine
    if parsed.get_backend_name() == "postgresql":
        if parsed.drivername == "postgresql":
            parsed = parsed.set(drivername="postgresql+psycopg")
        from ...errors import require

        require("psycopg", "postgres", "a PostgreSQL database")
        engine = create_engine(
            parsed.difference_update_query([PREPARE_PARAM]),
            **_postgres_options(url, parsed, connections),
        )
        event.listen(engine, "checkout", _check_idle)
        return engine
    raise HHError(
        f"--db {shown_url(url)}: only sqlite:/// and postgresql+psycopg:// URLs are supported"
    )


def shown_url(url: str) -> str:
    """``url`` as messages and logs show it: its password, if any, as ``***`` (the rest as
    typed; a password's own ``@`` is ``%40`` in a URL)."""
    return _PASSWORD.sub(r"\1***@", url, count=1)


#: a URL's ``scheme://user:`` and the password after it, up to the ``@``
_PASSWORD = re.compile(r"^([\w+.-]+://[^:@/?#]*:)[^@]*@")


def pool_limits(connections: int | None) -> tuple[int, int]:
    """``(pool size, overflow)`` of a PostgreSQL engine allowed ``connections`` (None: no
    budget, :data:`POOL_SIZE` kept and :data:`MAX_OVERFLOW` more under load)."""
    return (POOL_SIZE, MAX_OVERFLOW) if connections is None else pool_sizes(connections)


def _postgres_options(url: str, parsed: URL, connections: int | None) -> dict[str, Any]:
    keep, extra = pool_limits(connections)
    threshold = prepare_threshold(url, parsed.query.get(PREPARE_PARAM))
    return dict(
        pool_size=keep,
        max_overflow=extra,
        pool_timeout=POOL_TIMEOUT,
        connect_args={"prepare_threshold": threshold},
    )


def loop_share(connections: int) -> int:
    """Of a PostgreSQL handle's ``connections``, those of its event loop's engine (the
    collection app's requests and generation: :meth:`.Storage.call`); the rest (at least 2)
    are for work in threads."""
    return max(2, connections - max(2, connections // 4))


def make_loop_engine(url: str, *, connections: int | None = None) -> AsyncEngine:
    """An async engine on the same PostgreSQL database, with the same pool settings as
    :func:`make_engine`'s, through psycopg's async connections: what :meth:`.Storage.call`
    runs the services on inside an event loop."""
    from ...errors import require

    require("greenlet", "postgres", "a PostgreSQL database")
    from sqlalchemy.ext.asyncio import create_async_engine

    parsed = make_url(url).set(drivername="postgresql+psycopg_async")
    engine = create_async_engine(
        parsed.difference_update_query([PREPARE_PARAM]),
        **_postgres_options(url, parsed, connections),
    )
    event.listen(engine.sync_engine, "checkout", _check_idle)
    return engine


def _check_idle(dbapi_connection: Any, record: Any, proxy: Any) -> None:
    """A pooled PostgreSQL connection's check as the pool lends it, without a round trip.

    An idle connection has nothing to read: PostgreSQL sends nothing between transactions
    unless it is ending the session (a restart, ``pg_terminate_backend``, an idle timeout, a
    pooler going away), and then the socket is readable (the error, or its end). Such a
    connection is replaced before the unit of work starts (SQLAlchemy's checkout retry), as
    a pre-ping would, but without a statement: a ``SELECT 1`` per transaction is a round trip,
    and on the event loop each round trip waits a turn of a busy loop. A connection that
    died silently (no packet reached this host) is found by its first statement instead, as
    it would hang a ping; that request is refused with "nothing was saved".
    """
    conn = record.driver_connection
    if conn is None or conn.closed or conn.broken:
        raise DisconnectionError("the pooled connection is closed")
    if _readable(conn.fileno()):
        raise DisconnectionError("the server closed the connection (or spoke) while it was idle")


def _readable(fd: int) -> bool:
    """Whether ``fd`` has something to read (or its end) now, without waiting."""
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLERR | select.POLLHUP)
        return bool(poller.poll(0))
    return bool(select.select([fd], [], [], 0)[0])
