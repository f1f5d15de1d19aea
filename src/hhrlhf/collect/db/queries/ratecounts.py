"""The shared rate-limit counts' statements: add a worker's hits (an upsert, in each
dialect's own words), forget old minutes, read the totals."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from sqlalchemy import bindparam, delete, func, select
from sqlalchemy.dialects import postgresql, sqlite

from ..models import rate_counts_table
from . import on_sqlite

if TYPE_CHECKING:
    from sqlalchemy import Connection

__all__ = ["add_hits", "forget_before", "totals"]

_rc = rate_counts_table.c


def add_hits(conn: Connection, worker: str, added: Mapping[tuple[str, str, int], int]) -> None:
    """Add ``worker``'s hits per (kind, key, minute) to what it counted before."""
    insert = (sqlite if on_sqlite(conn) else postgresql).insert(rate_counts_table)
    conn.execute(
        insert.on_conflict_do_update(
            index_elements=[_rc.kind, _rc.key, _rc.minute, _rc.worker],
            set_={"hits": _rc.hits + insert.excluded.hits},
        ),
        [
            {"kind": kind, "key": key, "minute": at, "worker": worker, "hits": n}
            for (kind, key, at), n in added.items()
        ],
    )


def forget_before(conn: Connection, minute: int) -> None:
    """Every worker's counts of minutes before ``minute``, deleted."""
    conn.execute(delete(rate_counts_table).where(_rc.minute < minute))


def totals(
    conn: Connection, first: int, last: int, keys: Iterable[str]
) -> list[tuple[str, str, int, int]]:
    """Every worker's hits summed per (kind, key, minute) for ``keys``, minutes ``first`` to
    ``last``."""
    rows = conn.execute(
        select(_rc.kind, _rc.key, _rc.minute, func.sum(_rc.hits))
        .where(
            _rc.minute >= first,
            _rc.minute <= last,
            _rc.key.in_(bindparam("keys", expanding=True)),
        )
        .group_by(_rc.kind, _rc.key, _rc.minute),
        {"keys": sorted(set(keys))},
    ).all()
    return [(kind, key, at, int(n)) for kind, key, at, n in rows]
