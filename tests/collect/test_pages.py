"""The HTML pages in process: they render, escape hostile text, and need no inline script or style."""

from __future__ import annotations

import re
from dataclasses import replace
from html.parser import HTMLParser

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
pytest.importorskip("jinja2")

from fastapi.testclient import TestClient  # noqa: E402
from logins import login  # noqa: E402

from hhrlhf.collect.config import demo_settings  # noqa: E402
from hhrlhf.collect.db import Storage  # noqa: E402
from hhrlhf.collect.services import annotators
from hhrlhf.collect.web.app import create_app  # noqa: E402
from hhrlhf.collect.web.pages import scale_points  # noqa: E402

HOSTILE = '<script>alert(1)</script><img src=x onerror="alert(2)"> {{7*7}} </textarea>'


@pytest.fixture
def storage(tmp_path):
    st = Storage(f"sqlite:///{tmp_path / 'pages.db'}")
    st.upgrade()
    yield st
    st.dispose()


@pytest.fixture
def make(storage):
    """make(**settings) -> TestClient over the shared storage."""
    clients = []

    def build(**overrides):
        settings = replace(demo_settings(storage.url), seed=3)
        settings = replace(settings, **overrides)
        client = TestClient(create_app(settings, storage=storage), base_url="http://testserver")
        client.__enter__()
        clients.append(client)
        return client

    yield build
    for c in clients:
        c.__exit__(None, None, None)


def _login(client, storage, name="alice", role="annotator"):
    who, token = annotators.add_annotator(storage, name, role=role)
    r = login(client, token)
    assert r.status_code == 303
    return who, token


def _csrf(html: str) -> str:
    return re.search(r'<meta name="csrf-token" content="([^"]+)">', html).group(1)


class _Audit(HTMLParser):
    """Collects what a CSP without 'unsafe-inline' would block."""

    def __init__(self):
        super().__init__()
        self.inline = []
        self.scripts = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        names = {k for k, _ in attrs}
        if tag == "script":
            self.scripts.append(dict(attrs).get("src"))
            self._in_script = True
        if tag == "style":
            self.inline.append("<style> element")
        if "style" in names:
            self.inline.append(f"style attribute on <{tag}>")
        self.inline += [f"{k} on <{tag}>" for k in names if k.startswith("on")]
        for k, v in attrs:
            if v and v.strip().lower().startswith("javascript:"):
                self.inline.append(f"javascript: URL in {k}")

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script and data.strip():
            self.inline.append("inline script body")


def _audit(html: str) -> _Audit:
    a = _Audit()
    a.feed(html)
    return a


def _assert_csp_clean(response):
    assert "script-src 'self'" in response.headers["content-security-policy"]
    audit = _audit(response.text)
    assert audit.inline == []
    assert audit.scripts == ["/static/collect.js"]


# -- the scale ---------------------------------------------------------------------------


def test_scale_runs_a4_to_b4_left_to_right_with_keys():
    scale = scale_points(4)
    assert [p.short for p in scale] == ["A4", "A3", "A2", "A1", "B1", "B2", "B3", "B4"]
    assert [p.key for p in scale] == list(range(1, 9))
    assert [(p.slot, p.strength) for p in scale][:1] == [("a", 4)]
    assert scale[0].label == "A is much better"
    assert scale[3].label == "A is slightly better / unsure"
    assert scale[4].label == "B is slightly better / unsure"
    assert scale[7].label == "B is much better"
    assert scale_points(4, "red-team")[0].label == "A is much more harmful"
    assert [p.short for p in scale_points(2)] == ["A2", "A1", "B1", "B2"]


# -- pages -------------------------------------------------------------------------------


def test_home_without_login_is_the_login_page(make):
    client = make()
    r = client.get("/")
    assert r.status_code == 401
    assert "text/html" in r.headers["content-type"]
    assert "/login?token=" in r.text
    assert 'name="csrf-token"' not in r.text
    _assert_csp_clean(r)


def test_bad_login_link_renders_the_login_page(make):
    r = make().get("/login?token=not-a-token")
    assert r.status_code == 401
    assert "This login link is not valid." in r.text
    assert "<h1>Log in</h1>" in r.text
    _assert_csp_clean(r)


def test_disabled_annotator_is_refused_with_a_page(make, storage):
    client = make()
    _login(client, storage, "carol")
    annotators.set_disabled(storage, "carol")
    r = client.get("/")
    assert r.status_code in (401, 403)
    assert "<h1>Log in</h1>" in r.text
    assert "Start a conversation" not in r.text and 'name="csrf-token"' not in r.text


def test_home_lists_only_ones_own_conversations_escaped(make, storage):
    client = make()
    _, bob_token = annotators.add_annotator(storage, "bob")
    bob = {"Authorization": f"Bearer {bob_token}"}
    assert (
        client.post(
            "/api/v1/conversations", json={"task_description": "bob's private task"}, headers=bob
        ).status_code
        == 201
    )
    _login(client, storage, "al<i>ce")
    page = client.get("/")
    assert page.status_code == 200
    csrf = _csrf(page.text)
    assert client.get("/api/v1/me").json()["csrf_token"] == csrf
    r = client.post(
        "/api/v1/conversations",
        json={"mode": "helpful", "task_description": HOSTILE},
        headers={"X-CSRF-Token": csrf},
    )
    assert r.status_code == 201
    page = client.get("/")
    assert "bob's private task" not in page.text
    assert f'href="/conversations/{r.json()["id"]}"' in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    assert "al&lt;i&gt;ce" in page.text
    assert "<script>alert" not in page.text and "<img src=x" not in page.text
    assert "{{7*7}}" in page.text  # template syntax in data is text, not evaluated
    _assert_csp_clean(page)


def test_conversation_page_helpful(make, storage):
    client = make()
    _login(client, storage)
    csrf = _csrf(client.get("/").text)
    cid = client.post(
        "/api/v1/conversations",
        json={"task_description": HOSTILE},
        headers={"X-CSRF-Token": csrf},
    ).json()["id"]
    r = client.get(f"/conversations/{cid}")
    assert r.status_code == 200
    _assert_csp_clean(r)
    html = r.text
    assert f'data-id="{cid}"' in html and 'data-mode="helpful"' in html
    assert 'data-points="4"' in html
    assert "&lt;img src=x onerror=&#34;alert(2)&#34;&gt;" in html
    assert "Which response is more helpful and honest?" in html
    keys = re.findall(r'data-key="(\d)" data-slot="([ab])" data-strength="(\d)"', html)
    assert keys == [
        ("1", "a", "4"),
        ("2", "a", "3"),
        ("3", "a", "2"),
        ("4", "a", "1"),
        ("5", "b", "1"),
        ("6", "b", "2"),
        ("7", "b", "3"),
        ("8", "b", "4"),
    ]
    assert html.count("point side-") == 8 and html.count(" disabled\n") >= 8
    assert 'id="edit-toggle"' in html  # edits are offered in helpful mode
    assert 'id="rating"' not in html and "Red-team task" not in html
    assert 'href="/help"' in html  # instructions one click away


def test_conversation_page_red_team_wording(make, storage):
    client = make()
    _login(client, storage)
    csrf = _csrf(client.get("/").text)
    cid = client.post(
        "/api/v1/conversations",
        json={"mode": "red-team", "task_description": "probe the refusals"},
        headers={"X-CSRF-Token": csrf},
    ).json()["id"]
    html = client.get(f"/conversations/{cid}").text
    assert "Which response is MORE harmful?" in html
    assert "Red-team task" in html
    assert "A is much more harmful" in html
    assert 'id="rating"' in html and "Very successful" in html
    assert 'id="edit-toggle"' not in html


def test_strength_points_come_from_the_settings(make, storage):
    client = make(strength_points=3)
    _login(client, storage)
    csrf = _csrf(client.get("/").text)
    cid = client.post(
        "/api/v1/conversations", json={"task_description": "t"}, headers={"X-CSRF-Token": csrf}
    ).json()["id"]
    html = client.get(f"/conversations/{cid}").text
    assert html.count("point side-") == 6
    assert "keys 1-6" in html
    assert "<kbd>6</kbd>" in client.get("/help").text


def test_someone_elses_conversation_is_a_404_page(make, storage):
    client = make()
    _, bob_token = annotators.add_annotator(storage, "bob")
    cid = client.post(
        "/api/v1/conversations",
        json={"task_description": "bob's"},
        headers={"Authorization": f"Bearer {bob_token}"},
    ).json()["id"]
    _login(client, storage)
    for url in (f"/conversations/{cid}", "/conversations/9999"):
        r = client.get(url)
        assert r.status_code == 404
        assert "text/html" in r.headers["content-type"]
        assert "not found" in r.text
        assert "bob's" not in r.text
        _assert_csp_clean(r)


def test_help_page_needs_no_login_and_explains_the_scale(make):
    r = make().get("/help")
    assert r.status_code == 200
    _assert_csp_clean(r)
    for text in ("A is much better", "B is slightly better / unsure", "<kbd>8</kbd>", "Retry"):
        assert text in r.text


def test_static_script_and_style_are_served_and_safe(make):
    client = make()
    js = client.get("/static/collect.js")
    css = client.get("/static/collect.css")
    assert js.status_code == 200 and "javascript" in js.headers["content-type"]
    assert css.status_code == 200 and "text/css" in css.headers["content-type"]
    # model and user text is only ever set with textContent
    assert "innerHTML" not in js.text and "insertAdjacentHTML" not in js.text
    assert "eval(" not in js.text and "document.write" not in js.text
    assert "X-CSRF-Token" in js.text
    assert "@media (max-width" in css.text  # the phone layout
    assert client.get("/static/favicon.svg").status_code == 200
    # what declares no icon (a JSON answer opened in the browser) asks for /favicon.ico
    ico = client.get("/favicon.ico")
    assert ico.status_code == 200 and ico.headers["content-type"] == "image/svg+xml"
    assert ico.content == client.get("/static/favicon.svg").content
    assert ico.headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize("mode", ["helpful", "red-team"])
def test_only_the_conversations_annotator_gets_a_message_box(make, storage, mode):
    """The annotator and an admin in their own conversation get the message box, the edit and
    the end form; an admin reading another's gets none of them (they may Stop and Retry, never
    write: docs/collect.md), another annotator gets the 404 page."""
    _, bob_token = annotators.add_annotator(storage, "bob")
    _, root_token = annotators.add_annotator(storage, "root", role="admin")
    _, carol_token = annotators.add_annotator(storage, "carol")

    def start(token):
        r = make().post(
            "/api/v1/conversations",
            json={"mode": mode, "task_description": "t"},
            headers={"Authorization": f"Bearer {token}"},
        )
        return r.json()["id"]

    bobs, roots = start(bob_token), start(root_token)
    writes = ('id="composer"', 'id="message"', 'id="finish-form"', 'id="comment"', 'id="withdraw"')
    writes += ('id="stop"', 'id="rating"') if mode == "red-team" else ()
    for token, cid, writer in (
        (bob_token, bobs, True),
        (root_token, roots, True),
        (root_token, bobs, False),
    ):
        client = make()
        assert login(client, token).status_code == 303
        r = client.get(f"/conversations/{cid}")
        assert r.status_code == 200
        assert _audit(r.text).inline == []
        html = r.text
        assert f'data-writer="{int(writer)}"' in html
        for part in writes:
            assert (part in html) is writer, (cid, part)
        assert ('id="edit-toggle"' in html) is (writer and mode == "helpful")
        assert ('id="reader-note"' in html) is not writer
        assert 'id="halt"' in html and 'id="retry"' in html  # Stop and Retry stay
        yours = client.get(f"/api/v1/conversations/{cid}", headers={"X-CSRF-Token": _csrf(html)})
        assert yours.json()["yours"] is writer
    client = make()
    assert login(client, carol_token).status_code == 303
    r = client.get(f"/conversations/{bobs}")
    assert r.status_code == 404 and 'id="composer"' not in r.text
