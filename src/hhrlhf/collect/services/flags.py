"""Mislabel flags of the collected comparisons (``hh collect flag``).

The comparisons flagged are the export's lines (:func:`.export_select.exported_comparisons`
with the export's defaults), each as the pair its line is, ``index`` its row in its
``<subset>/<split>`` file: a flags file written here matches ``hh collect export``'s files
(``hh clean --drop-flagged`` reads it). The flags are :func:`hhrlhf.reward.flag_run.run_flag`'s,
upstream pairs (when given) extra training data only. The database keeps the latest run's
flags, one row per comparison (``comparison_flags``): a new run replaces them all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select

from ...errors import HHError
from ...records import PreferencePair
from ...reward.flag import FlagRow
from ...reward.flag_run import FlagReport
from ..db import Storage
from ..db.models import ComparisonFlag
from .export_select import exported_comparisons

__all__ = [
    "CollectedFlagRow",
    "StoredFlag",
    "StoredRun",
    "collected_pairs",
    "flag_collected",
    "store_flags",
    "stored_flags",
    "flags_stamp",
]


class CollectedFlagRow(FlagRow):
    """A flag row of a collected comparison: :class:`~hhrlhf.reward.flag.FlagRow` with the
    ``comparison_id`` (first in the row)."""

    comparison_id: int


@dataclass(frozen=True, slots=True)
class StoredFlag:
    """A comparison's stored flag (``cls``: a flags file's ``class``) and when it was made."""

    margin: float
    margin_sd: float
    p_mislabelled: float
    cls: str
    flagged_at: datetime

    def as_row(self) -> dict[str, object]:
        """As a row of a flags file reads (``class``, not ``cls``)."""
        return {
            "margin": self.margin,
            "margin_sd": self.margin_sd,
            "p_mislabelled": self.p_mislabelled,
            "class": self.cls,
            "flagged_at": self.flagged_at,
        }


@dataclass(frozen=True, slots=True)
class StoredRun:
    """What :func:`store_flags` did: ``stored`` new flags, ``replaced`` older ones, made
    ``previous`` (None: there were none)."""

    replaced: int
    previous: datetime | None
    stored: int


def collected_pairs(storage: Storage) -> tuple[list[int], list[PreferencePair]]:
    """``(comparison ids, pairs)``: the export's lines, in its order."""
    ids, pairs, rows = [], [], Counter[tuple[str, str]]()
    for line in exported_comparisons(storage):
        key = (line.subset, line.split)
        pairs.append(PreferencePair(line.chosen, line.rejected, line.subset, line.split, rows[key]))
        rows[key] += 1
        ids.append(line.comparison_id)
    return ids, pairs


def flag_collected(
    storage: Storage, upstream: Sequence[Any] = (), *, folds: int = 5, seeds: int = 2
) -> tuple[list[CollectedFlagRow], FlagReport]:
    """``(rows, report)`` of :func:`~hhrlhf.reward.flag_run.run_flag` on the collected pairs,
    ``upstream`` pairs in every fold's training set; each row with its ``comparison_id``."""
    from ...reward.flag_run import run_flag

    ids, pairs = collected_pairs(storage)
    if not pairs:
        raise HHError(
            "the database holds no comparison that hh collect export would write: nothing to flag"
        )
    rows, report = run_flag(pairs, folds=folds, seeds=seeds, extra=upstream)
    return [{"comparison_id": c, **r} for c, r in zip(ids, rows, strict=True)], report


def store_flags(storage: Storage, rows: Sequence[CollectedFlagRow]) -> StoredRun:
    """Replace the stored flags with ``rows`` in one transaction; returns how many were
    replaced (``replaced``) and when the run they came from was (``previous``, or None)."""
    from ..domain import now

    at = now()
    with storage.write() as s:
        replaced = s.scalar(select(func.count()).select_from(ComparisonFlag)) or 0
        previous = s.scalar(select(func.max(ComparisonFlag.flagged_at)))
        s.execute(delete(ComparisonFlag))
        s.add_all(
            ComparisonFlag(
                comparison_id=r["comparison_id"],
                margin=r["margin"],
                margin_sd=r["margin_sd"],
                p_mislabelled=r["p_mislabelled"],
                cls=r["class"],
                flagged_at=at,
            )
            for r in rows
        )
    return StoredRun(replaced=replaced, previous=previous, stored=len(rows))


def stored_flags(storage: Storage) -> dict[int, StoredFlag]:
    """The stored flags by comparison id."""
    with storage.read() as s:
        return {
            f.comparison_id: StoredFlag(f.margin, f.margin_sd, f.p_mislabelled, f.cls, f.flagged_at)
            for f in s.scalars(select(ComparisonFlag))
        }


def flags_stamp(storage: Storage) -> tuple[Any, ...]:
    """What changes when the stored flags do (a new run): their count and latest time."""
    with storage.read() as s:
        row = s.execute(
            select(func.count(), func.max(ComparisonFlag.flagged_at)).select_from(ComparisonFlag)
        ).one()
    return tuple(row)
