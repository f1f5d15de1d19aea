"""The collection database: SQLAlchemy 2 models. Change them only with a migration."""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class Annotator(Base):
    __tablename__ = "annotators"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    role: Mapped[str] = mapped_column(String(20), default="annotator")  # annotator | admin
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)
    #: free attributes, e.g. {"is_upworker": true}
    attributes: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    #: stable integer for exports (red_team_member_id)
    member_id: Mapped[int] = mapped_column(Integer, unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    #: the qualification round (``qualification_reviews`` gold reviews first): NULL while
    #: not judged (or the round is off), "passed" | "failed" once judged
    qualification: Mapped[str | None] = mapped_column(String(20), nullable=True)
    qualified_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class Session(Base):
    __tablename__ = "sessions"

    #: sha256 of the cookie value
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    annotator_id: Mapped[int] = mapped_column(
        ForeignKey("annotators.id", ondelete="CASCADE"), index=True
    )
    csrf_token: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


def _children(parent: str, order_by: str) -> Any:
    """A one-to-many list of rows that belong to this one: ordered, deleted with it."""
    return relationship(back_populates=parent, order_by=order_by, cascade="all, delete-orphan")


class Conversation(Base):
    __tablename__ = "conversations"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    #: random, stable across databases: the train/test split hashes it
    uid: Mapped[str] = mapped_column(String(32), unique=True)
    annotator_id: Mapped[int] = mapped_column(ForeignKey("annotators.id"), index=True)
    mode: Mapped[str] = mapped_column(String(20))  # helpful | red-team
    task_description: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(20), default="open")  # open | finished
    comment: Mapped[str | None] = mapped_column(Text, nullable=True)
    rating: Mapped[int | None] = mapped_column(Integer, nullable=True)
    #: red-team: the one backend of the whole conversation
    backend: Mapped[str | None] = mapped_column(String(200), nullable=True)
    #: red-team: "picked" | "other", what the conversation continues with
    red_team_continue: Mapped[str | None] = mapped_column(String(20), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    #: the imported task the conversation was handed (NULL: the annotator's own)
    task_id: Mapped[int | None] = mapped_column(
        ForeignKey("tasks.id", ondelete="SET NULL"), nullable=True, index=True
    )
    #: the guidelines' version current when it was started (NULL: the campaign has none)
    guidelines_version: Mapped[int | None] = mapped_column(Integer, nullable=True)

    turns: Mapped[list[Turn]] = _children("conversation", "Turn.index")


class Turn(Base):
    __tablename__ = "turns"
    __table_args__ = (UniqueConstraint("conversation_id", "index"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    conversation_id: Mapped[int] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), index=True
    )
    index: Mapped[int] = mapped_column(Integer)
    human: Mapped[str] = mapped_column(Text)
    #: the exact HH transcript prefix, ending in "\n\nAssistant:"
    prefix: Mapped[str] = mapped_column(Text)
    #: pending | generating | ready | failed
    status: Mapped[str] = mapped_column(String(20), default="pending")
    lease_owner: Mapped[str | None] = mapped_column(String(64), nullable=True)
    lease_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    #: Stop was asked for through a worker that is not writing the turn: the one that is stops
    #: its responses and stores their text (cleared when the lease is taken or released)
    stop_requested: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    #: the response the conversation continues with (picked, edited, or for red-team maybe the other)
    continued: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    #: when both candidates were complete (shown to the annotator)
    ready_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)

    conversation: Mapped[Conversation] = relationship(back_populates="turns")
    candidates: Mapped[list[Candidate]] = _children("turn", "Candidate.slot")
    comparisons: Mapped[list[Comparison]] = _children("turn", "Comparison.id")


class Candidate(Base):
    __tablename__ = "candidates"
    __table_args__ = (UniqueConstraint("turn_id", "slot"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    turn_id: Mapped[int] = mapped_column(ForeignKey("turns.id", ondelete="CASCADE"), index=True)
    slot: Mapped[str] = mapped_column(String(1))  # a (shown as A) | b
    backend: Mapped[str] = mapped_column(String(200))
    model: Mapped[str | None] = mapped_column(String(200), nullable=True)
    #: the backend's model_type and num_params when generated (NULL: not configured, or a
    #: row from before they were recorded); the red-team export reads them
    model_type: Mapped[str | None] = mapped_column(String(200), nullable=True)
    num_params: Mapped[str | None] = mapped_column(String(50), nullable=True)
    params: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    #: pending | ready | failed
    status: Mapped[str] = mapped_column(String(20), default="pending")
    text: Mapped[str | None] = mapped_column(Text, nullable=True)
    raw_text: Mapped[str | None] = mapped_column(Text, nullable=True)
    cut: Mapped[bool] = mapped_column(Boolean, default=False)
    finish_reason: Mapped[str | None] = mapped_column(String(50), nullable=True)
    latency_ms: Mapped[int | None] = mapped_column(Integer, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)

    turn: Mapped[Turn] = relationship(back_populates="candidates")


class Comparison(Base):
    __tablename__ = "comparisons"
    #: at most one comparison of each kind per turn: the database enforces it under concurrency
    __table_args__ = (UniqueConstraint("turn_id", "kind"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    turn_id: Mapped[int] = mapped_column(ForeignKey("turns.id", ondelete="CASCADE"), index=True)
    annotator_id: Mapped[int] = mapped_column(ForeignKey("annotators.id"), index=True)
    #: "pick": chosen/rejected are candidate slots; "edit": chosen_text is the edit,
    #: rejected_slot the original picked candidate
    kind: Mapped[str] = mapped_column(String(10))
    chosen_slot: Mapped[str | None] = mapped_column(String(1), nullable=True)
    rejected_slot: Mapped[str | None] = mapped_column(String(1), nullable=True)
    chosen_text: Mapped[str] = mapped_column(Text)
    rejected_text: Mapped[str] = mapped_column(Text)
    #: the annotator's pick ("a" | "b") and strength as given (1 = slightly / unsure)
    pick: Mapped[str] = mapped_column(String(1))
    strength: Mapped[int] = mapped_column(Integer)
    request_id: Mapped[str | None] = mapped_column(String(100), nullable=True)
    shown_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    decided_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))

    turn: Mapped[Turn] = relationship(back_populates="comparisons")


class Review(Base):
    """A finished comparison re-shown, blind, to another annotator (same prefix, same two
    responses, order re-randomised), or a gold comparison shown exactly the same way: one of
    ``comparison_id`` and ``gold_id`` is set. ``pick`` is stored in the ORIGINAL slot order
    (a gold item's: a = its chosen, b = its rejected)."""

    __tablename__ = "reviews"
    __table_args__ = (
        UniqueConstraint("comparison_id", "reviewer_id"),
        UniqueConstraint("gold_id", "reviewer_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    comparison_id: Mapped[int | None] = mapped_column(
        ForeignKey("comparisons.id", ondelete="CASCADE"), nullable=True, index=True
    )
    gold_id: Mapped[int | None] = mapped_column(
        ForeignKey("gold_items.id", ondelete="CASCADE"), nullable=True, index=True
    )
    reviewer_id: Mapped[int] = mapped_column(ForeignKey("annotators.id"), index=True)
    #: True when the reviewer saw the original B on the left
    swapped: Mapped[bool] = mapped_column(Boolean, default=False)
    #: assigned | done
    status: Mapped[str] = mapped_column(String(20), default="assigned")
    pick: Mapped[str | None] = mapped_column(String(1), nullable=True)
    strength: Mapped[int | None] = mapped_column(Integer, nullable=True)
    assigned_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    decided_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class RateCount(Base):
    """Requests counted against a rate limit, per minute and worker process: each worker adds
    its own every second or so and reads everyone's (web/ratelimit.py), so a limit holds
    across workers and hosts. Rows of minutes past are deleted as they are written."""

    __tablename__ = "rate_counts"

    #: login | writes
    kind: Mapped[str] = mapped_column(String(16), primary_key=True)
    #: a client address (login) or an annotator id (writes)
    key: Mapped[str] = mapped_column(String(128), primary_key=True)
    #: minutes since the epoch (UTC)
    minute: Mapped[int] = mapped_column(Integer, primary_key=True)
    #: the lease owner id of the worker process that counted them
    worker: Mapped[str] = mapped_column(String(64), primary_key=True)
    hits: Mapped[int] = mapped_column(Integer)


class ComparisonFlag(Base):
    """A collected comparison's mislabel flag (``hh collect flag``, :mod:`hhrlhf.reward.flag`):
    the latest run's only, a new run replacing them all."""

    __tablename__ = "comparison_flags"

    comparison_id: Mapped[int] = mapped_column(
        ForeignKey("comparisons.id", ondelete="CASCADE"), primary_key=True
    )
    #: the mean out-of-fold r(chosen) - r(rejected) of the exported line (a red-team pick
    #: swapped: chosen is the less harmful response)
    margin: Mapped[float] = mapped_column(Float)
    margin_sd: Mapped[float] = mapped_column(Float)
    p_mislabelled: Mapped[float] = mapped_column(Float)
    #: likely_mislabelled | ambiguous | clear
    cls: Mapped[str] = mapped_column("class", String(20))
    flagged_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class CampaignSetting(Base):
    """The campaign's live settings, set in /admin or by the CLI (``free_conversations``,
    ``targets``...): one JSON value per key; a key never set has its default."""

    __tablename__ = "campaign_settings"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[Any] = mapped_column(JSON)
    updated_by: Mapped[str | None] = mapped_column(String(200), nullable=True)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class Guidelines(Base):
    """One version of the campaign's guidelines (Markdown); the highest version is current."""

    __tablename__ = "guidelines"

    version: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    text: Mapped[str] = mapped_column(Text)
    #: annotators must read and acknowledge it again before their next conversation
    important: Mapped[bool] = mapped_column(Boolean, default=False)
    author: Mapped[str | None] = mapped_column(String(200), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class GuidelinesAck(Base):
    """An annotator has read and acknowledged a version of the guidelines."""

    __tablename__ = "guidelines_acks"

    annotator_id: Mapped[int] = mapped_column(
        ForeignKey("annotators.id", ondelete="CASCADE"), primary_key=True
    )
    version: Mapped[int] = mapped_column(
        ForeignKey("guidelines.version", ondelete="CASCADE"), primary_key=True
    )
    acked_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class Task(Base):
    """A task prompt an annotator is handed when starting a conversation (``hh collect tasks
    import``, /admin): ``repeat`` conversations each, by different annotators."""

    __tablename__ = "tasks"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    text: Mapped[str] = mapped_column(Text)
    mode: Mapped[str] = mapped_column(String(20))  # helpful | red-team
    repeat: Mapped[int] = mapped_column(Integer, default=1)
    tags: Mapped[list[str]] = mapped_column(JSON, default=list)
    #: conversations handed this task so far
    served: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    disabled: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class BackendState(Base):
    """A backend's live state, set in /admin or by ``hh collect backend``: paused, or a
    weight other than the config's. Every worker reads it every few seconds."""

    __tablename__ = "backend_states"

    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    paused: Mapped[bool] = mapped_column(Boolean, default=False)
    #: NULL: the config's weight
    weight: Mapped[float | None] = mapped_column(Float, nullable=True)
    updated_by: Mapped[str | None] = mapped_column(String(200), nullable=True)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class BackendEvent(Base):
    """The log of live backend changes: who paused, resumed or re-weighted which, and when."""

    __tablename__ = "backend_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    backend: Mapped[str] = mapped_column(String(200), index=True)
    #: pause | resume | weight
    action: Mapped[str] = mapped_column(String(20))
    #: the new weight (action "weight")
    value: Mapped[float | None] = mapped_column(Float, nullable=True)
    by: Mapped[str | None] = mapped_column(String(200), nullable=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class GoldItem(Base):
    """A comparison with a known answer (``hh collect gold import``): shown in review exactly
    like a collected one and scored; never exported."""

    __tablename__ = "gold_items"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    #: the HH transcript prefix, ending in "\n\nAssistant:"
    prefix: Mapped[str] = mapped_column(Text)
    chosen: Mapped[str] = mapped_column(Text)
    rejected: Mapped[str] = mapped_column(Text)
    #: helpful | red-team (the scale's wording in review)
    mode: Mapped[str] = mapped_column(String(20), default="helpful")
    #: sha256 of prefix, chosen and rejected: an item imported twice is one item
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    source: Mapped[str | None] = mapped_column(String(500), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class Verdict(Base):
    """A reviewer's verdict on a collected comparison: accept, reject (with a reason) or fix
    (the fixed pick and strength kept beside the original)."""

    __tablename__ = "verdicts"

    comparison_id: Mapped[int] = mapped_column(
        ForeignKey("comparisons.id", ondelete="CASCADE"), primary_key=True
    )
    reviewer_id: Mapped[int] = mapped_column(ForeignKey("annotators.id"), index=True)
    #: accept | reject | fix
    verdict: Mapped[str] = mapped_column(String(10))
    reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    fixed_pick: Mapped[str | None] = mapped_column(String(1), nullable=True)
    fixed_strength: Mapped[int | None] = mapped_column(Integer, nullable=True)
    decided_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


# The tables as Core objects: the annotation loop's hot services (a message, its generation,
# a choice) read and write plain rows through them, with statements built once (no ORM
# objects to load and track: bench/RESULTS-collect.md has the cost of each).
conversations_table = cast(Table, Conversation.__table__)
turns_table = cast(Table, Turn.__table__)
candidates_table = cast(Table, Candidate.__table__)
comparisons_table = cast(Table, Comparison.__table__)
rate_counts_table = cast(Table, RateCount.__table__)
