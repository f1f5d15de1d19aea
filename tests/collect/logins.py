"""Logging in as the pages do: open the login link, then POST its form (the GET sets no session)."""

from __future__ import annotations

import re

__all__ = ["login", "login_form", "browser_login", "session_cookie"]


def login_form(html: str) -> str:
    """The login form's one-time value in a login page."""
    found = re.search(r'name="form" value="([^"]+)"', html)
    assert found is not None, html[:2000]
    return found.group(1)


def login(
    client,
    token: str,
    *,
    next: str | None = None,
    follow_redirects: bool = False,
    headers: dict | None = None,
):
    """Open ``/login?token=`` and press "Log in": the POST's response (303 on success; the
    GET's when it was refused before any form, e.g. 429)."""
    params = {"token": token}
    if next is not None:
        params["next"] = next
    page = client.get("/login", params=params, headers=headers)
    if 'name="form"' not in page.text:
        return page
    data = {"token": token, "form": login_form(page.text)}
    if next is not None:
        data["next"] = next
    return client.post("/login", data=data, headers=headers, follow_redirects=follow_redirects)


def browser_login(page, base: str, token: str, *, timeout: float = 15_000) -> None:
    """In a real browser: open the link, press the button, wait for the page it goes to."""
    page.goto(f"{base}/login?token={token}")
    with page.expect_navigation(timeout=timeout):
        page.click("#login-submit")


def session_cookie(response) -> str:
    """The ``hh_session`` Set-Cookie line of a response ("" when it sets none)."""
    for line in response.headers.get_list("set-cookie"):
        if line.startswith("hh_session="):
            return line
    return ""
