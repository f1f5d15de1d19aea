"""Review by the reviewers: the ``/judge`` page and its JSON routes (reviewers and admins), and
the verdict counts (``/api/v1/admin/verdicts``: admins). The rules are
:mod:`..services.verdicts`'; ``static/judge.js`` sends the verdicts."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any, Literal
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, ConfigDict, StrictInt

from ...errors import CollectError, Forbidden
from ..domain import AnnotatorInfo
from ..services.verdicts import (
    MAX_REASON,
    JudgeItem,
    judge_item,
    next_to_judge,
    record_verdict,
    verdict_counts,
)
from ..textrules import Text
from .admin import split_prefix
from .api import _Body
from .auth import logged_in, logged_in_admin, optional_annotator
from .context import app_context
from .errors import status_of
from .pages import MODES, _login_required, _render, scale_points
from .schemas import answers

__all__ = ["router", "api_router"]

router = APIRouter(include_in_schema=False)
api_router = APIRouter(prefix="/api/v1")

Who = Annotated[AnnotatorInfo, Depends(logged_in)]
Admin = Annotated[AnnotatorInfo, Depends(logged_in_admin)]
#: comparisons put aside on the page (``?skip=``), at most this many remembered
MAX_SKIPPED = 200
#: suggestions offered for a rejection's reason (any text is accepted)
REASONS = (
    "both responses are unusable",
    "the pick is not what the guidelines ask",
    "the conversation is off-task",
    "the message is not a real request",
)


class _Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")


class VerdictInfo(_Answer):
    comparison_id: int
    verdict: Literal["accept", "reject", "fix"]
    reason: str | None
    fixed_pick: Literal["a", "b"] | None
    fixed_strength: int | None
    reviewer: str
    decided_at: str | None


class JudgeItemAnswer(_Answer):
    comparison_id: int
    mode: str
    task_description: str
    prefix: str
    human: str
    responses: dict[str, str | None]
    pick: Literal["a", "b"]
    strength: int
    annotator: str
    #: why it is early in the queue: likely_mislabelled, disagreed, ambiguous (None: not doubted)
    doubt: str | None
    verdict: VerdictInfo | None


class NextToJudge(_Answer):
    """The next comparison to judge (None: nothing waits), the scale's points, the queue."""

    item: JudgeItemAnswer | None
    strength_points: int
    waiting: int


class VerdictRecorded(_Answer):
    """The verdict as recorded."""

    verdict: VerdictInfo


class VerdictCounts(_Answer):
    """The verdicts so far, and the comparisons waiting for one."""

    accepted: int
    rejected: int
    fixed: int
    waiting: int
    rejected_by_reason: dict[str, int]


class VerdictBody(_Body):
    verdict: Text
    reason: Text | None = None
    pick: Text | None = None
    strength: StrictInt | None = None


def _judge(who: AnnotatorInfo) -> AnnotatorInfo:
    if not who.can_judge:
        raise Forbidden("reviewers and admins only")
    return who


def _skipped(skip: list[int]) -> frozenset[int]:
    return frozenset(skip[:MAX_SKIPPED])


@api_router.get("/judge/next", response_model=None, responses=answers(NextToJudge))
def judge_next(
    request: Request,
    who: Who,
    skip: Annotated[list[int], Query()] = [],  # noqa: B006
) -> dict[str, Any]:
    """The first comparison of the caller's queue not in ``skip`` (put aside)."""
    st = app_context(request)
    item = next_to_judge(st.storage, _judge(who), _skipped(skip))
    return {
        "item": None if item is None else asdict(item),
        "strength_points": st.settings.strength_points,
        "waiting": verdict_counts(st.storage).waiting,
    }


@api_router.post("/judge/{comparison_id}", response_model=None, responses=answers(VerdictRecorded))
def judge_post(comparison_id: int, body: VerdictBody, request: Request, who: Who) -> dict[str, Any]:
    st = app_context(request)
    info = record_verdict(
        st.storage,
        _judge(who),
        comparison_id,
        body.verdict,
        reason=body.reason,
        pick=body.pick,
        strength=body.strength,
        points=st.settings.strength_points,
    )
    return {"verdict": asdict(info)}


@api_router.get("/admin/verdicts", response_model=None, responses=answers(VerdictCounts))
def admin_verdicts(request: Request, who: Admin) -> dict[str, Any]:
    return asdict(verdict_counts(app_context(request).storage))


def _item(
    request: Request, who: AnnotatorInfo, id: int | None, skip: list[int]
) -> JudgeItem | None:
    storage = app_context(request).storage
    if id is not None:
        return judge_item(storage, who, id)
    return next_to_judge(storage, who, _skipped(skip))


@router.get("/judge", response_class=HTMLResponse)
def judge_page(
    request: Request,
    id: int | None = None,
    skip: Annotated[list[int], Query()] = [],  # noqa: B006
) -> Response:
    """The next comparison to judge (``?id=``: that one), not blind: the annotator's pick shown."""
    who = optional_annotator(request)
    if who is None:
        return _login_required(request)
    try:
        item = _item(request, _judge(who), id, skip)
    except CollectError as exc:
        return _render(
            request, "collect/error.html", status_of(exc), message=str(exc), page="judge"
        )
    st = app_context(request)
    points = st.settings.strength_points
    mode = item.mode if item else "helpful"
    skipped = _skipped(skip) | ({item.comparison_id} if item else set())
    scale = scale_points(points, mode)
    return _render(
        request,
        "collect/judge.html",
        item=item,
        transcript=split_prefix(item.prefix) if item else [],
        mode=MODES.get(mode, MODES["helpful"]),
        points=points,
        scale=scale,
        label=next(
            (p.label for p in scale if item and (p.slot, p.strength) == (item.pick, item.strength)),
            "",
        ),
        skip_url="/judge?" + urlencode([("skip", i) for i in sorted(skipped)]),
        counts=verdict_counts(st.storage),
        reasons=REASONS,
        max_reason=MAX_REASON,
        page="judge",
    )
