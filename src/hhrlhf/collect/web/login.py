"""Logging in and out: ``GET /login?token=`` shows "Log in as NAME", its form's POST sets the
session cookie, ``POST /logout`` ends it."""

from __future__ import annotations

import hmac
import secrets
from typing import Annotated
from urllib.parse import urlsplit

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from ...errors import Forbidden
from ..services import annotators
from .auth import check_origin, require_annotator
from .context import AppContext, app_context
from .logins import COOKIE, current_annotator

__all__ = ["login_router", "safe_next"]

login_router = APIRouter()


# -- login / logout ------------------------------------------------------------------------
#
# Logging in is two steps so that no other site can log a visitor into someone else's account
# (login CSRF): ``GET /login?token=`` only shows "Log in as NAME" and a form; the form's POST
# sets the session. The POST must carry the random value the page put in a short-lived
# ``hh_login`` cookie (a page on another site can neither read nor set it), and its Origin,
# when sent, must name this host.

#: the pre-login cookie of the login form (double submit: the form sends the same value)
LOGIN_COOKIE = "hh_login"
#: the page a visitor asked for before logging in (a local path, read back by ``GET /login``)
NEXT_COOKIE = "hh_next"
_LOGIN_COOKIE_SECONDS = 3600


def safe_next(value: str | None) -> str:
    """Where to go after logging in: a path on this site, or ``/`` (never another site)."""
    if not value or not value.startswith("/") or value.startswith(("//", "/\\")):
        return "/"
    if any(ord(c) < 0x20 or c == "\\" for c in value) or len(value) > 2000:
        return "/"
    parts = urlsplit(value)
    if parts.scheme or parts.netloc:
        return "/"
    return value


def login_form_value() -> str:
    return secrets.token_urlsafe(24)


def set_login_cookie(request: Request, response: Response, value: str) -> None:
    response.set_cookie(
        LOGIN_COOKIE,
        value,
        max_age=_LOGIN_COOKIE_SECONDS,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/login",
    )


def _login_page(
    request: Request,
    message: str | None,
    status: int,
    *,
    name: str | None = None,
    token: str | None = None,
    next_url: str | None = "/",
    notice: str | None = None,
) -> Response:
    form = login_form_value()
    context = {
        "error": message,
        "notice": notice,
        "login_name": name,
        "login_token": token,
        "login_form": form,
        "next_url": safe_next(next_url),
    }
    templates = app_context(request).templates
    if templates is not None:
        try:
            templates.env.get_template("collect/login.html")
        except Exception:
            templates = None
    response: Response
    if templates is not None:
        response = templates.TemplateResponse(
            request, "collect/login.html", context, status_code=status
        )
    else:
        from html import escape

        response = HTMLResponse(
            f"<!doctype html><title>Log in</title><p>{escape(message or '')}</p>",
            status_code=status,
        )
    response.headers["cache-control"] = "no-store"
    set_login_cookie(request, response, form)
    if status == 401 and safe_next(next_url) != "/":
        # the page that was asked for, kept for the login link opened next (it has no next=)
        response.set_cookie(
            NEXT_COOKIE,
            safe_next(next_url),
            max_age=_LOGIN_COOKIE_SECONDS,
            httponly=True,
            samesite="lax",
            secure=request.url.scheme == "https",
            path="/login",
        )
    return response


def client_address(request: Request) -> str:
    """The client's address (behind a trusted proxy: the one it forwarded, see ``create_app``)."""
    return request.client.host if request.client else "unknown"


@login_router.get("/login", include_in_schema=False)
def login(
    request: Request, token: str | None = None, next: str | None = None, out: str | None = None
) -> Response:
    """Shows who the link logs in as, with a button that POSTs it; sets no session.

    Without ``next``, the page asked for before (kept in a cookie when the login page was
    shown instead of it) is where the login goes; ``out`` is the landing after logging out."""
    st = app_context(request)
    st.limits.check_login(client_address(request))
    if next is None:
        next = safe_next(request.cookies.get(NEXT_COOKIE))
    if not token and out is not None:
        return _login_page(request, None, 200, next_url=next, notice="You are logged out.")
    if not token:
        return _login_page(
            request, "Open the login link you were given (/login?token=...).", 401, next_url=next
        )
    who = annotators.annotator_by_token(st.storage, token)
    if who is None:
        return _login_page(request, "This login link is not valid.", 401, next_url=next)
    if who.disabled:
        return _login_page(request, "This account is disabled.", 403, next_url=next)
    return _login_page(request, None, 200, name=who.name, token=token, next_url=next)


@login_router.post("/login", include_in_schema=False)
def login_post(
    request: Request,
    token: Annotated[str, Form()] = "",
    form: Annotated[str, Form()] = "",
    next: Annotated[str, Form()] = "/",
) -> Response:
    """The login itself: checks the form's origin and value, sets the session, 303 to ``next``."""
    st = app_context(request)
    st.limits.check_login(client_address(request))
    check_origin(request)
    if request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        raise Forbidden("cross-site login refused: open your login link and press Log in")
    sent = request.cookies.get(LOGIN_COOKIE, "")
    if not form or not sent or not hmac.compare_digest(form.encode(), sent.encode()):
        return _login_page(
            request,
            "This login form has expired or came from another page: press Log in again.",
            403,
            next_url=next,
            **_relink(st, token),
        )
    who = annotators.annotator_by_token(st.storage, token) if token else None
    if who is None:
        return _login_page(request, "This login link is not valid.", 401, next_url=next)
    if who.disabled:
        return _login_page(request, "This account is disabled.", 403, next_url=next)
    cookie, _csrf = annotators.create_session(st.storage, who.id, st.settings.session_hours)
    response: Response = RedirectResponse(safe_next(next), status_code=303)
    response.set_cookie(
        COOKIE,
        cookie,
        max_age=int(st.settings.session_hours * 3600),
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
        path="/",
    )
    response.delete_cookie(LOGIN_COOKIE, path="/login")
    response.delete_cookie(NEXT_COOKIE, path="/login")
    return response


def _relink(st: AppContext, token: str) -> dict[str, str]:
    """The name and token to offer again when a valid token came with a stale form."""
    who = annotators.annotator_by_token(st.storage, token) if token else None
    if who is None or who.disabled:
        return {}
    return {"name": who.name, "token": token}


@login_router.post("/logout", include_in_schema=False)
def logout(request: Request) -> Response:
    found = current_annotator(request)
    if found is not None and found[2] == "cookie":
        require_annotator(request)  # CSRF and Origin
        annotators.delete_session(app_context(request).storage, request.cookies.get(COOKIE, ""))
    response: Response = JSONResponse({"status": "logged out"})
    if "text/html" in request.headers.get("accept", ""):
        response = RedirectResponse("/login?out=1", status_code=303)
    response.delete_cookie(COOKIE, path="/")
    return response
