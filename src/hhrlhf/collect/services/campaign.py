"""The campaign's live settings (``campaign_settings``: one JSON value per key, with who set it
and when), set in ``/admin/campaign`` or by ``hh collect campaign set``.

A key never set has its default, which is the app's behaviour without a campaign:

- ``free_conversations`` (bool, default true): annotators may start conversations of their own
  (their own task description), besides the imported tasks.
- ``targets`` ({"unit", "per_day", "per_week", "total"}, default none): every annotator's
  quota, in ``turns`` (comparisons made) or ``conversations`` (conversations started); each
  limit an integer >= 1 or null (no limit).
- ``targets:<annotator id>``: one annotator's own quota, of the same shape, in place of
  ``targets``.
- ``campaign_total`` ({"unit", "count"}, default none): the campaign closes to new
  conversations once everyone together has made ``count`` of ``unit``.

Days and weeks are UTC: a day starts at 00:00 UTC, a week on Monday 00:00 UTC (ISO weeks).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, select

from ...errors import Invalid, NotFound
from ..db import Storage
from ..db.models import Annotator, CampaignSetting
from ..domain import iso, now

__all__ = [
    "UNITS",
    "Campaign",
    "CampaignTotal",
    "Targets",
    "day_start",
    "parse_targets",
    "parse_total",
    "read_campaign",
    "campaign",
    "set_free_conversations",
    "set_targets",
    "set_campaign_total",
    "week_start",
]

#: who changed which campaign setting
log = logging.getLogger("hhrlhf.collect.campaign")

#: what a target counts: comparisons made (one per turn) or conversations started
UNITS = ("turns", "conversations")
FREE, TARGETS, TOTAL = "free_conversations", "targets", "campaign_total"
_LIMITS = ("per_day", "per_week", "total")


@dataclass(frozen=True)
class Targets:
    """An annotator's quota: at most ``per_day`` / ``per_week`` / ``total`` of ``unit``
    (None: no limit)."""

    unit: str = "turns"
    per_day: int | None = None
    per_week: int | None = None
    total: int | None = None

    @property
    def limited(self) -> bool:
        """Whether any limit is set."""
        return any(getattr(self, k) is not None for k in _LIMITS)

    def to_dict(self) -> dict[str, Any]:
        return {"unit": self.unit, **{k: getattr(self, k) for k in _LIMITS}}


@dataclass(frozen=True)
class CampaignTotal:
    """The campaign closes to new conversations at ``count`` of ``unit``, everyone's."""

    unit: str
    count: int

    def to_dict(self) -> dict[str, Any]:
        return {"unit": self.unit, "count": self.count}


@dataclass(frozen=True)
class Campaign:
    """The live settings, defaults filled in. ``overrides``: annotator id -> their targets;
    ``changed``: key -> (who, when ISO) of each key set."""

    free_conversations: bool = True
    targets: Targets = Targets()
    overrides: Mapping[int, Targets] = field(default_factory=dict)
    total: CampaignTotal | None = None
    changed: Mapping[str, tuple[str | None, str | None]] = field(default_factory=dict)

    def targets_for(self, annotator_id: int) -> Targets:
        return self.overrides.get(annotator_id, self.targets)

    @property
    def has_targets(self) -> bool:
        return self.targets.limited or any(t.limited for t in self.overrides.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "free_conversations": self.free_conversations,
            "targets": self.targets.to_dict() if self.targets.limited else None,
            "campaign_total": self.total.to_dict() if self.total else None,
            "annotator_targets": {str(k): t.to_dict() for k, t in sorted(self.overrides.items())},
        }


def day_start(at: datetime) -> datetime:
    """00:00 UTC of ``at``'s day."""
    return at.replace(hour=0, minute=0, second=0, microsecond=0)


def week_start(at: datetime) -> datetime:
    """Monday 00:00 UTC of ``at``'s ISO week."""
    return day_start(at) - timedelta(days=at.weekday())


def _limit(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise Invalid(f"{what} must be a whole number >= 1 (or null: no limit), not {value!r}")
    return value


def _unit(value: Any) -> str:
    if value not in UNITS:
        raise Invalid(f"unit {value!r}; expected one of: {', '.join(UNITS)}")
    return str(value)


def parse_targets(value: Mapping[str, Any]) -> Targets:
    """A target from its JSON form (Invalid naming the bad field)."""
    extra = set(value) - {"unit", *_LIMITS}
    if extra:
        raise Invalid(f"unknown target field {sorted(extra)[0]!r}")
    return Targets(
        _unit(value.get("unit", "turns")),
        *(_limit(value.get(k), k) for k in _LIMITS),
    )


def parse_total(value: Mapping[str, Any]) -> CampaignTotal:
    count = _limit(value.get("count"), "the campaign total")
    if count is None:
        raise Invalid("the campaign total needs a count")
    return CampaignTotal(_unit(value.get("unit", "turns")), count)


def read_campaign(conn: Connection) -> Campaign:
    """The settings as stored (one read of the small table); a bad stored value is refused
    when set, so it is read as it is."""
    rows = conn.execute(
        select(
            CampaignSetting.key,
            CampaignSetting.value,
            CampaignSetting.updated_by,
            CampaignSetting.updated_at,
        )
    ).all()
    free, targets, total = True, Targets(), None
    overrides: dict[int, Targets] = {}
    changed: dict[str, tuple[str | None, str | None]] = {}
    for key, value, by, at in rows:
        changed[key] = (by, iso(at))
        if key == FREE:
            free = bool(value)
        elif key == TARGETS and value:
            targets = parse_targets(value)
        elif key == TOTAL and value:
            total = parse_total(value)
        elif key.startswith(TARGETS + ":") and value:
            overrides[int(key.split(":", 1)[1])] = parse_targets(value)
    return Campaign(free, targets, overrides, total, changed)


def campaign(storage: Storage) -> Campaign:
    with storage.read() as s:
        return read_campaign(s.connection())


def _put(storage: Storage, key: str, value: Any, by: str) -> Campaign:
    """Store ``value`` under ``key`` (None: forget the key, its default again), logged with
    who did it."""
    with storage.write() as s:
        row = s.get(CampaignSetting, key)
        if value is None:
            if row is not None:
                s.delete(row)
        elif row is None:
            s.add(CampaignSetting(key=key, value=value, updated_by=by, updated_at=now()))
        else:
            row.value, row.updated_by, row.updated_at = value, by, now()
        s.flush()
        out = read_campaign(s.connection())
    log.info("campaign setting %s set to %s by %s", key, value, by)
    return out


def set_free_conversations(storage: Storage, by: str, allowed: bool) -> Campaign:
    """Allow (default) or refuse conversations of the annotators' own making."""
    return _put(storage, FREE, bool(allowed), by)


def set_targets(
    storage: Storage, by: str, targets: Targets | None, *, annotator: str | None = None
) -> Campaign:
    """Everyone's quota (``annotator`` None) or one annotator's own; None or a target without
    any limit removes it (that annotator then has everyone's)."""
    if targets is not None:
        targets = parse_targets(targets.to_dict())  # validated however it was built
    key = TARGETS
    if annotator is not None:
        with storage.read() as s:
            aid = s.scalar(select(Annotator.id).where(Annotator.name == annotator))
        if aid is None:
            raise NotFound(f"no annotator named {annotator!r}")
        key = f"{TARGETS}:{aid}"
    value = targets.to_dict() if targets is not None and targets.limited else None
    return _put(storage, key, value, by)


def set_campaign_total(storage: Storage, by: str, total: CampaignTotal | None) -> Campaign:
    """The campaign's total (None: no total, it never closes by itself)."""
    value = None if total is None else parse_total(total.to_dict()).to_dict()
    return _put(storage, TOTAL, value, by)
