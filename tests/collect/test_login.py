"""Logging in: the link shows a page, only its form's POST sets the session (no login CSRF)."""

from __future__ import annotations

import pytest
from logins import login, login_form, session_cookie

from hhrlhf.collect.services import annotators
from hhrlhf.collect.web.login import safe_next


def test_the_link_shows_who_it_logs_in_as_and_sets_no_session(client, storage):
    _, token = annotators.add_annotator(storage, '<b>bo"b</b>')
    r = client.get(f"/login?token={token}", follow_redirects=False)
    assert r.status_code == 200
    assert "Log in as &lt;b&gt;bo&#34;b&lt;/b&gt;" in r.text and "<b>bo" not in r.text
    assert not session_cookie(r)
    assert 'method="post" action="/login"' in r.text
    assert client.get("/api/v1/me").status_code == 401  # nothing logged in yet
    r = login(client, token)
    assert r.status_code == 303 and session_cookie(r)
    assert client.get("/api/v1/me").json()["name"] == '<b>bo"b</b>'


def test_a_post_from_another_site_logs_nobody_in(client, storage):
    """What a page elsewhere would send: the token but not the form value (it cannot read or
    set this site's ``hh_login`` cookie), or a cross-site Origin / Sec-Fetch-Site."""
    _, token = annotators.add_annotator(storage, "mallory")
    r = client.post("/login", data={"token": token}, follow_redirects=False)
    assert r.status_code == 403 and not session_cookie(r)
    assert "expired or came from another page" in r.text
    r = client.post("/login", data={"token": token, "form": "guessed"}, follow_redirects=False)
    assert r.status_code == 403 and not session_cookie(r)
    form = login_form(client.get(f"/login?token={token}").text)
    for headers in ({"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "cross-site"}):
        r = client.post(
            "/login",
            data={"token": token, "form": form},
            headers=headers,
            follow_redirects=False,
        )
        assert r.status_code == 403 and not session_cookie(r), headers
    assert client.get("/api/v1/me").status_code == 401
    # the same form from this site works
    r = client.post(
        "/login",
        data={"token": token, "form": form},
        headers={"Origin": "http://testserver", "Sec-Fetch-Site": "same-origin"},
        follow_redirects=False,
    )
    assert r.status_code == 303 and session_cookie(r)


def test_a_bad_token_in_the_post_is_refused(client, storage):
    form = login_form(client.get("/login").text)
    r = client.post("/login", data={"token": "nope", "form": form}, follow_redirects=False)
    assert r.status_code == 401 and not session_cookie(r)
    assert "not valid" in r.text


def test_login_goes_back_where_the_person_was_going(client, alice):
    _, h, token = alice
    cid = client.post("/api/v1/conversations", json={"task_description": "t"}, headers=h)
    path = f"/conversations/{cid.json()['id']}"
    page = client.get(path)  # not logged in: the login page, carrying where to go
    assert page.status_code == 401
    assert f'name="next" value="{path}"' in page.text
    r = client.post(
        "/login",
        data={"token": token, "form": login_form(page.text), "next": path},
        follow_redirects=False,
    )
    assert r.status_code == 303 and r.headers["location"] == path
    assert login(client, token, next="/help").headers["location"] == "/help"
    assert login(client, token, next="//evil.example/x").headers["location"] == "/"


@pytest.mark.parametrize(
    "value,expected",
    [
        (None, "/"),
        ("", "/"),
        ("/", "/"),
        ("/conversations/3?x=1#top", "/conversations/3?x=1#top"),
        ("//evil.example", "/"),
        ("/\\evil.example", "/"),
        ("https://evil.example/", "/"),
        ("javascript:alert(1)", "/"),
        ("evil.example", "/"),
        ("/\t/evil.example", "/"),
        ("/ok\r\nSet-Cookie: x=1", "/"),
    ],
)
def test_safe_next(value, expected):
    assert safe_next(value) == expected
