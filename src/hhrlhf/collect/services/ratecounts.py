"""Rate-limit counts shared through the database: each worker process adds the requests it
counted per key and minute, and reads every worker's totals for the keys it is watching, so a
limit holds across workers and hosts (web/ratelimit.py keeps the windows in between)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..db import Storage
from ..db.queries import ratecounts as q

#: a key as (kind, key): ("login", client address) or ("writes", annotator id)
Key = tuple[str, str]


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
            q.add_hits(conn, worker, added)
        q.forget_before(conn, minute - 1)
        if not watched:
            return {}
        rows = q.totals(conn, minute - 1, minute, {key for _, key in watched})
    totals = dict.fromkeys(watched, (0, 0))
    for kind, key, at, n in rows:
        if (kind, key) in totals:
            before, now = totals[kind, key]
            totals[kind, key] = (n, now) if at < minute else (before, n)
    return totals
