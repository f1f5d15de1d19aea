"""The HTML pages: start or resume a conversation (``/``), a conversation, the instructions.

Page handlers are plain ``def`` functions: FastAPI runs them in its thread pool, so their
database work never blocks the event loop that streams responses.

The pages are server-rendered shells (Jinja2, autoescape on); ``static/collect.js`` drives
them through the same JSON API that scripts use. No inline script or style: the pages pass
what the script needs in ``data-*`` attributes and the CSRF token in a ``<meta>`` tag.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from ...errors import CollectError, Unavailable
from ..services import assign, conversations, guidelines
from .auth import current_annotator, optional_annotator
from .context import app_context
from .errors import status_of

__all__ = ["router", "MODES", "ScalePoint", "scale_points"]

router = APIRouter(include_in_schema=False)

#: the wording each mode uses; red-team pages ask for the MORE harmful response
MODES = {
    "helpful": {
        "title": "Helpful",
        "question": "Which response is more helpful and honest?",
        "better": "better",
        "instruction": (
            "Write a message, read both responses, then pick the more helpful and honest one "
            "on the scale (keys 1-{keys}). If they seem about the same, or you are unsure, pick "
            "the smallest A or B point."
        ),
    },
    "red-team": {
        "title": "Red team",
        "question": "Which response is MORE harmful?",
        "better": "more harmful",
        "instruction": (
            "Write a message, read both responses, then pick the MORE harmful one on the scale "
            "(keys 1-{keys}). If they seem about the same, or you are unsure, pick the smallest "
            "A or B point. Stop whenever you want to."
        ),
    },
}


def _degree(strength: int, points: int) -> str:
    if strength == points:
        return "much"
    if strength == 1:
        return "slightly"
    if strength == points - 1:
        return ""
    return "somewhat"


@dataclass(frozen=True, slots=True)
class ScalePoint:
    """A point of the preference scale: its key (1-based, left to right), the slot it picks
    at which strength, its short name (``A3``) and its label."""

    key: int
    slot: str
    strength: int
    short: str
    label: str


def scale_points(points: int, mode: str = "helpful") -> list[ScalePoint]:
    """The scale left to right: A{points} ... A1 | B1 ... B{points}, with keys and labels.

    Key ``k`` (1-based, left to right) picks ``a`` at strength ``points + 1 - k`` for the left
    half and ``b`` at strength ``k - points`` for the right half. The weakest point of each
    side also means "unsure".
    """
    better = MODES.get(mode, MODES["helpful"])["better"]
    out = []
    for key in range(1, 2 * points + 1):
        if key <= points:
            slot, strength = "a", points + 1 - key
        else:
            slot, strength = "b", key - points
        degree = _degree(strength, points)
        label = f"{slot.upper()} is {degree + ' ' if degree else ''}{better}"
        if strength == 1:
            label += " / unsure"
        out.append(ScalePoint(key, slot, strength, f"{slot.upper()}{strength}", label))
    return out


def _render(request: Request, name: str, status: int = 200, **context: object) -> Response:
    templates = app_context(request).templates
    if templates is None:  # pragma: no cover - the [web] extra brings jinja2
        raise Unavailable("the pages need jinja2: pip install 'hhrlhf[web]'")
    found = current_annotator(request)
    who = optional_annotator(request)
    context.setdefault("who", who)
    context.setdefault("csrf_token", found[1] if found and who else None)
    context.setdefault("settings", app_context(request).settings)
    response: Response = templates.TemplateResponse(request, name, context, status_code=status)
    if context["csrf_token"]:
        response.headers["cache-control"] = "no-store"  # a shared cache must not keep the token
    return response


def _login_required(request: Request) -> Response:
    found = current_annotator(request)
    if found is not None and found[0].disabled:
        message, status = "This account is disabled.", 403
    else:
        message, status = "Open the login link you were given (/login?token=...).", 401
    from .login import _login_page

    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return _login_page(request, message, status, next_url=target)


@router.get("/", response_class=HTMLResponse)
def home(request: Request) -> Response:
    who = optional_annotator(request)
    if who is None:
        return _login_required(request)
    storage = app_context(request).storage
    rows = conversations.list_conversations(storage, who, all_=False)
    progress = assign.my_progress(storage, who)
    return _render(
        request,
        "collect/home.html",
        conversations=rows,
        modes=MODES,
        guidelines=guidelines.status(storage, who),
        progress=progress,
        page="home",
    )


@router.get("/conversations/{conversation_id}", response_class=HTMLResponse)
def conversation_page(conversation_id: int, request: Request) -> Response:
    who = optional_annotator(request)
    if who is None:
        return _login_required(request)
    storage = app_context(request).storage
    try:
        conv = conversations.get_conversation(storage, who, conversation_id)
    except CollectError as exc:
        return _render(
            request, "collect/error.html", status_of(exc), message=str(exc), page="conversation"
        )
    settings = app_context(request).settings
    mode = MODES.get(conv.mode, MODES["helpful"])
    points = settings.strength_points
    return _render(
        request,
        "collect/conversation.html",
        conv=conv,
        mode=mode,
        points=points,
        scale=scale_points(points, conv.mode),
        instruction=mode["instruction"].format(keys=2 * points),
        page="conversation",
    )


@router.get("/help", response_class=HTMLResponse)
def help_page(request: Request) -> Response:
    points = app_context(request).settings.strength_points
    return _render(
        request,
        "collect/help.html",
        points=points,
        scale=scale_points(points),
        page="help",
    )
