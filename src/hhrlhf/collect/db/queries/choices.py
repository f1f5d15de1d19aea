"""A choice's statements: the turn as a choice finds it (one statement), and the choice
stored (its comparison rows and the turn's continuation: one round trip on PostgreSQL)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, TypedDict, cast

from sqlalchemy import bindparam, insert, select, update

from ..models import candidates_table, comparisons_table, conversations_table, turns_table
from . import on_sqlite
from .turns import CANDIDATE_COLUMNS, CandidateRow
from .writers import writer_disabled

if TYPE_CHECKING:
    from sqlalchemy import Connection

__all__ = ["ChoiceRow", "NewComparison", "choice_state", "store_choice"]


class NewComparison(TypedDict):
    """A comparison row of a choice as :func:`store_choice` inserts it (every column but the
    id): the pick's (``kind`` "pick") or the edit's ("edit", ``chosen_slot`` None)."""

    kind: str
    chosen_slot: str | None
    rejected_slot: str
    chosen_text: str | None
    rejected_text: str | None
    turn_id: int
    annotator_id: int
    pick: str
    strength: int
    request_id: str | None
    shown_at: datetime | None
    decided_at: datetime


class ChoiceRow(CandidateRow, Protocol):
    """A turn's candidate (:class:`.turns.CandidateRow`) with the turn, its conversation and
    its stored pick and edit (NULL when none)."""

    @property
    def id(self) -> int: ...
    @property
    def turn_index(self) -> int: ...
    @property
    def human(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def continued(self) -> str | None: ...
    @property
    def ready_at(self) -> datetime | None: ...
    @property
    def conversation_id(self) -> int: ...
    @property
    def annotator_id(self) -> int: ...
    @property
    def conversation_status(self) -> str: ...
    @property
    def mode(self) -> str: ...
    @property
    def red_team_continue(self) -> str | None: ...
    @property
    def pick(self) -> str | None: ...
    @property
    def strength(self) -> int | None: ...
    @property
    def request_id(self) -> str | None: ...
    @property
    def decided_at(self) -> datetime | None: ...
    @property
    def edit(self) -> str | None: ...
    @property
    def who_disabled(self) -> bool | None: ...


def choice_state(conn: Connection, turn_id: int, who: int) -> Sequence[ChoiceRow]:
    """A row per candidate (slot order), each with the turn, its conversation, its stored
    pick and edit, and ``who_disabled``; none when the turn does not exist."""
    rows = conn.execute(_choice_state, {"tid": turn_id, "who": who}).all()
    return cast("Sequence[ChoiceRow]", rows)


def store_choice(
    conn: Connection, turn_id: int, comparisons: Sequence[NewComparison], continued: str | None
) -> None:
    """Insert the choice's comparison rows (the pick's, and the edit's if any) and set the
    turn's continuation: two statements on SQLite, one on PostgreSQL (the comparisons
    inserted in the update's WITH)."""
    if on_sqlite(conn):
        conn.execute(_new_comparisons, list(comparisons))
        conn.execute(_continue, {"tid": turn_id, "continued": continued})
        return
    params = {f"{k}_{i}": v for i, row in enumerate(comparisons) for k, v in row.items()}
    conn.execute(_choose[len(comparisons)], {**params, "tid": turn_id, "continued": continued})


_turns, _conversations = turns_table.c, conversations_table.c
_candidates = candidates_table.c
_picks = comparisons_table.alias("pick")
_edits = comparisons_table.alias("edit")
_choice_state = (
    select(
        _turns.id,
        _turns.index.label("turn_index"),
        _turns.human,
        _turns.status,
        _turns.continued,
        _turns.ready_at,
        _turns.conversation_id,
        _conversations.annotator_id,
        _conversations.status.label("conversation_status"),
        _conversations.mode,
        _conversations.red_team_continue,
        *CANDIDATE_COLUMNS,
        _picks.c.pick,
        _picks.c.strength,
        _picks.c.request_id,
        _picks.c.decided_at,
        _edits.c.chosen_text.label("edit"),
        writer_disabled(),
    )
    .join_from(turns_table, conversations_table, _conversations.id == _turns.conversation_id)
    .outerjoin(candidates_table, _candidates.turn_id == _turns.id)
    .outerjoin(_picks, (_picks.c.turn_id == _turns.id) & (_picks.c.kind == "pick"))
    .outerjoin(_edits, (_edits.c.turn_id == _turns.id) & (_edits.c.kind == "edit"))
    .where(_turns.id == bindparam("tid"))
    .order_by(_candidates.slot)
)
_new_comparisons = insert(comparisons_table)
_continue = (
    update(turns_table)
    .where(_turns.id == bindparam("tid"))
    .values(continued=bindparam("continued"))
)
#: the columns of a choice's comparison rows (the pick's, and the edit's if any): all but the id
_COMPARISON_FIELDS = tuple(c.name for c in comparisons_table.c if not c.primary_key)
#: PostgreSQL: :data:`_new_comparisons` and :data:`_continue` as one statement, by the number
#: of comparison rows (their parameters ``<column>_<row>``)
_choose = {
    n: _continue.add_cte(
        insert(comparisons_table)
        .values([{f: bindparam(f"{f}_{i}") for f in _COMPARISON_FIELDS} for i in range(n)])
        .cte("new_comparisons")
    )
    for n in (1, 2)
}
