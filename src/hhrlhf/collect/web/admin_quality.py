"""``/admin/quality``: the qualification round (who is waiting, passed, failed), each
annotator's gold accuracy and the gold items; and the admin's JSON routes
``GET /api/v1/admin/qualification`` and ``POST /api/v1/admin/qualification/{name}/reset``."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response

from ..domain import AnnotatorInfo
from ..services.gold import gold_accuracy, gold_counts
from ..services.qualification import Qualification, QualificationRow, qualification, reset
from . import schemas
from .admin import _admin
from .auth import logged_in_admin
from .context import app_context
from .pages import _render
from .schemas import answers

__all__ = ["router", "api_router"]

router = APIRouter(include_in_schema=False)
api_router = APIRouter(prefix="/api/v1")

Admin = Annotated[AnnotatorInfo, Depends(logged_in_admin)]


def _row(r: QualificationRow) -> dict[str, Any]:
    return {**asdict(r), "accuracy": r.accuracy}


def qualification_json(q: Qualification) -> dict[str, Any]:
    return {
        "round": None if q.round is None else asdict(q.round),
        "gold_items": q.gold_items,
        "warning": q.warning,
        "annotators": [_row(r) for r in q.rows],
    }


@api_router.get(
    "/admin/qualification", response_model=None, responses=answers(schemas.QualificationAnswer)
)
def admin_qualification(request: Request, who: Admin) -> dict[str, Any]:
    """The round's settings and every annotator's place in it (waiting, passed, failed)."""
    return qualification_json(qualification(app_context(request).storage))


@api_router.post(
    "/admin/qualification/{name}/reset",
    response_model=None,
    responses=answers(schemas.QualificationReset),
)
def admin_qualification_reset(name: str, request: Request, who: Admin) -> dict[str, Any]:
    """Give a failed annotator another round (only gold answered from now on counts)."""
    row = reset(app_context(request).storage, name, by=who.name)
    return {"annotator": _row(row)}


@router.get("/admin/quality", response_class=HTMLResponse)
def admin_quality_page(request: Request) -> Response:
    who, refused = _admin(request)
    if refused is not None:
        return refused
    storage = app_context(request).storage
    return _render(
        request,
        "collect/admin_quality.html",
        q=qualification(storage),
        counts=gold_counts(storage),
        accuracy=gold_accuracy(storage),
        page="admin",
    )
