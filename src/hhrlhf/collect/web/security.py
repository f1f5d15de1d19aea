"""Hardening that wraps the whole app: headers even on a crash, ids a database cannot hold.

:func:`harden` is called once by :func:`~hhrlhf.collect.web.app.create_app`, before the routers
are included:

- the security headers go on every response, an unexpected 500 included (Starlette's error
  middleware answers outside any ``add_middleware`` middleware, so the headers are added
  outermost too);
- a path id beyond the id columns' range (32 bits: ``/api/v1/conversations/99999999999``) is
  a 404 like any other unknown id, not an error of the database driver (a 503).
"""

from __future__ import annotations

import re

from fastapi import Depends, FastAPI, Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ...errors import NotFound

__all__ = ["harden", "MAX_ID", "SECURITY_HEADERS"]

#: on every response (a response that sets one of them itself keeps its own)
SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; object-src 'none'; "
        "base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
}

#: the largest id the id columns hold: they are ``INTEGER``, 32 bits on PostgreSQL (a larger
#: number there is a driver error, not a missing row); SQLite's ids, counted from 1, never
#: come near it either
MAX_ID = 2**31 - 1


_INTEGER = re.compile(r"[+-]?[0-9]+")


async def _check_ids(request: Request) -> None:
    """Pure and quick: async, so it runs on the event loop, not in a thread."""
    for name, value in request.path_params.items():
        if not name.endswith("_id") or not isinstance(value, str):
            continue
        text = value.strip()
        # ASCII digits only: str.isdigit() also takes '¹', which int() refuses
        if _INTEGER.fullmatch(text) and abs(int(text)) > MAX_ID:
            what = name.removesuffix("_id").replace("_", " ")
            raise NotFound(f"{what} {text[:30]} not found")


class _HeadersOutermost:
    """Pure ASGI: adds missing ``headers`` to every response start, whoever sends it."""

    def __init__(self, app: ASGIApp, headers: dict[str, str]) -> None:
        self.app = app
        self.headers = [(k.encode(), v.encode()) for k, v in headers.items()]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                raw = list(message.get("headers", []))
                present = {k.lower() for k, _ in raw}
                raw += [(k, v) for k, v in self.headers if k not in present]
                message = {**message, "headers": raw}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def harden(app: FastAPI, headers: dict[str, str]) -> None:
    """Install both guards on ``app`` (a FastAPI app whose routers are not included yet)."""
    app.router.dependencies.append(Depends(_check_ids))
    build = app.build_middleware_stack

    def build_outermost() -> ASGIApp:
        return _HeadersOutermost(build(), headers)

    # Starlette builds the stack on the first request and offers no hook outside its error
    # middleware: replacing this one app's builder is the hook
    app.build_middleware_stack = build_outermost  # type: ignore[method-assign]
