"""The review, statistics and leaderboard routes under ``/api/v1`` (reviews: any annotator;
``/api/v1/admin/...``: admins only)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from pydantic import StrictBool, StrictInt

from ...errors import Conflict, Invalid
from ...ranking.leaderboard import Leaderboard
from ..domain import ROLES, AnnotatorInfo
from ..services import annotators
from ..services.annotators import set_annotator
from ..services.review import ReviewTask, next_task, skip_review, submit_review
from ..services.review_progress import review_progress
from ..services.stats import collection_stats, model_leaderboard, stats_dict
from ..textrules import AttributeValue, Text
from . import schemas
from .api import _Body
from .auth import logged_in, logged_in_admin
from .context import app_context
from .schemas import answers

__all__ = ["router"]

router = APIRouter(prefix="/api/v1")

Who = Annotated[AnnotatorInfo, Depends(logged_in)]
Admin = Annotated[AnnotatorInfo, Depends(logged_in_admin)]
Resamples = Annotated[int, Query(ge=0, le=5000, description="bootstrap resamples")]


class ReviewAnswer(_Body):
    pick: Text
    strength: StrictInt


class NewAnnotator(_Body):
    name: Text
    role: Text = "annotator"
    attributes: dict[Text, AttributeValue] | None = None


class AnnotatorChange(_Body):
    role: Text | None = None
    disabled: StrictBool | None = None
    attributes: dict[Text, AttributeValue] | None = None


def _task_json(task: ReviewTask, *, described: bool = False) -> dict[str, Any]:
    """A review task as the API gives it; ``described``: with the conversation's task
    description (the next task only)."""
    out = asdict(task)
    out["candidates"] = [asdict(c) for c in task.candidates]
    if not described:
        del out["task_description"]
    return out


@router.get("/reviews/next", response_model=None, responses=answers(schemas.NextReview))
def review_next(request: Request, who: Who) -> dict[str, Any]:
    st = app_context(request)
    task = next_task(
        st.storage,
        who,
        st.settings.review_fraction,
        rng=st.rng,
        order=st.settings.review_order,
        gold_fraction=st.settings.gold_fraction,
    )
    progress = review_progress(st.storage, who, st.settings.review_fraction)
    return {
        "review": None if task is None else _task_json(task, described=True),
        "strength_points": st.settings.strength_points,
        "progress": asdict(progress),
    }


@router.post("/reviews/{review_id}/skip", response_model=None, responses=answers(schemas.Skipped))
def review_skip(review_id: int, request: Request, who: Who) -> dict[str, int]:
    """Put an open review aside; it comes back once nothing else is left to review."""
    skip_review(app_context(request).storage, who, review_id)
    return {"skipped": review_id}


@router.post("/reviews/{review_id}", response_model=None, responses=answers(schemas.ReviewAnswered))
def review_answer(
    review_id: int, body: ReviewAnswer, request: Request, who: Who
) -> dict[str, dict[str, Any]]:
    st = app_context(request)
    task = submit_review(
        st.storage, who, review_id, body.pick, body.strength, st.settings.strength_points
    )
    return {"review": _task_json(task)}


@router.get("/admin/stats", response_model=None, responses=answers(schemas.CollectionStats))
def admin_stats(request: Request, who: Admin, resamples: Resamples = 1000) -> dict[str, Any]:
    return stats_dict(collection_stats(app_context(request).storage, resamples=resamples))


@router.get("/admin/leaderboard", response_model=None, responses=answers(schemas.Leaderboard))
def admin_leaderboard(request: Request, who: Admin, resamples: Resamples = 1000) -> Leaderboard:
    st = app_context(request)
    weights = {b.name: b.weight for b in st.settings.backends}
    return model_leaderboard(st.storage, resamples=resamples, config_weights=weights)


@router.post(
    "/admin/annotators",
    response_model=None,
    status_code=201,
    responses=answers(schemas.AnnotatorAdded, 201),
)
def admin_add_annotator(body: NewAnnotator, request: Request, who: Admin) -> dict[str, Any]:
    storage = app_context(request).storage
    if body.role not in ROLES:
        raise Invalid(f"role must be one of {', '.join(ROLES)}, not {body.role!r}")
    if annotators.annotator_by_name(storage, body.name.strip()) is not None:
        raise Conflict(f"annotator {body.name.strip()!r} already exists")
    info, token = annotators.add_annotator(
        storage, body.name, role=body.role, attributes=body.attributes
    )
    return {"annotator": info.to_dict(), "token": token}


@router.post(
    "/admin/annotators/{name}", response_model=None, responses=answers(schemas.AnnotatorChanged)
)
def admin_change_annotator(
    name: str, body: AnnotatorChange, request: Request, who: Admin
) -> dict[str, dict[str, Any]]:
    storage = app_context(request).storage
    if body.disabled is not None and name == who.name and body.disabled:
        raise Conflict("you cannot disable yourself")
    info = set_annotator(
        storage,
        name,
        role=body.role,
        attributes=body.attributes,
        disabled=body.disabled,
    )
    return {"annotator": info.to_dict()}
