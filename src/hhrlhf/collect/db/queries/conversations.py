"""A conversation's statements on the hot path: start one, read it (locked for a write),
its history for a new message, the new turn and its two candidates, finish it."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, cast

from sqlalchemy import ColumnElement, Table, bindparam, func, insert, select, update

from ...domain import ConversationStatus
from ..models import CampaignSetting, candidates_table, conversations_table, turns_table
from . import on_sqlite
from .guidelines import current_version, reading_due
from .writers import writer_disabled, writer_enabled

if TYPE_CHECKING:
    from sqlalchemy import Connection

__all__ = [
    "ConversationRow",
    "HistoryRow",
    "TurnOwnerRow",
    "conversation",
    "finish",
    "history",
    "insert_conversation",
    "insert_turn",
    "turn_count",
    "turn_owner",
]


class ConversationRow(Protocol):
    """A conversation's row, with ``who_disabled`` (:func:`.writers.writer_disabled`)."""

    @property
    def id(self) -> int: ...
    @property
    def annotator_id(self) -> int: ...
    @property
    def mode(self) -> str: ...
    @property
    def task_description(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def comment(self) -> str | None: ...
    @property
    def rating(self) -> int | None: ...
    @property
    def backend(self) -> str | None: ...
    @property
    def red_team_continue(self) -> str | None: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def finished_at(self) -> datetime | None: ...
    @property
    def who_disabled(self) -> bool | None: ...


class HistoryRow(Protocol):
    """What a new message needs of its conversation, with one of its turns' texts (all
    None on the one row of a conversation without turns)."""

    @property
    def id(self) -> int: ...
    @property
    def annotator_id(self) -> int: ...
    @property
    def status(self) -> str: ...
    @property
    def mode(self) -> str: ...
    @property
    def backend(self) -> str | None: ...
    @property
    def turn_index(self) -> int | None: ...
    @property
    def human(self) -> str | None: ...
    @property
    def continued(self) -> str | None: ...
    @property
    def who_disabled(self) -> bool | None: ...


class TurnOwnerRow(Protocol):
    @property
    def id(self) -> int: ...
    @property
    def status(self) -> str: ...
    @property
    def conversation_id(self) -> int: ...
    @property
    def annotator_id(self) -> int: ...
    @property
    def who_disabled(self) -> bool | None: ...


def conversation(
    conn: Connection, conversation_id: int, who: int, *, lock: bool = False
) -> ConversationRow | None:
    """The conversation's row; ``lock``: held until the transaction ends (PostgreSQL; SQLite's
    writer holds the file)."""
    q = _conversation_for_update if lock and not on_sqlite(conn) else _conversation
    row = conn.execute(q, {"cid": conversation_id, "who": who}).one_or_none()
    return cast("ConversationRow | None", row)


def insert_conversation(
    conn: Connection,
    values: dict[str, Any],
    who: int,
    *,
    gated: bool = True,
    without_campaign: bool = False,
) -> int | None:
    """A new conversation's id, stamped with the guidelines' current version; None (nothing
    inserted) when annotator ``who`` is disabled or, ``gated``, must read the guidelines
    first (the same statement reads both). ``without_campaign``: None too when any campaign
    setting is stored (the caller then applies the campaign's rules and inserts again): a
    deployment without a campaign starts a free conversation in this one statement."""
    stmt = _NEW_CONVERSATION_INSERTS[gated, without_campaign]
    cid: int | None = conn.execute(stmt, {**values, "who": who}).scalar()
    return cid


def turn_count(conn: Connection, conversation_id: int) -> int:
    count: int = conn.execute(_turn_count, {"cid": conversation_id}).scalar_one()
    return count


def finish(
    conn: Connection,
    conversation_id: int,
    comment: str | None,
    rating: int | None,
    finished: datetime,
) -> None:
    conn.execute(
        _finish,
        {"cid": conversation_id, "comment": comment, "rating": rating, "finished": finished},
    )


def history(conn: Connection, conversation_id: int, who: int) -> Sequence[HistoryRow]:
    """One statement: the conversation (locked until the commit on PostgreSQL; SQLite's
    writer holds the file) with a row per earlier turn, its texts only, in order (none: the
    conversation does not exist)."""
    q = _history if on_sqlite(conn) else _history_for_update
    rows = conn.execute(q, {"cid": conversation_id, "who": who}).all()
    return cast("Sequence[HistoryRow]", rows)


def insert_turn(
    conn: Connection, turn: dict[str, Any], candidates: Sequence[tuple[str, str, str]]
) -> int:
    """A new turn (``turn``: its columns) and its candidates (slot, backend, status); its id.
    IntegrityError when another turn took its index."""
    tid: int = conn.execute(_new_turn, turn).scalar_one()
    conn.execute(
        _new_candidates,
        [
            {"turn_id": tid, "slot": slot, "backend": backend, "status": status}
            for slot, backend, status in candidates
        ],
    )
    return tid


def turn_owner(conn: Connection, turn_id: int, who: int) -> TurnOwnerRow | None:
    """A turn's id, status and conversation, with its conversation's annotator."""
    row = conn.execute(_turn_owner, {"tid": turn_id, "who": who}).one_or_none()
    return cast("TurnOwnerRow | None", row)


_turns, _conversations = turns_table.c, conversations_table.c
campaign_settings_table = cast(Table, CampaignSetting.__table__)
_conversation = select(conversations_table, writer_disabled()).where(
    _conversations.id == bindparam("cid")
)
_conversation_for_update = _conversation.with_for_update()
_NEW_CONVERSATION = (
    "uid",
    "annotator_id",
    "mode",
    "task_description",
    "status",
    "backend",
    "red_team_continue",
    "created_at",
    "task_id",
)


def _inserting_conversation(gated: bool, without_campaign: bool) -> Any:
    """The insert of a new conversation while its annotator is enabled (``gated``: and has
    read the guidelines they must; ``without_campaign``: and no campaign setting is stored),
    stamped with the guidelines' current version."""
    where: list[ColumnElement[bool]] = [writer_enabled()]
    if gated:
        where.append(~reading_due())
    if without_campaign:
        where.append(~select(campaign_settings_table.c.key).exists())
    return (
        insert(conversations_table)
        .from_select(
            [*_NEW_CONVERSATION, "guidelines_version"],
            select(
                *(bindparam(k, type_=conversations_table.c[k].type) for k in _NEW_CONVERSATION),
                current_version(),
            ).where(*where),
        )
        .returning(_conversations.id)
    )


#: by (gated, without_campaign): the four inserts, built once
_NEW_CONVERSATION_INSERTS = {
    (g, w): _inserting_conversation(g, w) for g in (True, False) for w in (True, False)
}
_turn_count = (
    select(func.count()).select_from(turns_table).where(_turns.conversation_id == bindparam("cid"))
)
_finish = (
    update(conversations_table)
    .where(_conversations.id == bindparam("cid"))
    .values(
        status=ConversationStatus.FINISHED,
        comment=bindparam("comment"),
        rating=bindparam("rating"),
        finished_at=bindparam("finished", type_=_conversations.finished_at.type),
    )
)
_history = (
    select(
        _conversations.id,
        _conversations.annotator_id,
        _conversations.status,
        _conversations.mode,
        _conversations.backend,
        _turns.index.label("turn_index"),
        _turns.human,
        _turns.continued,
        writer_disabled(),
    )
    .outerjoin_from(conversations_table, turns_table, _turns.conversation_id == _conversations.id)
    .where(_conversations.id == bindparam("cid"))
    .order_by(_turns.index)
)
_history_for_update = _history.with_for_update(of=conversations_table)
_new_turn = insert(turns_table).returning(_turns.id)
_new_candidates = insert(candidates_table)
_turn_owner = (
    select(
        _turns.id,
        _turns.status,
        _turns.conversation_id,
        _conversations.annotator_id,
        writer_disabled(),
    )
    .join_from(turns_table, conversations_table, _conversations.id == _turns.conversation_id)
    .where(_turns.id == bindparam("tid"))
)
