"""``create_app(settings) -> FastAPI``: the API, the pages, static files, security headers, errors."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from markupsafe import Markup
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from ...errors import HHError
from ...templates import jinja2_templates
from ..browse import DataIndex
from ..config import Settings
from ..db import Storage
from ..db.engine import count_statements
from ..db.errors import DATABASE_ERRORS, POOLER_HINT, as_unavailable, pooler_trouble
from ..generation.runner import Generator
from ..services.backend_live import LiveBackends
from ..services.qualification import set_round
from ..textrules import FIELD_LABELS, TEXT_ERROR, safe_for_json
from .admin import router as admin_router
from .admin_backends import page_router as admin_backends_page_router
from .admin_backends import router as admin_backends_router
from .admin_campaign import router as admin_campaign_router
from .admin_guidelines import router as admin_guidelines_router
from .admin_quality import api_router as quality_api_router
from .admin_quality import router as quality_router
from .admin_trends import api_router as admin_trends_api_router
from .admin_trends import router as admin_trends_router
from .api import router as api_router
from .api_campaign import router as api_campaign_router
from .api_guidelines import router as api_guidelines_router
from .api_review import router as api_review_router
from .browse import router as browse_router
from .browse import visible
from .context import AppContext, app_context, new_rng
from .errors import retry_after_of, status_of
from .feedback import api_router as feedback_api_router
from .feedback import router as feedback_router
from .judge import api_router as judge_api_router
from .judge import router as judge_router
from .login import login_router
from .logins import keep_logins_fresh
from .markdown import render_markdown
from .pages import router as pages_router
from .ratelimit import Limits
from .security import SECURITY_HEADERS, harden

if TYPE_CHECKING:
    import jinja2

log = logging.getLogger("hhrlhf.collect.database")

__all__ = ["create_app", "SECURITY_HEADERS"]

STATIC_DIR = Path(__file__).resolve().parents[2] / "static"

#: Strict-Transport-Security with ``hsts`` on (``hh serve --hsts``): a year, this host only
HSTS = "max-age=31536000"


class GuardMiddleware:
    """Pure ASGI (streaming stays streaming): security headers on every response, body-size cap.

    Every response also says how long the app took to start it: ``Server-Timing: app;dur=MS``
    (from the request reaching this layer to its response headers; for an event stream, to
    the stream's start). Browsers show it in their network panel; the benchmark separates the
    server's time from the client's and the network's with it. The same header counts the
    SQL statements the request sent before its headers (``sql;desc="N"``: its own, in
    its units of work, and those of the generation it waited for), so the benchmark reports
    statements per turn.
    """

    def __init__(self, app: ASGIApp, max_body_bytes: int):
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body_bytes:
            return await _too_large(self.max_body_bytes, send)
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body_bytes:
                    raise _BodyTooLarge()
            return message

        replaced = False
        started = time.perf_counter()

        async def send_with_headers(message: Message) -> None:
            nonlocal replaced
            if replaced:
                return
            if message["type"] == "http.response.start" and received > self.max_body_bytes:
                # the framework turned the cut-off body into its own error: say what it was
                replaced = True
                return await _too_large(self.max_body_bytes, send)
            if message["type"] == "http.response.start":
                raw = list(message.get("headers", []))
                present = {k.lower() for k, _ in raw}
                for k, v in SECURITY_HEADERS.items():
                    if k.encode() not in present:
                        raw.append((k.encode(), v.encode()))
                took = 1000 * (time.perf_counter() - started)
                timing = f'app;dur={took:.1f}, sql;desc="{tally[0]}"'
                raw.append((b"server-timing", timing.encode()))
                message = {**message, "headers": raw}
            await send(message)

        try:
            with count_statements() as tally:
                await self.app(scope, limited_receive, send_with_headers)
        except _BodyTooLarge:
            await _too_large(self.max_body_bytes, send_with_headers)


class _BodyTooLarge(Exception):
    pass


#: seconds between two shares of a worker's rate-limit counts (web/ratelimit.py)
RATE_SHARE_SECONDS = 1.0


async def _share_limits(limits: Limits, storage: Storage) -> None:
    """Share this worker's rate-limit counts through the database while it serves (in a
    thread: a unit of work off the event loop); a failure leaves this worker's own windows."""
    while True:
        await asyncio.sleep(RATE_SHARE_SECONDS)
        try:
            await asyncio.to_thread(limits.share, storage)
        except Exception as exc:  # the database away: the local windows still hold
            log.warning("rate-limit counts not shared: %s", exc)


async def _too_large(limit: int, send: Send) -> None:
    body = f'{{"error": "request body too large (the limit is {limit} bytes)"}}'.encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    headers += [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _validation_message(exc: RequestValidationError) -> str:
    parts, texts = [], []
    for err in exc.errors():
        path = [str(x) for x in err.get("loc", ()) if x != "body"]
        loc = ".".join(path)
        if err.get("type") == TEXT_ERROR:  # text the app does not store: say which and why
            if path[-1:] == ["[key]"]:  # the key itself (shown garbled): name its dict
                loc = "a key of " + ".".join(path[:-2])
            texts.append(f"{FIELD_LABELS.get(loc, loc)} {err.get('msg')}")
            continue
        parts.append(f"{loc}: {err.get('msg')}" if loc else str(err.get("msg")))
    message = "; ".join(texts + (["invalid request: " + "; ".join(parts)] if parts else []))
    # a field name may hold a lone surrogate: the message says so, and stays valid UTF-8
    return safe_for_json(message)


def wants_html(request: Request) -> bool:
    """A browser asking for a page (``Accept: text/html``), not an API client or ``/api/``."""
    path = request.url.path
    if path.startswith(("/api/", "/static/")):
        return False
    return "text/html" in request.headers.get("accept", "")


def create_app(settings: Settings, *, storage: Storage | None = None) -> FastAPI:
    """The collection app. The database must be migrated (``Storage(url).upgrade()``, ``hh serve``)."""
    storage = storage or Storage(settings.db_url)
    _qualification_round(storage, settings)
    generator = Generator(storage, settings)
    limits = Limits(
        settings.rate_login_per_minute,
        settings.rate_writes_per_minute,
        worker=generator.owner,
        reads_per_minute=settings.rate_reads_per_minute,
        render_chars_per_minute=settings.render_chars_per_minute,
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        sharing = asyncio.create_task(_share_limits(limits, storage))
        refreshing = asyncio.create_task(keep_logins_fresh(storage))
        live = asyncio.create_task(app_context(app).live.keep_fresh(storage))
        yield
        sharing.cancel()
        refreshing.cancel()
        live.cancel()
        await generator.shutdown()
        await storage.close_loop()

    app = FastAPI(
        title="hhrlhf collection",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url="/api/v1/openapi.json",
    )
    app.state.context = AppContext(
        settings=settings,
        storage=storage,
        generator=generator,
        rng=new_rng(settings.seed),
        live=LiveBackends(settings),
        limits=limits,
        data_index=DataIndex.load(settings.data) if settings.data else None,
        templates=_templates(),
    )
    _error_handlers(app)
    headers = dict(SECURITY_HEADERS)
    if settings.hsts:
        headers["strict-transport-security"] = HSTS
    harden(app, headers)  # headers even on a crash; out-of-range ids are 404
    for router in ROUTERS:
        app.include_router(router)
    if STATIC_DIR.is_dir():
        _static(app)
    app.add_middleware(GuardMiddleware, max_body_bytes=settings.max_body_bytes)
    # the client's address and scheme: from X-Forwarded-For / -Proto only when the connection
    # comes from a configured proxy (hh serve turns uvicorn's own handling off; this is it)
    app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=settings.forwarded_allow_ips)
    return app


def _qualification_round(storage: Storage, settings: Settings) -> None:
    """The config's qualification round written where the export and the CLI read it
    (a database away at the start: said, and the next start writes it)."""
    try:
        set_round(storage, settings.qualification_reviews, settings.qualification_threshold)
    except (HHError, *DATABASE_ERRORS) as exc:  # type: ignore[misc]
        log.warning("the qualification round's settings were not stored: %s", exc)


#: every route of the app: the JSON API, review and admin API, login, data browser, pages
ROUTERS = (
    api_router,
    api_review_router,
    login_router,
    browse_router,
    pages_router,
    admin_router,
    judge_api_router,
    judge_router,
    api_guidelines_router,
    admin_guidelines_router,
    feedback_api_router,
    feedback_router,
    quality_api_router,
    quality_router,
    api_campaign_router,
    admin_campaign_router,
    admin_backends_router,
    admin_backends_page_router,
    admin_trends_router,
    admin_trends_api_router,
)


def _templates() -> Jinja2Templates | None:
    """The pages' templates with their filters; None without jinja2 (the JSON API still works)."""
    try:
        templates = jinja2_templates()
    except HHError:
        return None
    _page_filters(templates.env)
    return templates


def _error_handlers(app: FastAPI) -> None:
    """Every error as JSON ``{"error": ...}`` with its status (a page for a browser's 404)."""

    @app.exception_handler(HHError)
    async def hh_error(request: Request, exc: HHError) -> Response:
        retry = retry_after_of(exc)
        headers = {"Retry-After": str(retry)} if retry is not None else None
        return JSONResponse({"error": str(exc)}, status_code=status_of(exc), headers=headers)

    async def database_error(request: Request, exc: Exception) -> Response:
        if pooler_trouble(exc):  # the operator's to fix: say so where they look
            log.error("%s %s: %s", request.method, request.url.path, POOLER_HINT)
        return await hh_error(request, as_unavailable(exc))

    for db_error in DATABASE_ERRORS:
        app.add_exception_handler(db_error, database_error)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Response:
        return JSONResponse({"error": _validation_message(exc)}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        templates = app_context(app).templates
        if exc.status_code == 404 and wants_html(request) and templates is not None:
            return templates.TemplateResponse(
                request,
                "collect/error.html",
                {"message": "There is no page at this address.", "who": None, "page": "error"},
                status_code=404,
            )
        return JSONResponse(
            {"error": str(exc.detail)}, status_code=exc.status_code, headers=exc.headers
        )


def _static(app: FastAPI) -> None:
    """``/static`` (styles, scripts, the icon) and ``/favicon.ico``."""
    app.mount("/static", StaticFiles(directory=str(STATIC_DIR)), name="static")

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> FileResponse:
        """The icon for what declares none (a JSON answer opened in the browser)."""
        return FileResponse(
            STATIC_DIR / "favicon.svg",
            media_type="image/svg+xml",
            headers={"cache-control": "public, max-age=86400"},
        )


def _page_filters(env: jinja2.Environment) -> None:
    """``markdown``: model text as sanitised HTML; ``visible``: data text with its control
    and bidi characters as visible escapes (both as ``hh show`` shows them)."""
    env.filters["markdown"] = lambda text: Markup(render_markdown(str(text)))  # noqa: S704
    env.filters["visible"] = visible
