"""What a login may do: the route dependencies that require one (an enabled annotator, an
admin), CSRF and Origin checks, and the rate limits per annotator.

Who is asking is :mod:`.logins`' (:func:`current_annotator` and :data:`COOKIE` are re-exported
here). Tokens are random (256 bits) and only their sha256 is stored. A cookie session carries
a CSRF token; state-changing requests made with the cookie must send it back in
``X-CSRF-Token``, and an ``Origin`` header, when present, must name this host.
"""

from __future__ import annotations

import hmac
from urllib.parse import urlsplit

from fastapi import Request

from ...errors import Forbidden, Unauthorized
from ..domain import AnnotatorInfo
from .context import app_context
from .logins import COOKIE, current_annotator, settle_login

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

CSRF_HEADER = "X-CSRF-Token"
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


async def logged_in(request: Request) -> AnnotatorInfo:
    """:func:`require_annotator` as an async dependency: a remembered login is settled on the
    event loop, only a lookup is a unit of work (:func:`~.logins.settle_login`)."""
    await settle_login(request)
    return require_annotator(request)


async def logged_in_admin(request: Request) -> AnnotatorInfo:
    """:func:`require_admin` as an async dependency (see :func:`logged_in`)."""
    await settle_login(request)
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
    limits = app_context(request).limits
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
