"""The annotator's feedback: ``/feedback`` (a page) and ``GET /api/v1/feedback`` (the same
as JSON), over :mod:`hhrlhf.collect.services.feedback`."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response

from ..domain import AnnotatorInfo
from ..services.feedback import FEEDBACK_LIMIT, Feedback, feedback
from . import schemas
from .admin import split_prefix
from .auth import logged_in, optional_annotator
from .context import app_context
from .pages import MODES, _login_required, _render
from .schemas import answers

__all__ = ["router", "api_router"]

router = APIRouter(include_in_schema=False)
api_router = APIRouter(prefix="/api/v1")

Who = Annotated[AnnotatorInfo, Depends(logged_in)]


def feedback_json(found: Feedback) -> dict[str, Any]:
    out = asdict(found)
    out["qualification"] = (
        None
        if found.qualification is None
        else {**out["qualification"], "accuracy": found.qualification.accuracy}
    )
    return out


@api_router.get("/feedback", response_model=None, responses=answers(schemas.Feedback))
def feedback_api(request: Request, who: Who) -> dict[str, Any]:
    """The signed-in annotator's gold misses and the reviews that disagreed with them."""
    return feedback_json(feedback(app_context(request).storage, who))


@router.get("/feedback", response_class=HTMLResponse)
def feedback_page(request: Request) -> Response:
    who = optional_annotator(request)
    if who is None:
        return _login_required(request)
    found = feedback(app_context(request).storage, who)
    return _render(
        request,
        "collect/feedback.html",
        found=found,
        split=split_prefix,
        modes=MODES,
        limit=FEEDBACK_LIMIT,
        page="feedback",
    )
