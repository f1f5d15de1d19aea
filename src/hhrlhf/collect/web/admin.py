"""The review page (any annotator) and the admin pages: annotators, agreement, the leaderboard.

Server-rendered (Jinja2, autoescape on); ``static/admin.js`` sends the review answers and the
annotator changes through the JSON routes of :mod:`hhrlhf.collect.web.api_review`.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, HTMLResponse, Response
from starlette.background import BackgroundTask

from ...errors import HHError
from ..domain import AnnotatorInfo
from ..services.export import export_collection
from ..services.overview import STATUSES, ConversationFilter, conversation_page
from ..services.review import next_task
from ..services.review_progress import review_progress
from ..services.stats import collection_stats, model_leaderboard
from .auth import optional_annotator
from .context import app_context
from .pages import MODES, _login_required, _render, scale_points

__all__ = ["router", "split_prefix"]

router = APIRouter(include_in_schema=False)

#: bootstrap resamples behind the admin pages (the CLI and the JSON routes take more on request)
PAGE_RESAMPLES = 500
#: conversations per page of the admin list
PAGE_SIZE = 50
#: the archive formats of the export download: (shutil.make_archive's name, media type)
ARCHIVES = {"zip": ("zip", "application/zip"), "tar.gz": ("gztar", "application/gzip")}

_SPEAKER = re.compile(r"\n\n(Human|Assistant):")


def split_prefix(prefix: str) -> list[dict[str, str]]:
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


def _forbidden(request: Request) -> Response:
    return _render(request, "collect/error.html", 403, message="Admins only.", page="admin")


@router.get("/review", response_class=HTMLResponse)
def review_page(request: Request) -> Response:
    who = optional_annotator(request)
    if who is None:
        return _login_required(request)
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
    points = st.settings.strength_points
    mode = MODES.get(task.mode if task else "helpful", MODES["helpful"])
    return _render(
        request,
        "collect/review.html",
        task=task,
        transcript=split_prefix(task.prefix) if task else [],
        mode=mode,
        points=points,
        scale=scale_points(points, task.mode if task else "helpful"),
        progress=progress,
        page="review",
    )


def _admin(request: Request) -> tuple[AnnotatorInfo, None] | tuple[None, Response]:
    """``(admin, None)``, or ``(None, page)``: the login page for a visitor, the forbidden
    page for a signed-in non-admin."""
    who = optional_annotator(request)
    if who is None:
        return None, _login_required(request)
    if not who.is_admin:
        return None, _forbidden(request)
    return who, None


@router.get("/admin", response_class=HTMLResponse)
def admin_page(
    request: Request,
    mode: str = "",
    annotator: str = "",
    status: str = "",
    page: int = 1,
) -> Response:
    who, refused = _admin(request)
    if refused is not None:
        return refused
    storage = app_context(request).storage
    stats = collection_stats(storage, resamples=PAGE_RESAMPLES)
    where = ConversationFilter(mode, annotator, status)
    page = max(1, min(page, 1_000_000))
    conversations, total = conversation_page(
        storage, where, limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE
    )
    pages = max(1, -(-total // PAGE_SIZE))
    query = {k: v for k, v in (("mode", mode), ("annotator", annotator), ("status", status)) if v}
    return _render(
        request,
        "collect/admin.html",
        stats=stats,
        conversations=conversations,
        filters={"mode": mode, "annotator": annotator, "status": status},
        query=query,
        modes=list(MODES),
        statuses=STATUSES,
        total=total,
        page_no=page,
        pages=pages,
        page="admin",
    )


@router.get("/admin/export", response_model=None)
def admin_export(request: Request, format: str = "zip", accepted_only: bool = False) -> Response:
    """The same export as ``hh collect export`` (its defaults; ``accepted_only``: its
    ``--accepted-only``), as one archive to download."""
    _, refused = _admin(request)
    if refused is not None:
        return refused
    if format not in ARCHIVES:
        return _render(
            request,
            "collect/error.html",
            400,
            message=f"Unknown archive format {format!r}: zip or tar.gz.",
            page="admin",
        )
    st = app_context(request)
    work = Path(tempfile.mkdtemp(prefix="hh-export-"))
    try:
        export_collection(
            st.storage,
            work / "export",
            backends={b.name: b for b in st.settings.backends},
            accepted_only=accepted_only,
        )
        kind, media = ARCHIVES[format]
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        name = f"hh-collect-export-{stamp}"
        archive = shutil.make_archive(str(work / name), kind, root_dir=work / "export")
    except HHError as exc:
        shutil.rmtree(work, ignore_errors=True)
        return _render(request, "collect/error.html", 500, message=str(exc), page="admin")
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return FileResponse(
        archive,
        media_type=media,
        filename=f"{name}.{format}",
        headers={"cache-control": "no-store"},
        background=BackgroundTask(shutil.rmtree, work, ignore_errors=True),
    )


@router.get("/admin/leaderboard", response_class=HTMLResponse)
def admin_leaderboard_page(request: Request) -> Response:
    who, refused = _admin(request)
    if refused is not None:
        return refused
    st = app_context(request)
    weights = {b.name: b.weight for b in st.settings.backends}
    board = model_leaderboard(
        st.storage, resamples=PAGE_RESAMPLES, robustness=True, config_weights=weights
    )
    return _render(request, "collect/admin_leaderboard.html", board=board, page="admin")
