"""Rate-limit counts shared through the database: each worker process adds the requests it
counted per key and minute, and reads every worker's totals for the keys it is watching, so a
limit holds across workers and hosts (web/ratelimit.py keeps the windows in between)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from sqlalchemy import bindparam, delete, func, select
from sqlalchemy.dialects import postgresql, sqlite

from ..db import Storage
from ..db.engine import is_sqlite
from ..db.models import rate_counts_table

#: a key as (kind, key): ("login", client address) or ("writes", annotator id)
Key = tuple[str, str]

_rc = rate_counts_table.c


def share_counts(
    storage: Storage,
    worker: str,
    minute: int,
    added: Mapping[tuple[str, str, int], int],
    watched: Iterable[Key],
) -> dict[Key, tuple[int, int]]:
    """Add ``worker``'s new hits (``added``: per kind, key and minute), forget minutes before
    the one before ``minute``, and return every worker's totals for the ``watched`` keys: (the
    minute before, ``minute``). One write transaction, not made durable (a count lost in a
    crash costs nothing)."""
    watched = set(watched) | {(kind, key) for kind, key, _ in added}
    with storage.write(durable=False) as s:
        conn = s.connection()
        if added:
            insert = (sqlite if is_sqlite(storage.url) else postgresql).insert(rate_counts_table)
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
        conn.execute(delete(rate_counts_table).where(_rc.minute < minute - 1))
        if not watched:
            return {}
        rows = conn.execute(
            select(_rc.kind, _rc.key, _rc.minute, func.sum(_rc.hits))
            .where(
                _rc.minute >= minute - 1,
                _rc.minute <= minute,
                _rc.key.in_(bindparam("keys", expanding=True)),
            )
            .group_by(_rc.kind, _rc.key, _rc.minute),
            {"keys": sorted({key for _, key in watched})},
        ).all()
    totals = dict.fromkeys(watched, (0, 0))
    for kind, key, at, n in rows:
        if (kind, key) in totals:
            before, now = totals[kind, key]
            totals[kind, key] = (int(n), now) if at < minute else (before, int(n))
    return totals
