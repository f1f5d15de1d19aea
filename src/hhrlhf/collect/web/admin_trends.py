"""The annotators' weekly trends and drift flags (:mod:`..services.trends`): the admin page
``/admin/annotators`` (a table with a small server-drawn SVG plot per metric, each with its
numbers in words) and ``GET /api/v1/admin/trends`` (the same data as JSON, admins only)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, Response

from ..domain import AnnotatorInfo
from ..services.trends import (
    DEFAULT_WEEKS,
    MAD_BAND,
    MAX_WEEKS,
    MIN_RATED,
    MIN_TURNS,
    READING_WORDS_PER_SECOND,
    SHARE_FLOOR,
    SHARE_NOISE,
    TOO_FAST_SHARE,
    AnnotatorTrend,
    annotator_trends,
)
from . import schemas
from .admin import _admin
from .auth import logged_in_admin
from .context import app_context
from .pages import _render
from .schemas import answers

__all__ = ["router", "api_router", "Spark", "sparkline", "COLUMNS"]

router = APIRouter(include_in_schema=False)
api_router = APIRouter(prefix="/api/v1")

Admin = Annotated[AnnotatorInfo, Depends(logged_in_admin)]
Weeks = Annotated[int, Query(ge=1, le=MAX_WEEKS, description="ISO weeks, this one included")]

#: the plot's size in CSS pixels, and its margin
WIDTH, HEIGHT, PAD = 84, 22, 3


def _seconds(x: float) -> str:
    return f"{x:g} s"


def _percent(x: float) -> str:
    return f"{x:.0%}"


#: the page's plotted metrics: (WeekPoint field, heading, how a value reads, fixed top of the
#: scale: None for the largest value)
COLUMNS: tuple[tuple[str, str, Any, float | None], ...] = (
    ("turns", "turns per week", str, None),
    ("median_seconds", "median seconds per turn", _seconds, None),
    ("share_a", "A-share", _percent, 1.0),
    ("agreement", "agreement", _percent, 1.0),
    ("gold_accuracy", "gold accuracy", _percent, 1.0),
    ("too_fast", "too fast to read", _percent, 1.0),
)


@dataclass(frozen=True, slots=True)
class Spark:
    """A weekly plot: ``lines`` (SVG ``points`` of each run of weeks with a value), ``dots``
    (x, y, flagged) of each value, ``label`` (every week's value in words) and ``last`` (this
    week's value in words)."""

    lines: tuple[str, ...]
    dots: tuple[tuple[float, float, bool], ...]
    label: str
    last: str


def sparkline(
    title: str,
    weeks: list[str],
    values: list[float | None],
    show: Any,
    *,
    top: float | None = None,
    flagged: frozenset[str] = frozenset(),
) -> Spark:
    """The plot of ``values`` (one per week; None: no value), from 0 to ``top`` (default:
    the largest value); the weeks in ``flagged`` get a marked dot."""
    known = [v for v in values if v is not None]
    high = top if top is not None else max(known, default=0.0)
    step = (WIDTH - 2 * PAD) / max(len(values) - 1, 1)
    dots: list[tuple[float, float, bool]] = []
    lines: list[str] = []
    run: list[str] = []
    for i, v in enumerate(values):
        if v is None:
            if len(run) > 1:
                lines.append(" ".join(run))
            run = []
            continue
        x = round(PAD + i * step, 1)
        y = round(HEIGHT - PAD - (v / high if high else 0.0) * (HEIGHT - 2 * PAD), 1)
        dots.append((x, y, weeks[i] in flagged))
        run.append(f"{x},{y}")
    if len(run) > 1:
        lines.append(" ".join(run))
    said = ", ".join(
        f"{w} {'no data' if v is None else show(v)}" for w, v in zip(weeks, values, strict=True)
    )
    last = values[-1] if values else None
    return Spark(
        tuple(lines),
        tuple(dots),
        f"{title} by week: {said}",
        show(last) if last is not None else "–",
    )


def _row(a: AnnotatorTrend, weeks: list[str]) -> dict[str, Any]:
    sparks = {}
    for key, title, show, top in COLUMNS:
        flagged = frozenset(f.week for f in a.flags if f.metric == key)
        values = [getattr(p, key) for p in a.weeks]
        sparks[key] = sparkline(title, weeks, values, show, top=top, flagged=flagged)
    return {"trend": a, "sparks": sparks}


@router.get("/admin/annotators", response_class=HTMLResponse)
def admin_trends_page(request: Request, weeks: int = DEFAULT_WEEKS) -> Response:
    """Per annotator: turns today and this week, each metric's weekly plot, the drift flags."""
    _, refused = _admin(request)
    if refused is not None:
        return refused
    weeks = max(1, min(weeks, MAX_WEEKS))
    trends = annotator_trends(app_context(request).storage, weeks=weeks)
    labels = [w.label for w in trends.weeks]
    return _render(
        request,
        "collect/admin_trends.html",
        trends=trends,
        rows=[_row(a, labels) for a in trends.annotators],
        columns=COLUMNS,
        size=(WIDTH, HEIGHT),
        rules={
            "min_turns": MIN_TURNS,
            "min_rated": MIN_RATED,
            "mad_band": f"{MAD_BAND:g}",
            "share_floor": f"{SHARE_FLOOR * 100:.0f}",
            "share_noise": f"{SHARE_NOISE:g}",
            "too_fast": f"{TOO_FAST_SHARE:.0%}",
            "words_per_second": f"{READING_WORDS_PER_SECOND:g}",
        },
        page="admin",
    )


@api_router.get("/admin/trends", response_model=None, responses=answers(schemas.Trends))
def admin_trends(request: Request, who: Admin, weeks: Weeks = DEFAULT_WEEKS) -> dict[str, Any]:
    """Every annotator's weekly trend and drift flags (docs/collect.md)."""
    return asdict(annotator_trends(app_context(request).storage, weeks=weeks))
