"""Whether the annotator writing is still enabled, read in the write's own transaction.

Each worker remembers a checked login for a few seconds (``web/logins.AUTH_CACHE_SECONDS``),
so a login disabled elsewhere (another worker or host, ``hh collect annotator disable``)
would keep writing until then. The writes add :func:`writer_disabled` as one more column of
the statement they run first (no statement more), and :func:`check_writer` refuses the write
when the annotator is disabled (or gone) at that moment.
"""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import ColumnElement, Label, Table, bindparam, false, select

from ...errors import Forbidden
from ..db.models import Annotator
from ..domain import AnnotatorInfo

__all__ = ["writer_disabled", "writer_enabled", "check_writer", "lock_writer"]

_annotators = cast(Table, Annotator.__table__).c


def writer_disabled() -> Label[Any]:
    """A column ``who_disabled``: the ``:who`` annotator's ``disabled`` now (NULL: no such
    annotator)."""
    return (
        select(_annotators.disabled)
        .where(_annotators.id == bindparam("who"))
        .scalar_subquery()
        .label("who_disabled")
    )


def writer_enabled() -> ColumnElement[bool]:
    """A condition: the ``:who`` annotator exists and is enabled now (an insert's WHERE)."""
    return (
        select(_annotators.id)
        .where(_annotators.id == bindparam("who"), _annotators.disabled == false())
        .exists()
    )


def check_writer(row: Any, who: AnnotatorInfo) -> None:
    """Refuse the write (403) when the row's ``who_disabled`` says the annotator may not."""
    if row.who_disabled is None or row.who_disabled:
        raise Forbidden(f"annotator {who.name!r} is disabled")


def lock_writer(s: Any, who: AnnotatorInfo) -> None:
    """Lock the writing annotator's row for the transaction (one statement) and refuse the
    write when they are disabled now (the review routes, which take that lock anyway or
    write one row)."""
    disabled = s.execute(
        select(_annotators.disabled).where(_annotators.id == who.id).with_for_update()
    ).scalar()
    if disabled is None or disabled:
        raise Forbidden(f"annotator {who.name!r} is disabled")
