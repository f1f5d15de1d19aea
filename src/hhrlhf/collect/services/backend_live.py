"""Backends live: pause, resume and re-weight a configured backend while the app runs
(``/admin/backends``, ``hh collect backend``), each change stored in ``backend_states`` and
logged in ``backend_events`` with who made it and when; and :class:`LiveBackends`, each
worker's snapshot of those states that the draw reads (docs/collect.md, "Backends live").

The rules of a change:

- a backend not in the config is refused, naming the configured ones;
- a weight is a finite number above 0; a backend only a rerank backend samples (its
  ``base``) is never drawn itself, so its weight is refused (re-weight the rerank one);
- pausing the last backend new conversations could draw is refused (a rerank backend whose
  base is paused is not drawn either); a worker that still meets a draw with nothing left
  refuses the message clearly (:data:`.rules.ALL_PAUSED`);
- pausing what is paused, resuming what is not, or setting the weight it has changes
  nothing and logs nothing.

A pause stops new draws only: turns already drawn (being written, or waiting to be) finish
on the backend they drew, and a retry keeps it unless it is replaced (never by a paused one).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from ...errors import Conflict, Invalid, NotFound
from ..db.models import BackendEvent
from ..db.queries import backends as q
from ..domain import aware, iso, now
from .rules import Rules

if TYPE_CHECKING:
    from ..config import Settings
    from ..db import Storage

__all__ = [
    "BackendChange",
    "BackendLive",
    "Changed",
    "LiveBackends",
    "backend_events",
    "backend_states",
    "pause",
    "resume",
    "set_weight",
]

log = logging.getLogger("hhrlhf.collect.backends")


@dataclass(frozen=True, slots=True)
class BackendLive:
    """A configured backend's live state."""

    name: str
    kind: str
    paused: bool
    #: the weight the draw uses now (the config's unless re-weighted)
    weight: float
    config_weight: float
    #: drawn itself (False: only a rerank backend's base)
    drawn: bool
    updated_by: str | None
    updated_at: str | None

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}


@dataclass(frozen=True, slots=True)
class BackendChange:
    """One logged change: ``pause``, ``resume`` or ``weight`` (``value``: the new weight,
    ``previous``: the one before, when known)."""

    backend: str
    action: str
    value: float | None
    previous: float | None
    by: str | None
    at: str | None

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}

    def describe(self) -> str:
        """``local-8b weight 1 -> 0.5 at 2026-11-28 10:02 by alice`` and the like."""
        if self.action == "weight":
            was = "" if self.previous is None else f"{self.previous:g} -> "
            what = f"{self.backend} weight {was}{_num(self.value)}"
        else:
            what = f"{self.backend} {'paused' if self.action == 'pause' else 'resumed'}"
        when = f" at {self.at[:16].replace('T', ' ')}" if self.at else ""
        return f"{what}{when} by {self.by or 'someone unknown'}"


@dataclass(frozen=True, slots=True)
class Changed:
    """A change's answer: the backend's state after it, and whether it changed (logged)."""

    backend: BackendLive
    changed: bool


def _num(value: float | None) -> str:
    return "?" if value is None else f"{value:g}"


def _configured(settings: Settings, name: str) -> None:
    names = settings.backend_names
    if name not in names:
        raise NotFound(f"unknown backend {name!r}; the configured backends: {', '.join(names)}")


def _live(settings: Settings, rows: Mapping[str, q.StateRow]) -> list[BackendLive]:
    drawn = set(settings.drawn_backend_names)
    out = []
    for b in settings.backends:
        row = rows.get(b.name)
        weight = row.weight if row is not None and row.weight is not None else b.weight
        out.append(
            BackendLive(
                b.name,
                b.kind,
                bool(row and row.paused),
                weight,
                b.weight,
                b.name in drawn,
                row.updated_by if row else None,
                iso(row.updated_at) if row else None,
            )
        )
    return out


def backend_states(storage: Storage, settings: Settings) -> list[BackendLive]:
    """Every configured backend's live state, in the config's order."""
    with storage.read() as s:
        rows = {r.name: r for r in q.states(s.connection())}
    return _live(settings, rows)


def _change(
    storage: Storage,
    settings: Settings,
    name: str,
    by: str,
    action: str,
    value: float | None = None,
) -> Changed:
    """Apply one change (checked against every backend's state, read under a lock), upsert
    the backend's state and log it."""
    _configured(settings, name)
    with storage.write() as s:
        conn = s.connection()
        q.lock_states(conn)
        rows = {r.name: r for r in q.states(conn)}
        before = _one(settings, rows, name)
        paused, weight = before.paused, rows[name].weight if name in rows else None
        if action == "pause":
            paused = True
            _check_not_last(settings, rows, name)
        elif action == "resume":
            paused = False
        else:
            weight = value
        if (paused, before.weight if weight is None else weight) == (before.paused, before.weight):
            return Changed(before, False)
        at = now()
        q.upsert_state(conn, name, paused, weight, by, at)
        s.add(BackendEvent(backend=name, action=action, value=value, by=by, at=at))
        rows[name] = q.StateRow(name, paused, weight, by, at)
    log.info("backend %s: %s%s by %s", name, action, "" if value is None else f" {value}", by)
    return Changed(_one(settings, rows, name), True)


def _one(settings: Settings, rows: Mapping[str, q.StateRow], name: str) -> BackendLive:
    return next(b for b in _live(settings, rows) if b.name == name)


def _check_not_last(settings: Settings, rows: Mapping[str, q.StateRow], name: str) -> None:
    paused = {n for n, r in rows.items() if r.paused} | {name}
    if not Rules.from_settings(settings, paused=paused).backends:
        raise Conflict(
            f"backend {name!r} cannot be paused: new conversations would have no backend "
            "left to draw (resume another one first)"
        )


def pause(storage: Storage, settings: Settings, name: str, by: str) -> Changed:
    """Stop drawing ``name`` for new messages and conversations (turns in flight finish)."""
    return _change(storage, settings, name, by, "pause")


def resume(storage: Storage, settings: Settings, name: str, by: str) -> Changed:
    """Draw ``name`` again, with its live weight."""
    return _change(storage, settings, name, by, "resume")


def set_weight(storage: Storage, settings: Settings, name: str, weight: float, by: str) -> Changed:
    """Draw ``name`` with ``weight`` (a finite number above 0) instead of its current one."""
    _configured(settings, name)
    if isinstance(weight, bool) or not isinstance(weight, int | float):
        raise Invalid(f"weight must be a number, not {weight!r}")
    if not (math.isfinite(weight) and weight > 0):
        raise Invalid(f"weight must be a finite number above 0, not {weight!r}")
    if name not in settings.drawn_backend_names:
        users = [b.name for b in settings.backends if b.base == name]
        raise Invalid(
            f"backend {name!r} is not drawn itself (rerank backend {', '.join(users)} samples "
            "it): its weight has no effect; re-weight the rerank backend"
        )
    return _change(storage, settings, name, by, "weight", float(weight))


def backend_events(
    storage: Storage,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    config_weights: Mapping[str, float] | None = None,
) -> list[BackendChange]:
    """The log of changes, oldest first, those from ``since`` to ``until`` (inclusive) when
    given. A weight's ``previous`` is the one logged before it, else the config's (from
    ``config_weights``; None when not given)."""
    with storage.read() as s:
        events = s.execute(
            select(
                BackendEvent.backend,
                BackendEvent.action,
                BackendEvent.value,
                BackendEvent.by,
                BackendEvent.at,
            ).order_by(BackendEvent.at, BackendEvent.id)
        ).all()
    weights: dict[str, float | None] = dict(config_weights or {})
    out = []
    for backend, action, value, by, at in events:
        previous = weights.get(backend)
        if action == "weight":
            weights[backend] = value
        at = aware(at)
        if (since is None or at >= since) and (until is None or at <= until):
            out.append(
                BackendChange(
                    backend, action, value, previous if action == "weight" else None, by, iso(at)
                )
            )
    return out


class LiveBackends:
    """One worker's snapshot of the live backend states, and the :class:`Rules` built from
    them that every draw reads (:attr:`rules`: the configured backends not paused, with their
    live weights). :meth:`refresh` reads the states (one small SELECT) and rebuilds the rules
    when they changed; :meth:`keep_fresh` does it every ``backend_refresh_seconds`` while the
    app serves, off the requests: a turn reads no state of its own."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._seen: tuple[tuple[str, bool, float | None], ...] = ()
        self.rules = Rules.from_settings(settings)
        #: ``time.monotonic()`` of the last read (0: never read)
        self.read_at = 0.0

    def refresh(self, storage: Storage) -> Rules:
        """Read the states now; the rules drawn from them."""
        with storage.read() as s:
            rows = q.states(s.connection())
        self.apply(rows)
        return self.rules

    def apply(self, rows: list[q.StateRow]) -> None:
        """Take ``rows`` (every stored state) as the snapshot."""
        self.read_at = time.monotonic()
        seen = tuple((r.name, r.paused, r.weight) for r in rows)
        if seen == self._seen:
            return
        self._seen = seen
        self.rules = Rules.from_settings(
            self._settings,
            paused={r.name for r in rows if r.paused},
            weights={r.name: r.weight for r in rows if r.weight is not None},
        )

    async def keep_fresh(self, storage: Storage) -> None:
        """:meth:`refresh` every ``backend_refresh_seconds`` (first at once); a failure keeps
        the last snapshot and says so in the log."""
        while True:
            try:
                await asyncio.to_thread(self.refresh, storage)
            except Exception as exc:  # the database away: the last states still hold
                log.warning("live backend states not read: %s", exc)
            await asyncio.sleep(self._settings.backend_refresh_seconds)
