"""The Backends page (``/admin/backends``: health, latency, failures, and the live draw:
pause, resume, weight, the change log) and its JSON routes under ``/api/v1/admin/backends``
(admins only; ``static/admin.js`` sends the page's changes through them)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, ConfigDict, StrictFloat, StrictInt

from ..domain import AnnotatorInfo
from ..generation.health import CHECKED_KINDS, check_backends
from ..services import backend_live
from ..services.overview import backend_activity
from .admin import _admin
from .api import _Body
from .auth import logged_in_admin
from .context import AppContext, app_context
from .pages import _render
from .schemas import answers

__all__ = ["page_router", "router"]

router = APIRouter(prefix="/api/v1")
page_router = APIRouter(include_in_schema=False)

Admin = Annotated[AnnotatorInfo, Depends(logged_in_admin)]


class _Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BackendLive(_Answer):
    name: str
    kind: str
    paused: bool
    #: the weight the draw uses now (the config's unless re-weighted)
    weight: float
    config_weight: float
    #: drawn itself (false: only a rerank backend's base)
    drawn: bool
    updated_by: str | None
    updated_at: str | None


class BackendChange(_Answer):
    backend: str
    action: Literal["pause", "resume", "weight"]
    #: the new weight (``weight``)
    value: float | None
    #: the weight before it, when known
    previous: float | None
    by: str | None
    at: str | None


class BackendsLive(_Answer):
    """Each configured backend's live state, and the log of changes (oldest first)."""

    backends: list[BackendLive]
    events: list[BackendChange]


class BackendChanged(_Answer):
    """The backend's state after the change; ``changed`` false: it was so already (nothing
    logged)."""

    backend: BackendLive
    changed: bool


class NewWeight(_Body):
    weight: StrictFloat | StrictInt


def _events(st: AppContext) -> list[backend_live.BackendChange]:
    weights = {b.name: b.weight for b in st.settings.backends}
    return backend_live.backend_events(st.storage, config_weights=weights)


@router.get("/admin/backends", response_model=None, responses=answers(BackendsLive))
def admin_backends(request: Request, who: Admin) -> dict[str, Any]:
    st = app_context(request)
    return {
        "backends": [s.to_dict() for s in backend_live.backend_states(st.storage, st.settings)],
        "events": [e.to_dict() for e in _events(st)],
    }


def _answer(st: AppContext, done: backend_live.Changed) -> dict[str, Any]:
    if done.changed:  # this worker draws with it at once; the others within a refresh
        st.live.refresh(st.storage)
    return {"backend": done.backend.to_dict(), "changed": done.changed}


@router.post("/admin/backends/{name}/pause", response_model=None, responses=answers(BackendChanged))
def admin_pause_backend(name: str, request: Request, who: Admin) -> dict[str, Any]:
    """New messages and conversations stop drawing the backend; its turns in flight finish
    (409: it is the last one new conversations could draw)."""
    st = app_context(request)
    return _answer(st, backend_live.pause(st.storage, st.settings, name, who.name))


@router.post(
    "/admin/backends/{name}/resume", response_model=None, responses=answers(BackendChanged)
)
def admin_resume_backend(name: str, request: Request, who: Admin) -> dict[str, Any]:
    st = app_context(request)
    return _answer(st, backend_live.resume(st.storage, st.settings, name, who.name))


@router.post(
    "/admin/backends/{name}/weight", response_model=None, responses=answers(BackendChanged)
)
def admin_weight_backend(
    name: str, body: NewWeight, request: Request, who: Admin
) -> dict[str, Any]:
    """The backend's share of the draw from now on (a finite number above 0)."""
    st = app_context(request)
    done = backend_live.set_weight(st.storage, st.settings, name, body.weight, who.name)
    return _answer(st, done)


@page_router.get("/admin/backends", response_class=HTMLResponse)
def admin_backends_page(request: Request) -> Response:
    """Each backend: its server's answer now, its last hour's latency, its latest failures,
    its live state (paused, weight) with the buttons that change it; the change log."""
    _, refused = _admin(request)
    if refused is not None:
        return refused
    st = app_context(request)
    health = {h.name: h for h in check_backends(st.settings.backends)}
    activity = backend_activity(st.storage)
    states = {s.name: s for s in backend_live.backend_states(st.storage, st.settings)}
    rows: list[dict[str, Any]] = []
    for b in st.settings.backends:
        rows.append(
            {
                "config": b,
                "checked": b.kind in CHECKED_KINDS,
                "health": health[b.name],
                "activity": activity.pop(b.name, None),
                "live": states[b.name],
            }
        )
    # backends no longer configured that still have candidates
    gone = [{"name": name, "activity": a} for name, a in sorted(activity.items())]
    events = list(reversed(_events(st)))  # newest first
    return _render(
        request,
        "collect/admin_backends.html",
        rows=rows,
        gone=gone,
        events=events,
        refresh_seconds=f"{st.settings.backend_refresh_seconds:g}",
        page="admin",
    )
