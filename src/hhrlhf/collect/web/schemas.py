"""What the JSON API answers, as pydantic models: ``/api/v1/openapi.json`` documents every
answer with these (each route's ``responses``), and the tests validate real answers against
them with unknown keys forbidden, so the documentation cannot drift from the code.

The routes return plain dicts built by the services (no second validation on the hot path);
these models are the contract those dicts are held to.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, RootModel

__all__ = ["answers"]


class _Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Health(_Answer):
    status: Literal["ok"]


class Me(_Answer):
    name: str
    role: Literal["annotator", "reviewer", "admin"]
    #: send it back as ``X-CSRF-Token`` with every write made with the session cookie
    csrf_token: str | None
    #: how this request was authenticated: ``"bearer"`` or ``"cookie"``
    auth: str


class ConversationSummary(_Answer):
    id: int
    mode: Literal["helpful", "red-team"]
    task_description: str
    status: Literal["open", "finished"]
    turns: int
    created_at: str | None
    finished_at: str | None
    #: admins only
    annotator: str | None = None


class ConversationList(_Answer):
    conversations: list[ConversationSummary]


class Candidate(_Answer):
    slot: Literal["a", "b"]
    text: str | None
    cut: bool | None
    #: why the text was cut (a speaker marker, the size cap, the model's length limit)
    cut_reason: str | None
    status: Literal["pending", "ready", "failed"]
    #: a failed response: what went wrong (the model server's explanation for admins)
    error: str | None = None
    #: admins only
    backend: str | None = None
    model: str | None = None
    params: dict[str, Any] | None = None
    finish_reason: str | None = None
    latency_ms: int | None = None
    #: the text rendered from markdown (raw HTML off), what the page shows
    html: str | None = None


class TurnView(_Answer):
    id: int
    index: int
    human: str
    status: Literal["pending", "generating", "ready", "failed"]
    candidates: list[Candidate]
    pick: Literal["a", "b"] | None
    strength: int | None
    edit: str | None
    #: the assistant text the conversation continued with (None until the choice)
    continued: str | None
    #: ``continued`` rendered from markdown
    continued_html: str | None = None
    decided_at: str | None


class Conversation(_Answer):
    id: int
    mode: Literal["helpful", "red-team"]
    task_description: str
    status: Literal["open", "finished"]
    comment: str | None
    rating: int | None
    created_at: str | None
    finished_at: str | None
    turns: list[TurnView]
    #: the points of the strength scale (the app's config)
    strength_points: int
    #: the reader is the conversation's annotator (an admin reading another's conversation
    #: may Stop and Retry its generation, never write in it)
    yours: bool
    #: admins only
    backend: str | None = None
    red_team_continue: str | None = None


class NewCandidate(_Answer):
    slot: Literal["a", "b"]
    text: str
    cut: bool
    cut_reason: str | None


class TurnError(_Answer):
    slot: Literal["a", "b"]
    message: str


class NewTurn(_Answer):
    """The turn as created; with ``"wait": true``, its responses once both are generated."""

    id: int
    index: int
    status: Literal["pending", "generating", "ready", "failed"]
    candidates: list[NewCandidate]
    errors: list[TurnError] | None = None


class Status(_Answer):
    status: str


class Withdrawn(_Answer):
    """A withdrawn message's text (its turn and failed responses are gone): to edit and send."""

    text: str


class Stopped(_Answer):
    """Whether the turn's responses were stopped (each keeps its text so far; one with none
    fails, so the turn can be retried at once), and whether by this worker (``here``) or through the database."""

    stopped: bool
    here: bool


class Skipped(_Answer):
    """The review put aside; it comes back once nothing else is left."""

    skipped: int


class ReviewProgress(_Answer):
    #: reviews this reviewer can still be given
    left: int
    #: of those, the ones they skipped (each comes back once nothing else is left)
    skipped: int
    #: reviews answered since midnight UTC
    done_today: int


class Chosen(_Answer):
    turn: TurnView


class ReviewCandidate(_Answer):
    slot: Literal["a", "b"]
    text: str | None


class ReviewTask(_Answer):
    model_config = ConfigDict(extra="allow")  # the task's context grows with the page

    id: int
    prefix: str
    human: str
    candidates: list[ReviewCandidate]
    status: str
    pick: Literal["a", "b"] | None
    strength: int | None


class NextReview(_Answer):
    model_config = ConfigDict(extra="allow")

    #: None: nothing left to review
    review: ReviewTask | None
    strength_points: int
    progress: ReviewProgress | None = None


class ReviewAnswered(_Answer):
    review: ReviewTask


class Annotator(_Answer):
    id: int
    name: str
    role: Literal["annotator", "reviewer", "admin"]
    disabled: bool
    member_id: int
    attributes: dict[str, Any]
    created_at: str | None


class AnnotatorAdded(_Answer):
    annotator: Annotator
    #: shown once; only its hash is stored
    token: str


class AnnotatorChanged(_Answer):
    annotator: Annotator


class _Open(BaseModel):
    """An answer whose inner numbers are documented in docs/collect.md, not field by field."""

    model_config = ConfigDict(extra="allow")


class CollectionStats(_Open):
    annotators: list[dict[str, Any]]
    agreement: dict[str, Any]
    counts: dict[str, int]
    pairs: list[dict[str, Any]]


class Leaderboard(_Open):
    models: list[dict[str, Any]]


class Trends(_Open):
    """Every annotator's weekly trend and drift flags (docs/collect.md)."""

    weeks: list[dict[str, str]]
    annotators: list[dict[str, Any]]


class DataFile(_Answer):
    subset: str
    split: str
    rows: int
    classes: dict[str, int]


class DataFiles(RootModel[list[DataFile]]):
    """The data's files: subset, split, rows and the count of each quirk class."""


class Report(_Open):
    """The red-team report's numbers for the filtered attempts (docs/redteam.md)."""


class PairView(_Answer):
    subset: str
    split: str
    index: int
    prompt: str
    chosen_response: str
    rejected_response: str
    classes: list[str]


class PairPage(_Answer):
    total: int
    pairs: list[PairView]


class AttemptPage(_Answer):
    total: int
    #: the ten upstream fields, with the upstream spelling of the task score key
    attempts: list[dict[str, Any]]


class Refusal(_Answer):
    #: what went wrong, in words meant for a person
    error: str
    #: a refused field's name (422)
    field: str | None = None


def answers(model: type[BaseModel], status: int = 200) -> dict[int | str, dict[str, Any]]:
    """A route's ``responses=``: its success model and the refusal shape. Documentation only:
    FastAPI neither filters nor re-validates the answers (the services build them; the tests
    hold them to these models)."""
    return {
        status: {"model": model, "description": (model.__doc__ or "success").split("\n")[0]},
        "4XX": {"model": Refusal, "description": "refused: the reason in `error`"},
    }


class QualificationRow(_Answer):
    name: str
    #: waiting | passed | failed
    status: Literal["waiting", "passed", "failed"]
    #: this round's gold reviews (since a reset) answered, and right
    answered: int
    correct: int
    required: int
    qualified_at: str | None
    accuracy: float | None


class Feedback(_Answer):
    #: gold reviews answered wrong, newest first (responses as shown)
    gold_misses: list[dict[str, Any]]
    #: the annotator's comparisons a review picked the other way, newest first
    disagreements: list[dict[str, Any]]
    #: None: no qualification round
    qualification: QualificationRow | None


class QualificationAnswer(_Answer):
    #: None: no round (qualification_reviews is 0)
    round: dict[str, Any] | None
    gold_items: int
    #: said when the round cannot work as set (fewer gold items than it needs)
    warning: str | None
    annotators: list[QualificationRow]


class QualificationReset(_Answer):
    annotator: QualificationRow
