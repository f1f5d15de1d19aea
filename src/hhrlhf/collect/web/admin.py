"""The review page (any annotator) and the admin pages: annotators, agreement, the leaderboard.

Server-rendered (Jinja2, autoescape on); ``static/admin.js`` sends the review answers and the
annotator changes through the JSON routes of :mod:`hhrlhf.collect.web.api_review`.
"""

from __future__ import annotations

import re

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from ..services.review import collection_stats, model_leaderboard
from ..services.review_queue import next_task, review_progress
from .auth import optional_annotator
from .pages import MODES, _login_required, _render, scale_points

__all__ = ["router", "split_prefix"]

router = APIRouter(include_in_schema=False)

#: bootstrap resamples behind the admin pages (the CLI and the JSON routes take more on request)
PAGE_RESAMPLES = 500

_SPEAKER = re.compile(r"\n\n(Human|Assistant):")


def split_prefix(prefix: str) -> list[dict]:
    """The transcript before a turn as ``[{"role": "human"|"assistant", "text"}]`` (the final
    empty ``Assistant:`` left out)."""
    parts = _SPEAKER.split(prefix)
    out = []
    for speaker, text in zip(parts[1::2], parts[2::2], strict=True):
        text = text.strip()
        if text or speaker == "Human":
            out.append({"role": speaker.lower(), "text": text})
    if out and out[-1]["role"] == "assistant" and not out[-1]["text"]:
        out.pop()
    return out


def _forbidden(request: Request):
    return _render(request, "collect/error.html", 403, message="Admins only.", page="admin")


@router.get("/review", response_class=HTMLResponse)
def review_page(request: Request):
    who = optional_annotator(request)
    if who is None:
        return _login_required(request)
    st = request.app.state
    task = next_task(st.storage, who, st.settings.review_fraction, rng=st.rng)
    progress = review_progress(st.storage, who, st.settings.review_fraction)
    points = st.settings.strength_points
    mode = MODES.get(task["mode"] if task else "helpful", MODES["helpful"])
    return _render(
        request,
        "collect/review.html",
        task=task,
        transcript=split_prefix(task["prefix"]) if task else [],
        mode=mode,
        points=points,
        scale=scale_points(points, task["mode"] if task else "helpful"),
        progress=progress,
        page="review",
    )


def _admin(request: Request):
    """``(admin, None)``, or ``(None, page)``: the login page for a visitor, the forbidden
    page for a signed-in non-admin."""
    who = optional_annotator(request)
    if who is None:
        return None, _login_required(request)
    if not who.is_admin:
        return None, _forbidden(request)
    return who, None


@router.get("/admin", response_class=HTMLResponse)
def admin_page(request: Request):
    who, refused = _admin(request)
    if refused is not None:
        return refused
    storage = request.app.state.storage
    stats = collection_stats(storage, resamples=PAGE_RESAMPLES)
    conversations = storage.list_conversations(who, all_=True)
    return _render(
        request,
        "collect/admin.html",
        stats=stats,
        conversations=conversations,
        page="admin",
    )


@router.get("/admin/leaderboard", response_class=HTMLResponse)
def admin_leaderboard_page(request: Request):
    who, refused = _admin(request)
    if refused is not None:
        return refused
    board = model_leaderboard(request.app.state.storage, resamples=PAGE_RESAMPLES, robustness=True)
    return _render(request, "collect/admin_leaderboard.html", board=board, page="admin")
