"""Whether the annotator writing is enabled now, as a column or a condition of the write's
own first statement (no statement more): :mod:`hhrlhf.collect.services.writers` refuses."""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import ColumnElement, Label, Table, bindparam, false, select

from ..models import Annotator

__all__ = ["writer_disabled", "writer_enabled", "annotator_disabled_for_update"]

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


def annotator_disabled_for_update(s: Any, annotator_id: int) -> bool | None:
    """The annotator's ``disabled``, their row locked for the transaction (None: no such
    annotator). ``s``: a session or a connection."""
    disabled: bool | None = s.execute(
        select(_annotators.disabled).where(_annotators.id == annotator_id).with_for_update()
    ).scalar()
    return disabled
