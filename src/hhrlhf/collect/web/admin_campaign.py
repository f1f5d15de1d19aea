"""The campaign's admin page (``/admin/campaign``): the campaign's total and every
annotator's progress toward their targets, the tasks (served of their repeats) with a form
to add one, the free-conversations switch and the targets. ``static/campaign.js`` sends the
forms through the JSON routes of :mod:`.api_campaign`."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from ..services import assign, campaign, tasks
from .admin import _admin
from .context import app_context
from .pages import MODES, _render

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/admin/campaign", response_class=HTMLResponse)
def admin_campaign_page(request: Request) -> Response:
    _, refused = _admin(request)
    if refused is not None:
        return refused
    storage = app_context(request).storage
    return _render(
        request,
        "collect/admin_campaign.html",
        settings_now=campaign.campaign(storage),
        progress=assign.campaign_progress(storage),
        tasks=tasks.list_tasks(storage),
        modes=list(MODES),
        units=campaign.UNITS,
        page="admin",
    )
