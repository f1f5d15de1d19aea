"""The guidelines' routes and pages: who may publish and preview, hostile Markdown sanitised,
the acknowledgement that lets an annotator start a conversation, the home page's banner."""

from __future__ import annotations

import pytest

HOSTILE = (
    "# Rules\n\n<script>alert('x')</script>\n\n[click me](javascript:alert(1))\n\n"
    '<img src=x onerror="alert(2)">\n\nBe **kind**.'
)
START = {"mode": "helpful", "task_description": "Plan a picnic"}


def _publish(client, headers, text="# Rules\n\nBe kind.", important=False):
    r = client.post(
        "/api/v1/admin/guidelines", json={"text": text, "important": important}, headers=headers
    )
    assert r.status_code == 201, r.text
    return r.json()["guidelines"]


def _no_live_markup(html):
    assert "<script" not in html
    assert "javascript:" not in html.replace("[click me](javascript:alert(1))", "")
    assert 'href="javascript' not in html
    assert "<img" not in html


def test_only_admins_publish_preview_and_list(client, alice, admin):
    _, ha, _ = alice
    for method, url, body in (
        ("POST", "/api/v1/admin/guidelines", {"text": "# Mine", "important": False}),
        ("POST", "/api/v1/admin/guidelines/preview", {"text": "# Mine"}),
        ("GET", "/api/v1/admin/guidelines", None),
    ):
        assert client.request(method, url, json=body, headers=ha).status_code == 403
        assert client.request(method, url, json=body).status_code == 401
    _, hr, _ = admin
    assert client.get("/api/v1/guidelines", headers=ha).json()["current"] is None
    assert client.get("/api/v1/admin/guidelines", headers=hr).json() == {"versions": []}
    assert client.get("/admin/guidelines", headers=ha).status_code == 403


def test_hostile_markdown_is_sanitised_in_preview_api_and_pages(client, alice, admin):
    _, hr, _ = admin
    _, ha, _ = alice
    preview = client.post(
        "/api/v1/admin/guidelines/preview", json={"text": HOSTILE}, headers=hr
    ).json()["html"]
    _no_live_markup(preview)
    assert "<strong>kind</strong>" in preview
    assert "&lt;script&gt;" in preview  # shown as text, not run
    assert client.get("/api/v1/admin/guidelines", headers=hr).json() == {"versions": []}
    _publish(client, hr, HOSTILE)
    got = client.get("/api/v1/guidelines", headers=ha).json()
    assert got["text"] == HOSTILE.strip()
    _no_live_markup(got["html"])
    page = client.get("/guidelines", headers=ha).text
    body = page.split('id="guidelines-text"', 1)[1].split("</div>", 1)[0]
    _no_live_markup(body)
    assert "<strong>kind</strong>" in body


def test_acknowledging_lets_an_annotator_start(client, alice, admin):
    _, hr, _ = admin
    _, ha, _ = alice
    assert client.post("/api/v1/conversations", json=START, headers=ha).status_code == 201
    _publish(client, hr)
    r = client.post("/api/v1/conversations", json=START, headers=ha)
    assert r.status_code == 409
    assert "read and acknowledge the guidelines (version 1)" in r.json()["error"]
    home = client.get("/", headers=ha).text
    assert 'id="guidelines-banner"' in home and 'id="start-refused"' in home
    got = client.get("/api/v1/guidelines", headers=ha).json()
    assert got["current"]["version"] == 1 and got["must_acknowledge"]
    assert 'id="acknowledge"' in client.get("/guidelines", headers=ha).text
    r = client.post("/api/v1/guidelines/acknowledge", json={"version": 1}, headers=ha)
    assert r.json()["acknowledged"] == 1 and not r.json()["must_acknowledge"]
    assert "guidelines-banner" not in client.get("/", headers=ha).text
    assert client.post("/api/v1/conversations", json=START, headers=ha).status_code == 201
    # an admin is never held back (their page says so)
    _publish(client, hr, "# Rules\n\nNew rule.", important=True)
    assert client.post("/api/v1/conversations", json=START, headers=hr).status_code == 201
    page = client.get("/guidelines", headers=hr).text
    assert 'id="guidelines-admin-note"' in page and 'id="guidelines-due"' not in page
    assert 'id="guidelines-due"' in client.get("/guidelines", headers=ha).text
    r = client.post("/api/v1/conversations", json=START, headers=ha)
    assert r.status_code == 409 and "changed in an important way" in r.json()["error"]


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"text": "  \n ", "important": False}, 422),
        ({"text": "x" * 50_001}, 413),
        ({"text": "ok", "important": "yes"}, 422),
    ],
)
def test_publishing_refuses_bad_text(client, admin, body, status):
    _, hr, _ = admin
    r = client.post("/api/v1/admin/guidelines", json=body, headers=hr)
    assert r.status_code == status, r.text
    assert client.get("/api/v1/admin/guidelines", headers=hr).json() == {"versions": []}


def test_the_pages_say_when_nothing_is_published_and_list_versions(client, alice, admin):
    _, hr, _ = admin
    _, ha, _ = alice
    assert 'id="no-guidelines"' in client.get("/guidelines", headers=ha).text
    assert 'id="no-versions"' in client.get("/admin/guidelines", headers=hr).text
    _publish(client, hr, "# One")
    _publish(client, hr, "# Two <b>", important=True)
    page = client.get("/admin/guidelines", headers=hr).text
    assert page.count('<tr><td class="num">') == 2
    assert "# Two &lt;b&gt;</textarea>" in page  # the editor starts from the current text
    versions = client.get("/api/v1/admin/guidelines", headers=hr).json()["versions"]
    assert [(v["version"], v["important"], v["author"]) for v in versions] == [
        (2, True, "root"),
        (1, False, "root"),
    ]
