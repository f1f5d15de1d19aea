"""The collection database: :class:`Storage` is its handle (the engines, one short transaction
per unit of work, the schema's migrations). The rules over it are the services
(:mod:`hhrlhf.collect.services`); the tables are :mod:`.models`."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session as DBSession
from sqlalchemy.orm import sessionmaker

from ...errors import HHError
from .engine import WriterLock, bookkeeping, is_sqlite, make_engine, sqlite_file
from .models import Base

if TYPE_CHECKING:
    from alembic.config import Config

__all__ = ["Storage", "Base", "MIGRATIONS"]

MIGRATIONS = Path(__file__).resolve().parent / "migrations"

#: PostgreSQL's bookkeeping commit: returns before its WAL is flushed; the next synchronous
#: commit flushes the log up to itself, this one included (SET LOCAL: this transaction only)
_ASYNC_COMMIT = text("SET LOCAL synchronous_commit TO OFF")


class Storage:
    """The collection database's handle: its engines, its transactions, its migrations."""

    def __init__(self, url: str, *, connections: int | None = None):
        """``connections``: the most PostgreSQL connections this handle's pool may hold
        (``hh serve`` gives each worker its share of ``db_connections``); None: 5 kept open
        and 10 more under load."""
        self.url = url
        self.engine = make_engine(url, connections=connections)
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
        self._postgres = self.engine.dialect.name == "postgresql"
        self._readers = sessionmaker(self.read_engine, expire_on_commit=False)

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
                f"{self.url}: database schema is at {current or 'nothing'}, the code needs "
                f"{self.head()}; run `hh serve` (it migrates) first"
            )

    def dispose(self) -> None:
        if isinstance(self._write_lock, WriterLock):
            self._write_lock.close()
        self.engine.dispose()
        self.read_engine.dispose()

    def read(self) -> DBSession:
        """A session for reading (SQLite: a deferred transaction, concurrent with a writer)."""
        return self._readers()

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
            if not durable:
                stack.enter_context(bookkeeping())
            with self._write_lock, self._sessions() as s, s.begin():
                if not durable and self._postgres:
                    s.execute(_ASYNC_COMMIT)
                yield s

    def session(self) -> DBSession:
        """A plain session (no lock, no transaction): for tests and tools that add rows by hand."""
        return self._sessions()
