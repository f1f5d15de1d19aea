"""The guidelines' pages: ``/guidelines`` (every annotator: the current version, and the
button that acknowledges it) and ``/admin/guidelines`` (the editor: preview, publish, the
versions). Server-rendered; ``static/guidelines.js`` sends the buttons' requests through the
JSON routes of :mod:`.api_guidelines` (the preview is the server's sanitised HTML)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from ..services import guidelines
from .admin import _admin
from .auth import optional_annotator
from .context import app_context
from .pages import _login_required, _render

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/guidelines", response_class=HTMLResponse)
def guidelines_page(request: Request) -> Response:
    who = optional_annotator(request)
    if who is None:
        return _login_required(request)
    status = guidelines.status(app_context(request).storage, who)
    return _render(request, "collect/guidelines.html", guide=status, page="guidelines")


@router.get("/admin/guidelines", response_class=HTMLResponse)
def admin_guidelines_page(request: Request) -> Response:
    who, refused = _admin(request)
    if refused is not None:
        return refused
    assert who is not None
    storage = app_context(request).storage
    return _render(
        request,
        "collect/admin_guidelines.html",
        guide=guidelines.status(storage, who),
        versions=guidelines.versions(storage),
        max_chars=guidelines.MAX_GUIDELINES_CHARS,
        page="admin",
    )
