"""The live backend states' statements: the one small read every worker makes every few
seconds (``backend_refresh_seconds``), and the upsert of an admin's change."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, NamedTuple

from sqlalchemy import Table, select, text
from sqlalchemy.dialects import postgresql, sqlite

from ..models import BackendState
from . import on_sqlite

if TYPE_CHECKING:
    from sqlalchemy import Connection

__all__ = ["StateRow", "lock_states", "states", "upsert_state"]

_table: Table = BackendState.__table__  # type: ignore[assignment]
_c = _table.c

_READ = select(_c.name, _c.paused, _c.weight, _c.updated_by, _c.updated_at).order_by(_c.name)


class StateRow(NamedTuple):
    name: str
    paused: bool
    #: None: the config's weight
    weight: float | None
    updated_by: str | None
    updated_at: datetime | None


def states(conn: Connection) -> list[StateRow]:
    """Every backend's stored state (a backend without a row: as configured)."""
    return [StateRow(*row) for row in conn.execute(_READ)]


def lock_states(conn: Connection) -> None:
    """Hold the states until the transaction ends, so two admins' changes at once are checked
    one after the other (SQLite: its one writer already holds the file)."""
    if not on_sqlite(conn):
        conn.execute(text("LOCK TABLE backend_states IN SHARE ROW EXCLUSIVE MODE"))


def upsert_state(
    conn: Connection, name: str, paused: bool, weight: float | None, by: str, at: datetime
) -> None:
    """``name``'s state, inserted or replaced."""
    values = {"paused": paused, "weight": weight, "updated_by": by, "updated_at": at}
    insert = (sqlite if on_sqlite(conn) else postgresql).insert(_table)
    conn.execute(
        insert.values(name=name, **values).on_conflict_do_update(
            index_elements=[_c.name], set_=values
        )
    )
