"""The collection's types, shared by every layer: what an annotator, a prompt and a pending
candidate are, the modes and slots, and the HH transcript prefix. No database, no HTTP (the
errors are in :mod:`hhrlhf.errors`)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, overload


class StrEnum(str, enum.Enum):
    """:class:`enum.StrEnum` (Python 3.11) on 3.10 too: a member is a ``str`` equal to its
    value, and ``str()``, f-strings, the database and JSON (json, orjson) see that value, so
    code moving from bare strings to members changes nothing stored or sent."""

    def __str__(self) -> str:
        return str.__str__(self)

    def __format__(self, spec: str) -> str:
        return str.__format__(str.__str__(self), spec)


class Role(StrEnum):
    """Who an annotator is: a reviewer may also judge collected data (``/judge``), an admin
    may too and manages the collection."""

    ANNOTATOR = "annotator"
    REVIEWER = "reviewer"
    ADMIN = "admin"


class Mode(StrEnum):
    """A conversation's kind: compare two helpful answers, or try to make a model misbehave."""

    HELPFUL = "helpful"
    RED_TEAM = "red-team"


class ConversationStatus(StrEnum):
    OPEN = "open"
    FINISHED = "finished"


class TurnStatus(StrEnum):
    """A turn's life: pending (no generator yet), generating (leased), then ready (both
    responses) or failed (one or both failed: Retry sends it back to pending)."""

    PENDING = "pending"
    GENERATING = "generating"
    READY = "ready"
    FAILED = "failed"


class CandidateStatus(StrEnum):
    """A response's: pending until its generation stores it ready or failed."""

    PENDING = "pending"
    READY = "ready"
    FAILED = "failed"


class Slot(StrEnum):
    """A response's side: a is shown as A, b as B."""

    A = "a"
    B = "b"


#: the values, as plain strings (a dict key that orjson writes must be a plain ``str``)
ROLES: tuple[str, ...] = tuple(x.value for x in Role)
MODES: tuple[str, ...] = tuple(x.value for x in Mode)
SLOTS: tuple[str, ...] = tuple(x.value for x in Slot)
#: what a response stopped while it was written is stored with (and the annotator reads)
STOPPED = "stopped by the annotator"


def now() -> datetime:
    return datetime.now(timezone.utc)


def iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


@overload
def aware(value: datetime) -> datetime: ...
@overload
def aware(value: None) -> None: ...
def aware(value: datetime | None) -> datetime | None:
    """``value`` with its offset (SQLite keeps none: a stored time is UTC)."""
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value


def render_prefix(history: list[tuple[str, str]], human: str) -> str:
    """The HH transcript up to the next assistant turn: ``"\\n\\nHuman: h1\\n\\nAssistant: a1 ... \\n\\nHuman: ht\\n\\nAssistant:"``."""
    parts = [f"\n\nHuman: {h}\n\nAssistant: {a}" for h, a in history]
    parts.append(f"\n\nHuman: {human}\n\nAssistant:")
    return "".join(parts)


@dataclass(frozen=True)
class AnnotatorInfo:
    id: int
    name: str
    role: str
    disabled: bool
    member_id: int
    attributes: dict[str, Any] = field(default_factory=dict, compare=False)
    created_at: str | None = None

    @property
    def is_admin(self) -> bool:
        return self.role == Role.ADMIN

    @property
    def can_judge(self) -> bool:
        """Whether this annotator may judge collected comparisons (a reviewer or an admin)."""
        return self.role in (Role.REVIEWER, Role.ADMIN)

    def sees(self, annotator_id: int) -> bool:
        """Whether the work of annotator ``annotator_id`` is visible to this one: their own,
        or anyone's to an admin (to anyone else it is not found, not forbidden)."""
        return annotator_id == self.id or self.is_admin

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "role": self.role,
            "disabled": self.disabled,
            "member_id": self.member_id,
            "attributes": self.attributes,
            "created_at": self.created_at,
        }


@dataclass(frozen=True)
class PendingCandidate:
    slot: str
    backend: str


@dataclass(frozen=True)
class Prompt:
    """What a backend answers: the conversation so far and the new human message."""

    history: tuple[tuple[str, str], ...]
    human: str
    prefix: str
    #: the conversation's mode: helpful | red-team (a rerank backend selects by it)
    mode: str = Mode.HELPFUL

    @property
    def messages(self) -> list[dict[str, Any]]:
        out = []
        for h, a in self.history:
            out.append({"role": "user", "content": h})
            out.append({"role": "assistant", "content": a})
        out.append({"role": "user", "content": self.human})
        return out


def other_slot(slot: str) -> str:
    """The slot that is not ``slot``."""
    return Slot.B if slot == Slot.A else Slot.A


def annotator_failure(slot: str, error: str | None) -> str:
    """All an annotator may see of a failed response, on every path (the page, the event
    stream, the JSON API): that the model could not answer and that Retry is there, or that it
    was their own Stop. Never the model server's words: servers name the model in them ("The
    model `X` does not exist"), which would unblind the comparison; those are logged and shown
    to admins only (``/admin/backends``)."""
    side = slot.upper()
    if error == STOPPED:
        return f"Response {side} was {STOPPED}. Retry."
    return f"Response {side}: the model could not answer. Retry."


# -- what the services answer (the JSON API's shapes come from their ``to_dict``) ------


@dataclass(frozen=True, slots=True)
class ConversationSummary:
    """A conversation as a list shows it (and as starting or finishing one answers)."""

    id: int
    mode: str
    task_description: str
    status: str
    turns: int
    created_at: str | None
    finished_at: str | None
    #: its annotator's name (admins' lists only; None: not shown)
    annotator: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "mode": self.mode,
            "task_description": self.task_description,
            "status": self.status,
            "turns": self.turns,
            "created_at": self.created_at,
            "finished_at": self.finished_at,
        }
        if self.annotator is not None:
            out["annotator"] = self.annotator
        return out


@dataclass(frozen=True, slots=True)
class BackendFacts:
    """What only an admin sees of a response: where it came from, and the server's words."""

    backend: str
    model: str | None
    params: dict[str, Any]
    finish_reason: str | None
    latency_ms: int | None
    error: str | None


@dataclass(frozen=True, slots=True)
class CandidateAnswer:
    """A response as the API answers it."""

    slot: str
    text: str | None
    cut: bool
    cut_reason: str | None
    status: str
    #: what the annotator is told of a failure (:func:`annotator_failure`; None: not failed)
    failure: str | None = None
    #: admins only (None: not shown)
    facts: BackendFacts | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "slot": self.slot,
            "text": self.text,
            "cut": self.cut,
            "cut_reason": self.cut_reason,
            "status": self.status,
        }
        if self.failure is not None:
            out["error"] = self.failure
        if self.facts is not None:  # (an admin's "error" is the server's own words)
            f = self.facts
            out.update(
                backend=f.backend,
                model=f.model,
                params=f.params,
                finish_reason=f.finish_reason,
                latency_ms=f.latency_ms,
                error=f.error,
            )
        return out


@dataclass(frozen=True, slots=True)
class TurnAnswer:
    """A turn as the API answers it: its message, its two responses and its choice."""

    id: int
    index: int
    human: str
    status: str
    candidates: tuple[CandidateAnswer, ...]
    pick: str | None
    strength: int | None
    edit: str | None
    continued: str | None
    decided_at: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "index": self.index,
            "human": self.human,
            "status": self.status,
            "candidates": [c.to_dict() for c in self.candidates],
            "pick": self.pick,
            "strength": self.strength,
            "edit": self.edit,
            "continued": self.continued,
            "decided_at": self.decided_at,
        }


@dataclass(frozen=True, slots=True)
class ConversationDetail:
    """A whole conversation as the API answers it (``backend`` and ``red_team_continue``
    for admins only)."""

    id: int
    mode: str
    task_description: str
    status: str
    comment: str | None
    rating: int | None
    created_at: str | None
    finished_at: str | None
    turns: tuple[TurnAnswer, ...]
    #: whether the reader is its annotator (an admin reads others')
    yours: bool
    for_admin: bool = False
    backend: str | None = None
    red_team_continue: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "mode": self.mode,
            "task_description": self.task_description,
            "status": self.status,
            "comment": self.comment,
            "rating": self.rating,
            "created_at": self.created_at,
            "finished_at": self.finished_at,
            "turns": [t.to_dict() for t in self.turns],
            "yours": self.yours,
        }
        if self.for_admin:
            out["backend"] = self.backend
            out["red_team_continue"] = self.red_team_continue
        return out


@dataclass(frozen=True, slots=True)
class NewTurn:
    """A message just stored; leased to its writer, with what to generate."""

    id: int
    index: int
    conversation_id: int
    status: str
    #: the lease's (None: created pending, not leased)
    prompt: Prompt | None = None
    pending: tuple[PendingCandidate, ...] = ()


@dataclass(frozen=True, slots=True)
class TurnOwner:
    """A turn one may act on (Retry, Stop, withdraw)."""

    id: int
    status: str
    conversation_id: int


@dataclass(frozen=True, slots=True)
class CandidateState:
    """A response as its generation left it."""

    slot: str
    status: str
    text: str | None
    cut: bool
    cut_reason: str | None
    error: str | None


@dataclass(frozen=True, slots=True)
class TurnState:
    """A turn's status, lease and responses (what the event stream starts from)."""

    id: int
    index: int
    status: str
    lease_owner: str | None
    lease_until: datetime | None
    candidates: tuple[CandidateState, ...]
