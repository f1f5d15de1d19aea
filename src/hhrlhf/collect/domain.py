"""The collection's types, shared by every layer: what an annotator, a prompt and a pending
candidate are, the modes and slots, and the HH transcript prefix. No database, no HTTP (the
errors are in :mod:`hhrlhf.errors`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, overload

ROLES = ("annotator", "admin")


MODES = ("helpful", "red-team")


SLOTS = ("a", "b")
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
        return self.role == "admin"

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
    mode: str = "helpful"

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
    return "b" if slot == "a" else "a"


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
