"""The guidelines' conditions as parts of other statements: the current version, and whether
the ``:who`` annotator still has to read it (a new conversation's insert carries both, so a
deployment without guidelines starts a conversation in the statements it always did)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, cast

from sqlalchemy import ColumnElement, Table, bindparam, func, or_, select

from ..models import Guidelines, GuidelinesAck
from .writers import writer_disabled

if TYPE_CHECKING:
    from sqlalchemy import Connection, ScalarSelect

__all__ = ["GateRow", "current_version", "gate", "reading_due"]

_g = cast(Table, Guidelines.__table__).c
_acks = cast(Table, GuidelinesAck.__table__).c


class GateRow(Protocol):
    """Where the ``:who`` annotator stands with the guidelines, with ``who_disabled``."""

    @property
    def current(self) -> int | None: ...
    @property
    def acked(self) -> int | None: ...
    @property
    def due(self) -> bool: ...
    @property
    def who_disabled(self) -> bool | None: ...


def current_version() -> ScalarSelect[Any]:
    """The current (highest) version; NULL when none was published."""
    return select(func.max(_g.version)).scalar_subquery()


def _acked() -> ScalarSelect[Any]:
    """The latest version the ``:who`` annotator acknowledged (NULL: none)."""
    return (
        select(func.max(_acks.version)).where(_acks.annotator_id == bindparam("who"))
    ).scalar_subquery()


def reading_due() -> ColumnElement[bool]:
    """A condition: the ``:who`` annotator must read the guidelines before a conversation: a
    version exists and they acknowledged none, or a version newer than their latest
    acknowledged one is marked important."""
    acked = _acked()
    return (
        select(_g.version)
        .where(_g.version > func.coalesce(acked, 0), or_(acked.is_(None), _g.important))
        .exists()
    )


_gate = select(
    current_version().label("current"),
    _acked().label("acked"),
    reading_due().label("due"),
    writer_disabled(),
)


def gate(conn: Connection, who: int) -> GateRow:
    """One statement: the current version, annotator ``who``'s latest acknowledged one,
    whether they must read, and whether they are disabled."""
    return cast("GateRow", conn.execute(_gate, {"who": who}).one())
