"""The data browser's routes and pages: any HH-format data (the cache, the sample, a folder, or the app's own database) in the same app.

``DataIndex.load(data)`` reads every preference file and the red-team attempts once, at
start, and keeps each pair's classes (the ones ``hh check`` counts), its human-turn count and
its response lengths, so a filtered page is a scan over small tuples, and every pair's text
casefolded in one buffer, so a text search is ``bytes.find`` over it (``_TextIndex``). ``router`` serves the
JSON API (``/api/v1/data/...``) and the pages (``/data...``); both need a login like the
rest of the app. Filters live in the query string, so every page state is a shareable URL
(:mod:`.browse_query` reads them and writes the links that keep them).
"""

from __future__ import annotations

import base64
import hashlib
import re
import threading
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse, Response
from starlette.concurrency import run_in_threadpool

from ...errors import Forbidden, HHError, NotFound, ReportBusy
from ...records import PAIR_CLASSES, RedTeamAttempt
from ...transcript import MARKER_RE
from ..browse import DataIndex, collected_index
from ..browse.diff import word_diff
from ..browse.index import FLAG_FILTERS, FileRows, pair_json
from ..browse.reports import REPORT_CACHE, _keep
from ..browse.snippets import cut_words, highlight
from ..domain import AnnotatorInfo
from ..services import transcripts
from ..services.flags import flags_stamp
from . import schemas
from .api import Who
from .auth import optional_annotator
from .browse_query import attempt_query, nav_links, neighbours, paging, pair_query
from .context import app_context
from .errors import status_of
from .schemas import answers
from .security import SECURITY_HEADERS

if TYPE_CHECKING:
    from ...redteam.query import AttemptQuery

__all__ = ["router"]


_collected_lock = threading.Lock()


def _collected(app: FastAPI) -> DataIndex:
    """:func:`collected_index`, rebuilt only when the database's export stamp has changed (a
    page of the collected data read the whole database each time)."""
    storage = app_context(app).storage
    with _collected_lock:  # one rebuild at a time; the others then find it done
        stamp = (transcripts.export_stamp(storage), flags_stamp(storage))  # a new flag run too
        kept: tuple[tuple[object, ...], DataIndex] | None = app_context(app).collected
        if kept is None or kept[0] != stamp:
            kept = (stamp, collected_index(storage))
            app_context(app).collected = kept
        return kept[1]


def _index(request: Request, who: AnnotatorInfo) -> DataIndex:
    """The data the request asks for: ``?source=collected`` is the app's database (admins)."""
    if request.query_params.get("source") == "collected":
        if not who.is_admin:
            raise Forbidden("the collected data is for admins only")
        return _collected(request.app)
    index: DataIndex | None = app_context(request).data_index
    if index is None:
        raise NotFound("no data to browse: start the app with hh serve --data PATH|sample")
    return index


def _attempts(
    index: DataIndex, query: AttemptQuery, offset: int, limit: int
) -> tuple[int, list[tuple[int, RedTeamAttempt]]]:
    total, out = 0, []
    for i, a in enumerate(index.attempts):
        if query.matches(a):
            if offset <= total < offset + limit:
                out.append((i, a))
            total += 1
    return total, out


router = APIRouter()


# response_model=None: the answers go out as they are, unfiltered (``answers`` documents them)
@router.get("/api/v1/data/subsets", response_model=None, responses=answers(schemas.DataFiles))
def api_subsets(request: Request, who: Who) -> list[FileRows]:
    return _index(request, who).files


@router.get("/api/v1/data/pairs", response_model=None, responses=answers(schemas.PairPage))
def api_pairs(request: Request, who: Who) -> dict[str, object]:
    index = _index(request, who)
    q, offset, limit = pair_query(request.query_params)
    total, pairs = index.query(q, offset, limit)
    return {"total": total, "pairs": [pair_json(p) for p in pairs]}


@router.get(
    "/api/v1/data/pairs/{subset}/{split}/{row}",
    response_model=None,
    responses=answers(schemas.PairView),
)
def api_pair(subset: str, split: str, row: int, request: Request, who: Who) -> dict[str, Any]:
    return pair_json(_index(request, who).pair(subset, split, row))


@router.get("/api/v1/data/attempts", response_model=None, responses=answers(schemas.AttemptPage))
def api_attempts(request: Request, who: Who) -> dict[str, object]:
    index = _index(request, who)
    params = request.query_params
    query = attempt_query(params)
    offset, limit = paging(params)
    total, found = _attempts(index, query, offset, limit)
    return {"total": total, "attempts": [a.to_dict(real_keys=True) for _, a in found]}


@router.get("/api/v1/data/attempts/report", response_model=None, responses=answers(schemas.Report))
def api_attempts_report(request: Request, who: Who) -> dict[str, Any]:
    """``hh redteam report``'s ``report.json`` for the attempts the filters keep: every number
    of the report page (404 when none is kept)."""
    index = _index(request, who)
    query = attempt_query(request.query_params)
    return _report_numbers(index, query)


def _report_numbers(index: DataIndex, query: AttemptQuery, *, gated: bool = True) -> dict[str, Any]:
    """The report of the attempts ``query`` keeps, from the cache or computed (at most
    :data:`REPORT_SLOTS` at once; ``gated=False`` inside a computation that holds a slot)."""

    def compute() -> dict[str, Any]:
        from ...redteam.report import compute_report

        kept = [a for a in index.attempts if query.matches(a)]
        if not kept:
            raise NotFound("no attempt matches these filters: nothing to report")
        return compute_report(kept, source=f"{index.label} ({len(kept)} attempts)")

    if not gated:
        report = index.reports.get(query)
        if report is None:
            report = compute()
            _keep(index.reports, query, report, REPORT_CACHE)
        return report
    return index.report_gate.get(index.reports, query, compute)


# ---- pages ---------------------------------------------------------------------------------


class _Refused(Exception):
    def __init__(self, response: Response) -> None:
        self.response = response


def _open(request: Request) -> DataIndex:
    """The index for a page, or ``_Refused`` carrying the login or error page to show."""
    from .pages import _login_required, _render

    who = optional_annotator(request)
    if who is None:
        raise _Refused(_login_required(request))
    try:
        return _index(request, who)
    except HHError as exc:
        status = status_of(exc)
        raise _Refused(
            _render(request, "collect/error.html", status, message=str(exc), page="data")
        ) from None


_BIDI = {
    c: f"\\u{c:04x}"
    for c in (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
}


def visible(text: object) -> str:
    """Data text for a page: control characters as ``\\xNN`` (:func:`hhrlhf.text.printable`)
    and the bidirectional controls (an RTL override) as ``\\u202e``, so a reader sees them
    instead of having the text reordered; newlines and tabs kept. Escaping is the template's."""
    from ...text import printable

    return printable(str(text)).translate(_BIDI)


def _page(
    request: Request, index: DataIndex, name: str, status: int = 200, **context: object
) -> Response:
    from .pages import _render

    collected = request.query_params.get("source") == "collected"
    context.setdefault("params", dict(request.query_params))
    return _render(
        request,
        name,
        status,
        index=index,
        page="data",
        source_q="?source=collected" if collected else "",
        collected=collected,
        has_files=app_context(request).data_index is not None,
        visible=visible,
        cut_words=cut_words,
        highlight=highlight,
        **context,
    )


def _error(request: Request, exc: HHError) -> Response:
    from .pages import _render

    status = status_of(exc)
    return _render(request, "collect/error.html", status, message=str(exc), page="data")


@router.get("/data", response_class=HTMLResponse, include_in_schema=False)
async def data_page(request: Request) -> Response:
    try:
        index = await run_in_threadpool(_open, request)
        q, offset, limit = pair_query(request.query_params)
    except _Refused as refused:
        return refused.response
    except HHError as exc:
        return _error(request, exc)
    started = time.perf_counter()
    total, pairs = await run_in_threadpool(index.query, q, offset, limit)
    took = time.perf_counter() - started
    return _page(
        request,
        index,
        "browse/pairs.html",
        total=total,
        pairs=pairs,
        offset=offset,
        limit=limit,
        nav=nav_links("/data", request.query_params, offset, limit, total),
        took_ms=took * 1000,
        classes=PAIR_CLASSES,
        flag_filters=FLAG_FILTERS,
        # a single file names no subset (None): the only one there is then
        subsets=sorted(
            {f["subset"] for f in index.files if f["subset"] != "red-team-attempts"},
            key=lambda s: s or "",
        ),
        # the splits there are, upstream's order first (a folder may hold only a test split)
        splits=sorted(
            {f["split"] for f in index.files if f["subset"] != "red-team-attempts"},
            key=lambda s: (s not in ("train", "test"), s != "train", s),
        ),
    )


@router.get(
    "/data/pairs/{subset}/{split}/{row}", response_class=HTMLResponse, include_in_schema=False
)
def pair_page(subset: str, split: str, row: int, request: Request) -> Response:
    try:
        index = _open(request)
        p = index.pair(subset, split, row)
    except _Refused as refused:
        return refused.response
    except HHError as exc:
        return _error(request, exc)
    diff = word_diff(p.chosen_response, p.rejected_response)
    collected = request.query_params.get("source") == "collected"
    rows = next(
        (
            f["rows"]
            for f in index.files
            if (f["subset"] or "file") == subset and f["split"] == split
        ),
        0,
    )
    here = f"/data/pairs/{quote(subset)}/{quote(split)}/"
    return _page(
        request,
        index,
        "browse/pair.html",
        pair=p,
        turns=p.prompt_dialogue.turns,
        chosen_segments=diff.chosen,
        rejected_segments=diff.rejected,
        diff_exact=diff.exact,
        classes=[(c, PAIR_CLASSES[c]) for c in sorted(p.classes)],
        flag=index.flag_of(p),
        json_url=f"/api/v1/data/pairs/{quote(subset)}/{quote(split)}/{row}"
        + ("?source=collected" if collected else ""),
        neighbours=neighbours(here, row, rows, collected),
        markers={
            "chosen": bool(MARKER_RE.search(p.chosen_response)),
            "rejected": bool(MARKER_RE.search(p.rejected_response)),
        },
    )


@router.get("/data/attempts", response_class=HTMLResponse, include_in_schema=False)
def attempts_page(request: Request) -> Response:
    try:
        index = _open(request)
        params = request.query_params
        query = attempt_query(params)
        offset, limit = paging(params)
    except _Refused as refused:
        return refused.response
    except HHError as exc:
        return _error(request, exc)
    total, found = _attempts(index, query, offset, limit)
    return _page(
        request,
        index,
        "browse/attempts.html",
        total=total,
        found=found,
        offset=offset,
        nav=nav_links("/data/attempts", request.query_params, offset, limit, total),
    )


@router.get("/data/attempts/report", response_class=HTMLResponse, include_in_schema=False)
def attempts_report(request: Request) -> Response:
    """``hh redteam report`` on the attempts the filters keep: every number and table
    (``?plots=1`` draws the figures too, which takes seconds)."""
    try:
        index = _open(request)
        params = request.query_params
        query = attempt_query(params)
        plots = params.get("plots") == "1"
        numbers = [(k, v) for k, v in params.multi_items() if k != "plots"]
        json_href = "/api/v1/data/attempts/report" + (f"?{urlencode(numbers)}" if numbers else "")

        def compute() -> str:
            report = _report_numbers(index, query, gated=False)  # this holds a slot already
            return _report_html(index, query, report, plots, json_href)

        html = index.report_gate.get(index.report_pages, (query, plots), compute)
    except _Refused as refused:
        return refused.response
    except HHError as exc:
        page = _error(request, exc)
        if isinstance(exc, ReportBusy):
            page.headers["retry-after"] = str(exc.retry_after)
        return page
    return HTMLResponse(html, headers={"content-security-policy": report_policy(html)})


def report_policy(html: str) -> str:
    """The app's Content-Security-Policy, loosened for the one self-contained report page
    just enough: its own ``<style>`` elements (by hash, nothing else inline) and its figures
    (``data:`` images). Scripts stay ``'self'`` only."""
    hashes = " ".join(
        "'sha256-" + base64.b64encode(hashlib.sha256(css.encode()).digest()).decode() + "'"
        for css in re.findall(r"<style>(.*?)</style>", html, re.S)
    )
    policy = SECURITY_HEADERS["content-security-policy"]
    policy = policy.replace("style-src 'self'", f"style-src 'self' {hashes}".rstrip())
    return policy + "; img-src 'self' data:"


def _report_html(
    index: DataIndex, query: AttemptQuery, report: dict[str, Any], plots: bool, json_href: str
) -> str:
    from ...redteam.report import draw_figures, render_html
    from ...redteam.stats import drop_out_of_range

    pngs: dict[str, bytes] = {}
    if plots:
        from ...redteam.plots import figure_png

        kept = [a for a in index.attempts if query.matches(a)]
        figures = draw_figures(report, drop_out_of_range(kept)[0])
        pngs = {name: figure_png(fig) for name, fig in figures.items()}
    return render_html(report, pngs, json_href=json_href)


@router.get("/data/attempts/{row}", response_class=HTMLResponse, include_in_schema=False)
def attempt_page(row: int, request: Request) -> Response:
    try:
        index = _open(request)
        if not 0 <= row < len(index.attempts):
            raise NotFound(f"no attempt {row} in {index.label}")
    except _Refused as refused:
        return refused.response
    except HHError as exc:
        return _error(request, exc)
    a = index.attempts[row]
    collected = request.query_params.get("source") == "collected"
    return _page(
        request,
        index,
        "browse/attempt.html",
        attempt=a,
        row=row,
        turns=a.dialogue.turns,
        neighbours=neighbours("/data/attempts/", row, len(index.attempts), collected),
    )
