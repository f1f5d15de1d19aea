"""A turn as the API answers it, from ORM objects or from plain rows: its fields, its two
responses (backends, models and errors for admins only) and its stored choice."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple, Protocol

from ..db.models import Candidate, Turn
from ..db.queries.turns import CandidateRow
from ..domain import (
    BackendFacts,
    CandidateAnswer,
    CandidateStatus,
    TurnAnswer,
    annotator_failure,
    iso,
)
from ..finish import cut_reason

__all__ = [
    "CandidateView",
    "PickView",
    "TurnView",
    "candidate_views",
    "stored_turn_answer",
    "turn_answer",
]


class CandidateView(NamedTuple):
    """A candidate as :func:`turn_answer` reads it: an ORM row's fields, or a plain row's
    (:data:`..db.queries.turns.CANDIDATE_COLUMNS`, in this order)."""

    slot: str
    text: str | None
    cut: bool
    finish_reason: str | None
    status: str
    backend: str
    model: str | None
    params: dict[str, Any]
    latency_ms: int | None
    error: str | None


def candidate_views(rows: Iterable[CandidateRow]) -> list[CandidateView]:
    """The candidates of rows selected with :data:`..db.queries.turns.CANDIDATE_COLUMNS` (an
    outer join's row without one is left out)."""
    return [
        CandidateView(
            r.slot,
            r.text,
            r.cut,
            r.finish_reason,
            r.candidate_status,
            r.backend,
            r.model,
            r.params,
            r.latency_ms,
            r.error,
        )
        for r in rows
        if r.slot is not None
    ]


class PickView(Protocol):
    """A stored pick as :func:`turn_answer` reads it."""

    @property
    def pick(self) -> str: ...
    @property
    def strength(self) -> int: ...
    @property
    def decided_at(self) -> datetime: ...


@dataclass(frozen=True, slots=True)
class TurnView:
    """A turn's own fields as :func:`turn_answer` answers them."""

    id: int
    index: int
    human: str
    status: str


def turn_answer(
    t: TurnView,
    candidates: Iterable[CandidateView | Candidate],
    pick: PickView | None,
    edit: str | None,
    continued: str | None,
    *,
    admin: bool,
) -> TurnAnswer:
    """A turn as the API answers it; backends, models and errors only for admins."""
    return TurnAnswer(
        t.id,
        t.index,
        t.human,
        t.status,
        tuple(_candidate_answer(c, admin) for c in candidates),
        pick.pick if pick else None,
        pick.strength if pick else None,
        edit,
        continued,
        iso(pick.decided_at) if pick else None,
    )


def _candidate_answer(c: CandidateView | Candidate, admin: bool) -> CandidateAnswer:
    """A response as the API answers it: the server's own words for admins only."""
    failed = c.status == CandidateStatus.FAILED
    facts = None
    if admin:
        facts = BackendFacts(c.backend, c.model, c.params, c.finish_reason, c.latency_ms, c.error)
    return CandidateAnswer(
        c.slot,
        c.text,
        c.cut,
        cut_reason(c.cut, c.finish_reason),
        c.status,
        annotator_failure(c.slot, c.error) if failed else None,
        facts,
    )


def stored_turn_answer(t: Turn, *, admin: bool) -> TurnAnswer:
    """:func:`turn_answer` of a turn loaded with its candidates and comparisons."""
    pick = next((x for x in t.comparisons if x.kind == "pick"), None)
    edit = next((x.chosen_text for x in t.comparisons if x.kind == "edit"), None)
    view = TurnView(t.id, t.index, t.human, t.status)
    return turn_answer(view, t.candidates, pick, edit, t.continued, admin=admin)
