"""Reading everything collected, for the export and for the numbers that say whether
anything changed since (the export's stamp, the table counts)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import selectinload

from ..db import Storage
from ..db.models import Annotator, Comparison, Conversation, Turn
from ..domain import ConversationStatus

__all__ = [
    "ExportAnnotator",
    "ExportCandidate",
    "ExportComparison",
    "ExportConversation",
    "ExportTurn",
    "counts",
    "export_stamp",
    "iter_conversations_for_export",
]


@dataclass(frozen=True, slots=True)
class ExportAnnotator:
    """Who held the conversation, as the export names them."""

    name: str
    member_id: int
    attributes: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ExportCandidate:
    """One response shown for a turn, with the model facts recorded when it was generated."""

    text: str | None
    cut: bool
    backend: str
    model_type: str | None
    num_params: str | None


@dataclass(frozen=True, slots=True)
class ExportComparison:
    """One stored choice of a turn: a pick between the two responses, or an edit."""

    id: int
    kind: str
    pick: str
    strength: int
    chosen_slot: str | None
    rejected_slot: str | None
    chosen_text: str
    rejected_text: str


@dataclass(frozen=True, slots=True)
class ExportTurn:
    """One turn: the human message, the transcript before it, the response the conversation
    continued with (None until chosen), its responses by slot and its comparisons."""

    index: int
    human: str
    prefix: str
    continued: str | None
    candidates: Mapping[str, ExportCandidate]
    comparisons: tuple[ExportComparison, ...]


@dataclass(frozen=True, slots=True)
class ExportConversation:
    """One stored conversation as the export reads it, its turns in order."""

    id: int
    uid: str
    mode: str
    status: str
    task_description: str
    rating: int | None
    backend: str | None
    annotator: ExportAnnotator
    turns: tuple[ExportTurn, ...]
    #: the guidelines' version current when it started (None: none were published)
    guidelines_version: int | None = None


def iter_conversations_for_export(
    storage: Storage, batch: int = 500
) -> Iterator[ExportConversation]:
    """Every conversation with its turns, candidates and comparisons, oldest first.

    Read ``batch`` conversations at a time in four statements (conversations, their
    annotators, turns, and the turns' candidates and comparisons), not three per
    conversation: an export of thousands of conversations was mostly round trips.
    """
    with storage.read() as s:
        ids = s.scalars(select(Conversation.id).order_by(Conversation.id)).all()
        for start in range(0, len(ids), batch):
            chunk = ids[start : start + batch]
            convs = s.scalars(
                select(Conversation).where(Conversation.id.in_(chunk)).order_by(Conversation.id)
            ).all()
            people = {
                a.id: a
                for a in s.scalars(
                    select(Annotator).where(Annotator.id.in_({c.annotator_id for c in convs}))
                )
            }
            turns: dict[int, list[Turn]] = {c.id: [] for c in convs}
            for t in s.scalars(
                select(Turn)
                .where(Turn.conversation_id.in_(chunk))
                .order_by(Turn.conversation_id, Turn.index)
                .options(selectinload(Turn.candidates), selectinload(Turn.comparisons))
            ):
                turns[t.conversation_id].append(t)
            for c in convs:
                yield _export_record(c, people[c.annotator_id], turns[c.id])
            s.expunge_all()  # one batch's rows in memory at a time


def export_stamp(storage: Storage) -> tuple[Any, ...]:
    """What the export depends on, in two statements: equal stamps, equal exports.

    Rows are only added (conversations, turns, comparisons) or changed once (a conversation
    finished, a turn continued), so counts and highest ids see every change; the
    annotators' attributes (``is_upworker``) can be edited at any time and are part of it.
    """
    with storage.read() as s:
        row = s.execute(
            select(
                select(func.count()).select_from(Conversation).scalar_subquery(),
                select(func.max(Conversation.id)).scalar_subquery(),
                select(func.count())
                .where(Conversation.status == ConversationStatus.FINISHED)
                .select_from(Conversation)
                .scalar_subquery(),
                select(func.max(Turn.id)).scalar_subquery(),
                select(func.count())
                .where(Turn.continued.is_not(None))
                .select_from(Turn)
                .scalar_subquery(),
                select(func.count()).select_from(Comparison).scalar_subquery(),
                select(func.max(Comparison.id)).scalar_subquery(),
            )
        ).one()
        people = s.execute(
            select(
                Annotator.id, Annotator.member_id, Annotator.attributes, Annotator.qualification
            ).order_by(Annotator.id)
        ).all()
    # (the qualification round: who passed decides whose data counts)
    return tuple(row) + (repr([(i, m, sorted((a or {}).items()), q) for i, m, a, q in people]),)


def counts(storage: Storage) -> dict[str, int]:
    """The number of annotators, conversations, turns and comparisons."""
    with storage.read() as s:
        return {
            name: s.scalar(select(func.count()).select_from(model)) or 0
            for name, model in (
                ("annotators", Annotator),
                ("conversations", Conversation),
                ("turns", Turn),
                ("comparisons", Comparison),
            )
        }


def _export_record(c: Conversation, a: Annotator, turns: list[Turn]) -> ExportConversation:
    return ExportConversation(
        id=c.id,
        uid=c.uid,
        mode=c.mode,
        status=c.status,
        task_description=c.task_description,
        rating=c.rating,
        backend=c.backend,
        annotator=ExportAnnotator(a.name, a.member_id, dict(a.attributes or {})),
        guidelines_version=c.guidelines_version,
        turns=tuple(
            ExportTurn(
                index=t.index,
                human=t.human,
                prefix=t.prefix,
                continued=t.continued,
                candidates={
                    x.slot: ExportCandidate(x.text, x.cut, x.backend, x.model_type, x.num_params)
                    for x in t.candidates
                },
                comparisons=tuple(
                    ExportComparison(
                        id=x.id,
                        kind=x.kind,
                        pick=x.pick,
                        strength=x.strength,
                        chosen_slot=x.chosen_slot,
                        rejected_slot=x.rejected_slot,
                        chosen_text=x.chosen_text,
                        rejected_text=x.rejected_text,
                    )
                    for x in t.comparisons
                ),
            )
            for t in turns
        ),
    )
