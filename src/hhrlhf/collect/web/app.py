"""``create_app(settings) -> FastAPI``: the API, the pages, static files, security headers, errors."""

from __future__ import annotations

import asyncio
import gc
import importlib
import logging
import os
import time
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from ...errors import HHError
from ..browse import DataIndex
from ..config import Settings, demo_settings, load_config
from ..db import Storage
from ..db.engine import count_statements, worker_connections
from ..db.errors import DATABASE_ERRORS, POOLER_HINT, as_unavailable, pooler_trouble
from ..generation.runner import Generator
from ..services import annotators
from ..services.rules import Rules
from ..textrules import FIELD_LABELS, TEXT_ERROR, safe_for_json
from .api import new_rng
from .api import router as api_router
from .browse import router as browse_router
from .errors import retry_after_of, status_of
from .login import login_router
from .ratelimit import Limits
from .security import SECURITY_HEADERS, harden

log = logging.getLogger("hhrlhf.collect.database")

__all__ = ["create_app", "create_app_from_env", "settle_heap", "SECURITY_HEADERS"]

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

    def __init__(self, app, max_body_bytes: int):
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body_bytes:
            return await _too_large(self.max_body_bytes, send)
        received = 0

        async def limited_receive():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body_bytes:
                    raise _BodyTooLarge()
            return message

        replaced = False
        started = time.perf_counter()

        async def send_with_headers(message):
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


#: seconds between two checks of the logins this worker remembers (annotators.refresh_logins)
LOGIN_REFRESH_SECONDS = 1.0


async def _refresh_logins(storage: Storage) -> None:
    """Check the logins in use again while the worker serves, all in one read (a unit of
    work); a failure lets them lapse, and each request then looks its login up itself."""
    while True:
        await asyncio.sleep(LOGIN_REFRESH_SECONDS)
        try:
            if annotators.logins_due(storage):  # an idle worker asks nothing
                await storage.call(annotators.refresh_logins)
        except Exception as exc:  # the database away: the requests will say so
            log.warning("logins not checked again: %s", exc)


async def _too_large(limit: int, send) -> None:
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
    generator = Generator(storage, settings)

    limits = Limits(
        settings.rate_login_per_minute,
        settings.rate_writes_per_minute,
        worker=generator.owner,
        reads_per_minute=settings.rate_reads_per_minute,
        render_chars_per_minute=settings.render_chars_per_minute,
    )

    @asynccontextmanager
    async def lifespan(app):
        sharing = asyncio.create_task(_share_limits(limits, storage))
        refreshing = asyncio.create_task(_refresh_logins(storage))
        yield
        sharing.cancel()
        refreshing.cancel()
        await generator.shutdown()
        await storage.close_loop()

    app = FastAPI(
        title="hhrlhf collection",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url="/api/v1/openapi.json",
    )
    app.state.settings = settings
    app.state.storage = storage
    app.state.generator = generator
    app.state.rng = new_rng(settings.seed)
    app.state.rules = Rules.from_settings(settings)
    app.state.limits = limits
    app.state.data_index = DataIndex.load(settings.data) if settings.data else None
    try:
        from ...templates import jinja2_templates

        app.state.templates = jinja2_templates()
        _page_filters(app.state.templates.env)
    except HHError:
        app.state.templates = None

    @app.exception_handler(HHError)
    async def hh_error(request: Request, exc: HHError):
        retry = retry_after_of(exc)
        headers = {"Retry-After": str(retry)} if retry is not None else None
        return JSONResponse({"error": str(exc)}, status_code=status_of(exc), headers=headers)

    async def database_error(request: Request, exc: Exception):
        if pooler_trouble(exc):  # the operator's to fix: say so where they look
            log.error("%s %s: %s", request.method, request.url.path, POOLER_HINT)
        return await hh_error(request, as_unavailable(exc))

    for db_error in DATABASE_ERRORS:
        app.add_exception_handler(db_error, database_error)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError):
        return JSONResponse({"error": _validation_message(exc)}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        if exc.status_code == 404 and wants_html(request) and app.state.templates is not None:
            return app.state.templates.TemplateResponse(
                request,
                "collect/error.html",
                {"message": "There is no page at this address.", "who": None, "page": "error"},
                status_code=404,
            )
        return JSONResponse(
            {"error": str(exc.detail)}, status_code=exc.status_code, headers=exc.headers
        )

    headers = dict(SECURITY_HEADERS)
    if settings.hsts:
        headers["strict-transport-security"] = HSTS
    harden(app, headers)  # headers even on a crash; out-of-range ids are 404
    app.include_router(api_router)
    app.include_router(importlib.import_module("hhrlhf.collect.web.api_review").router)
    app.include_router(login_router)
    app.include_router(browse_router)
    try:
        pages = importlib.import_module("hhrlhf.collect.web.pages")
    except ModuleNotFoundError:
        pages = None
    if pages is not None:
        app.include_router(pages.router)
        app.include_router(importlib.import_module("hhrlhf.collect.web.admin").router)
    if STATIC_DIR.is_dir():
        app.mount("/static", StaticFiles(directory=str(STATIC_DIR)), name="static")

        @app.get("/favicon.ico", include_in_schema=False)
        def favicon():
            """The icon for what declares none (a JSON answer opened in the browser)."""
            return FileResponse(
                STATIC_DIR / "favicon.svg",
                media_type="image/svg+xml",
                headers={"cache-control": "public, max-age=86400"},
            )

    app.add_middleware(GuardMiddleware, max_body_bytes=settings.max_body_bytes)
    # the client's address and scheme: from X-Forwarded-For / -Proto only when the connection
    # comes from a configured proxy (hh serve turns uvicorn's own handling off; this is it)
    app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=settings.forwarded_allow_ips)
    return app


def create_app_from_env() -> FastAPI:
    """Factory for ``uvicorn --factory`` (several workers): settings from ``HH_COLLECT_*``."""
    db = os.environ.get("HH_COLLECT_DB")
    config = os.environ.get("HH_COLLECT_CONFIG")
    if config:
        settings = load_config(config, db_url=db)
    else:
        delay = float(os.environ.get("HH_COLLECT_DEMO_DELAY", "0") or 0)
        settings = demo_settings(db, token_delay=delay)
    data = os.environ.get("HH_COLLECT_DATA")
    if data:
        settings = replace(settings, data=data)
    proxies = os.environ.get("HH_COLLECT_FORWARDED_ALLOW_IPS")
    if proxies is not None:
        settings = replace(settings, forwarded_allow_ips=proxies)
    if os.environ.get("HH_COLLECT_HSTS") == "1":
        settings = replace(settings, hsts=True)
    # this worker's share of the host's database connections (hh serve --workers N)
    workers = int(os.environ.get("HH_COLLECT_WORKERS", "1") or 1)
    storage = Storage(
        settings.db_url, connections=worker_connections(settings.db_connections, workers)
    )
    app = create_app(settings, storage=storage)
    settle_heap()
    return app


#: the collector's thresholds in a server worker (Python's: 700, 10, 10): a young pass
#: once 10,000 more container objects are alive than at the last one (see :func:`settle_heap`)
GC_THRESHOLDS = (10_000, 10, 10)


def settle_heap() -> None:
    """Collect once, then keep what startup made out of every later garbage collection, and
    collect the young generation less often.

    A server process holds ~110,000 long-lived objects after its imports (FastAPI, pydantic,
    SQLAlchemy, Jinja2). Each full collection walked all of them: 50-70 ms with every thread
    of the worker stopped, a few times a minute under load, and every request in flight then
    waited that long (most of the choice p99 on PostgreSQL, bench/RESULTS-collect.md).
    ``gc.freeze()`` moves them to the permanent generation, so a full collection only walks
    what was made since. For server processes only: frozen objects are never collected.

    The freeze also empties the oldest generation, and Python runs a full collection once
    its new objects outnumber a quarter of those it held: with none, every tenth pass of the
    middle generation became a full one. At Python's 700 a young pass ran every few
    requests, and under load the requests in flight (~50,000 objects) were walked by a full
    collection every few seconds, 10-76 ms with the worker stopped. :data:`GC_THRESHOLDS`
    makes young passes about 14 times rarer: at most ~10,000 objects of cyclic garbage (a
    few MB) wait for one, and a 200-annotator run has no collection after its start.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def _page_filters(env: Any) -> None:
    """``markdown``: model text as sanitised HTML; ``visible``: data text with its control
    and bidi characters as visible escapes (both as ``hh show`` shows them)."""
    from markupsafe import Markup

    from .browse import visible
    from .markdown import render_markdown

    env.filters["markdown"] = lambda text: Markup(render_markdown(str(text)))  # noqa: S704
    env.filters["visible"] = visible
