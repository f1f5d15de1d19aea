"""Who is asking: bearer tokens or cookie sessions stored in the database, CSRF and Origin checks.

Tokens are random (256 bits) and only their sha256 is stored. A cookie session carries a
CSRF token; state-changing requests made with the cookie must send it back in
``X-CSRF-Token``, and an ``Origin`` header, when present, must name this host.
"""

from __future__ import annotations

import hmac
from urllib.parse import urlsplit

from fastapi import Request

from ...errors import Forbidden, Unauthorized
from ..db import Storage
from ..domain import AnnotatorInfo
from ..services import annotators

__all__ = [
    "COOKIE",
    "CSRF_HEADER",
    "current_annotator",
    "optional_annotator",
    "require_annotator",
    "require_admin",
    "logged_in",
    "logged_in_admin",
    "check_origin",
]

COOKIE = "hh_session"
CSRF_HEADER = "X-CSRF-Token"
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return None


def current_annotator(request: Request) -> tuple[AnnotatorInfo, str | None, str] | None:
    """(annotator, CSRF token or None, "bearer"|"cookie"), or None when not logged in.

    A wrong bearer token is None too (401), never a fallback to the cookie. A login found is
    remembered for a few seconds (``annotators.AUTH_CACHE_SECONDS``; a change in this process
    is seen at once, one in another process within those seconds).
    """
    if hasattr(request.state, "auth"):  # this request's answer, found once
        cached: tuple[AnnotatorInfo, str | None, str] | None = request.state.auth
        return cached
    storage = request.app.state.storage
    result: tuple[AnnotatorInfo, str | None, str] | None = None
    token = _bearer(request)
    if token is not None:
        who = annotators.cached_annotator_by_token(storage, token)
        result = (who, None, "bearer") if who else None
    else:
        cookie = request.cookies.get(COOKIE)
        if cookie:
            found = annotators.cached_session_annotator(storage, cookie)
            if found:
                result = (found[0], found[1], "cookie")
    request.state.auth = result
    return result


def _remembered(request: Request) -> bool:
    """Settle this request's login from the process's memory alone (True), or leave it to
    :func:`current_annotator` (False: a database lookup)."""
    storage = request.app.state.storage
    token = _bearer(request)
    if token is not None:
        who = annotators.remembered_token(storage, token)
        if who is None:
            return False
        request.state.auth = (who, None, "bearer")
        return True
    cookie = request.cookies.get(COOKIE)
    if not cookie:
        request.state.auth = None
        return True
    found = annotators.remembered_session(storage, cookie)
    if found is None:
        return False
    request.state.auth = (found[0], found[1], "cookie")
    return True


def _settle(_storage: Storage, request: Request) -> None:
    """:func:`current_annotator` as a unit of work for :meth:`Storage.call`."""
    current_annotator(request)


async def logged_in(request: Request) -> AnnotatorInfo:
    """:func:`require_annotator` as an async dependency: a remembered login is checked on the
    event loop; only a database lookup is a unit of work (:meth:`Storage.call`: a thread on
    SQLite, an async wait on PostgreSQL), where a sync dependency would always take a thread."""
    if not hasattr(request.state, "auth") and not _remembered(request):
        await request.app.state.storage.call(_settle, request)
    return require_annotator(request)


async def logged_in_admin(request: Request) -> AnnotatorInfo:
    """:func:`require_admin` as an async dependency (see :func:`logged_in`)."""
    if not hasattr(request.state, "auth") and not _remembered(request):
        await request.app.state.storage.call(_settle, request)
    return require_admin(request)


def optional_annotator(request: Request) -> AnnotatorInfo | None:
    """The logged-in, enabled annotator, or None (for pages that show a login prompt)."""
    found = current_annotator(request)
    if found is None or found[0].disabled:
        return None
    return found[0]


def check_origin(request: Request) -> None:
    origin = request.headers.get("origin")
    if origin is None:
        return
    host = request.headers.get("host", "")
    parts = urlsplit(origin)
    if origin == "null" or parts.netloc.lower() != host.lower():
        raise Forbidden("cross-origin request refused (Origin does not match the host)")


def require_annotator(request: Request) -> AnnotatorInfo:
    """FastAPI dependency: 401 without a valid login, 403 for a disabled annotator or a bad CSRF token."""
    found = current_annotator(request)
    if found is None:
        raise Unauthorized(
            "not logged in: send Authorization: Bearer TOKEN or open /login?token=TOKEN",
        )
    who, csrf, via = found
    if who.disabled:
        raise Forbidden(f"annotator {who.name!r} is disabled")
    if via == "cookie" and request.method not in SAFE_METHODS:
        check_origin(request)
        sent = request.headers.get(CSRF_HEADER, "")
        if not csrf or not hmac.compare_digest(sent.encode(), csrf.encode()):
            raise Forbidden(f"missing or wrong {CSRF_HEADER} header")
    limits = getattr(request.app.state, "limits", None)
    if limits is not None:
        if request.method in SAFE_METHODS:
            limits.check_read(who.id)
        else:
            limits.check_write(who.id)
    return who


def require_admin(request: Request) -> AnnotatorInfo:
    who = require_annotator(request)
    if not who.is_admin:
        raise Forbidden("admins only")
    return who
