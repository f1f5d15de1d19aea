"""Pages people expect: an HTML 404 for browsers, login back to the page asked for (never to
another site), logout onto a plain login page. In process, then in chromium."""

from __future__ import annotations

import re

import pytest
from logins import login_form

HTML = {"accept": "text/html,application/xhtml+xml,*/*;q=0.8"}


def test_a_browser_gets_an_html_404_with_a_way_home(client):
    r = client.get("/no/such/page", headers=HTML)
    assert r.status_code == 404 and r.headers["content-type"].startswith("text/html")
    assert "There is no page at this address." in r.text and 'href="/"' in r.text
    assert r.headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize(
    ("path", "headers"),
    [
        ("/no/such/page", {}),
        ("/no/such/page", {"accept": "application/json"}),
        ("/api/v1/nope", HTML),
    ],
)
def test_api_clients_and_api_paths_keep_json_404s(client, path, headers):
    r = client.get(path, headers=headers)
    assert r.status_code == 404 and r.json() == {"error": "Not Found"}


def _press_login(client, page_html: str, token: str):
    next_value = re.search(r'name="next" value="([^"]*)"', page_html).group(1)
    data = {"token": token, "form": login_form(page_html), "next": next_value}
    return client.post("/login", data=data, follow_redirects=False)


def _logout(client, follow_redirects: bool = True):
    csrf = re.search(r'name="csrf-token" content="([^"]+)"', client.get("/help").text).group(1)
    return client.post(
        "/logout", headers={**HTML, "X-CSRF-Token": csrf}, follow_redirects=follow_redirects
    )


def test_the_login_link_opened_after_a_refused_page_goes_back_to_it(client, admin):
    _, _, token = admin
    refused = client.get("/admin?mode=helpful", headers=HTML)
    assert refused.status_code == 401
    # the person now opens the login link they were given: it carries no next=
    page = client.get("/login", params={"token": token})
    r = _press_login(client, page.text, token)
    assert r.status_code == 303 and r.headers["location"] == "/admin?mode=helpful"
    # used once: the next login goes home
    _logout(client)
    page = client.get("/login", params={"token": token})
    assert _press_login(client, page.text, token).headers["location"] == "/"


@pytest.mark.parametrize(
    "evil", ["//evil.com", "https://evil.com", "//evil.com/admin", "/\\evil.com", "https:evil.com"]
)
def test_login_never_sends_anyone_to_another_site(client, alice, evil):
    _, _, token = alice
    page = client.get("/login", params={"token": token, "next": evil})
    assert "hh_next" not in page.headers.get("set-cookie", "")
    assert _press_login(client, page.text, token).headers["location"] == "/"
    _logout(client)
    # a planted cookie is read through the same check
    client.cookies.set("hh_next", evil, path="/login")
    page = client.get("/login", params={"token": token})
    assert _press_login(client, page.text, token).headers["location"] == "/"
    _logout(client)
    r = client.post(
        "/login",
        data={"token": token, "form": login_form(client.get("/login").text), "next": evil},
        follow_redirects=False,
    )
    assert r.headers["location"] == "/"


def test_logout_lands_on_the_login_page_without_an_error(client, alice):
    _, _, token = alice
    page = client.get("/login", params={"token": token})
    _press_login(client, page.text, token)
    r = _logout(client, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/login?out=1"
    landing = client.get(r.headers["location"])
    assert landing.status_code == 200
    assert "You are logged out." in landing.text
    assert 'class="error"' not in landing.text and 'role="alert"' not in landing.text


@pytest.mark.browser
def test_in_the_browser_404_login_back_and_logout(tmp_path):
    from test_browser import TIMEOUT_MS, _serve, _watch, open_chromium

    with _serve(tmp_path) as (base, storage, token, _), open_chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        seen = _watch(page)
        page.goto(f"{base}/nowhere")
        assert page.text_content("h1") == "Cannot show this page"
        page.click("main a[href='/']")
        assert page.text_content("h1") == "Log in"
        page.goto(f"{base}/help?from=test")
        page.goto(f"{base}/review")  # asked for while logged out
        assert page.text_content("h1") == "Log in"
        page.goto(f"{base}/login?token={token}")  # the link the person was given
        with page.expect_navigation(timeout=TIMEOUT_MS):
            page.click("#login-submit")
        assert page.url == f"{base}/review"
        page.click("#logout")
        page.wait_for_url(f"{base}/login?out=1", timeout=TIMEOUT_MS)
        assert page.text_content("#login-notice") == "You are logged out."
        assert page.locator("[role=alert]").count() == 0
        assert seen["dialogs"] == [] and seen["errors"] == []
