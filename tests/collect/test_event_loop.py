"""No request blocks the event loop that streams every annotator's responses on the database.

Every statement the app sends to the database is watched: one sent through a blocking
connection from a thread running an asyncio event loop fails the test (on PostgreSQL the
annotation loop's units of work run on the loop through psycopg's async connections, which
wait without blocking it: ``Storage.call``). Then every page and every JSON route is opened
as a visitor, an annotator and an admin, with a conversation, a finished turn and a review
task in the database (and the rerank backend's model loaded at start, not on the loop).
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import replace

import orjson
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")

from fastapi.testclient import TestClient  # noqa: E402
from logins import login  # noqa: E402
from sqlalchemy import event  # noqa: E402
from sqlalchemy.engine import Engine  # noqa: E402

from hhrlhf.collect.services import annotators
from hhrlhf.collect.web.app import create_app  # noqa: E402


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


@pytest.fixture
def watched():
    """``{"blocking": [(thread name, statement)], "async": n}``: statements sent from an event
    loop's thread through a blocking connection, and how many through an async one."""
    seen: dict = {"blocking": [], "async": 0}

    def check(conn, cursor, statement, params, context, executemany):
        if not _on_event_loop():
            return
        if conn.dialect.is_async:
            seen["async"] += 1
        else:
            seen["blocking"].append(
                (threading.current_thread().name, statement.split("\n")[0][:80])
            )

    event.listen(Engine, "before_cursor_execute", check)  # every engine, those made later too
    yield seen
    event.remove(Engine, "before_cursor_execute", check)


@pytest.fixture
def markdown_on_loop(monkeypatch):
    """``list`` of the lengths of texts rendered as markdown on an event loop's thread (a
    hostile 20,000-character text takes a quarter of a second: the loop would stall)."""
    from hhrlhf.collect.web import markdown

    rendered: list[int] = []
    real = markdown._render  # every way to HTML parses through it

    def watched_render(text: str) -> str:
        if _on_event_loop():
            rendered.append(len(text))
        return real(text)

    monkeypatch.setattr(markdown, "_render", watched_render)
    return rendered


def test_no_page_or_route_touches_the_database_on_the_event_loop(
    storage, settings, watched, markdown_on_loop
):
    app = create_app(replace(settings, review_fraction=1.0, data="sample"), storage=storage)
    alice, alice_token = annotators.add_annotator(storage, "alice")
    _, bob_token = annotators.add_annotator(storage, "bob")
    _, root_token = annotators.add_annotator(storage, "root", role="admin")
    with TestClient(app, base_url="http://testserver") as client:
        h = {"Authorization": f"Bearer {alice_token}"}
        cid = client.post(
            "/api/v1/conversations", json={"task_description": "Plan a picnic"}, headers=h
        ).json()["id"]
        turn = client.post(
            f"/api/v1/conversations/{cid}/turns",
            json={"text": "What should I pack?", "wait": True},
            headers=h,
        ).json()
        client.get(f"/api/v1/turns/{turn['id']}/stream", headers=h)
        client.post(
            f"/api/v1/turns/{turn['id']}/choice", json={"pick": "a", "strength": 3}, headers=h
        )
        streamed = client.post(  # the page's way: the answer is the turn's events
            f"/api/v1/conversations/{cid}/turns",
            json={"text": "And for dessert?", "stream": True},
            headers=h,
        )
        assert streamed.status_code == 201 and "event: end" in streamed.text
        second = orjson.loads(streamed.text.split("data: ", 1)[1].split("\n", 1)[0])["id"]
        client.post(f"/api/v1/turns/{second}/choice", json={"pick": "b", "strength": 2}, headers=h)
        client.post(f"/api/v1/conversations/{cid}/finish", json={}, headers=h)
        pages = [
            "/",
            f"/conversations/{cid}",
            "/help",
            "/review",
            "/admin",
            "/admin/leaderboard",
            "/data",
            "/data/attempts",
            "/login",
        ]
        api = [
            "/api/v1/me",
            "/api/v1/conversations",
            f"/api/v1/conversations/{cid}",
            "/api/v1/reviews/next",
            "/api/v1/admin/stats?resamples=0",
            "/api/v1/admin/leaderboard?resamples=0",
            "/api/v1/data/pairs",
        ]
        for token in (None, bob_token, root_token):
            client.cookies.clear()
            if token is not None:
                assert login(client, token).status_code == 303
            for path in pages + api:
                r = client.get(path)
                assert r.status_code < 500, (path, r.status_code)
    assert watched["blocking"] == [], watched["blocking"]
    assert markdown_on_loop == []  # nor renders markdown there
    if storage.url.startswith("sqlite"):
        assert watched["async"] == 0  # SQLite's units of work run in threads
    else:
        assert watched["async"] > 0  # PostgreSQL's on the loop: the watch saw them


def test_a_choice_answers_with_the_html_its_stream_rendered(storage, settings, monkeypatch):
    """The choice's answer carries the responses' HTML as the turn's stream rendered it: a
    lookup on the loop, no trip to a thread. A worker that did not render them (its cache
    empty) renders them in a thread, to the same HTML."""
    from hhrlhf.collect.web import markdown, stream

    trips: list[str] = []
    real = stream.run_in_threadpool

    async def counted(fn, *args, **kwargs):
        trips.append(fn.__name__)
        return await real(fn, *args, **kwargs)

    monkeypatch.setattr(stream, "run_in_threadpool", counted)
    monkeypatch.setattr(markdown, "_cache", markdown._Recent(markdown.CACHE_CHARS))
    app = create_app(settings, storage=storage)
    _, token = annotators.add_annotator(storage, "alice")
    h = {"Authorization": f"Bearer {token}"}
    answers = []
    with TestClient(app, base_url="http://testserver") as client:
        cid = client.post(
            "/api/v1/conversations", json={"task_description": "Plan a picnic"}, headers=h
        ).json()["id"]
        for text, forget in (("What should I pack?", False), ("And for dessert?", True)):
            r = client.post(
                f"/api/v1/conversations/{cid}/turns", json={"text": text, "stream": True}, headers=h
            )
            assert r.status_code == 201 and "event: end" in r.text
            tid = orjson.loads(r.text.split("data: ", 1)[1].split("\n", 1)[0])["id"]
            assert "render_all" in trips  # the stream rendered the finished responses
            if forget:  # as if the choice reached another worker
                markdown._cache.clear()
            trips.clear()
            r = client.post(
                f"/api/v1/turns/{tid}/choice", json={"pick": "a", "strength": 2}, headers=h
            )
            assert r.status_code == 200, r.text
            answers.append((list(trips), r.json()["turn"]))
    (same_worker, first), (other_worker, second) = answers
    assert same_worker == [] and other_worker == ["render_all"]
    for turn in (first, second):
        for c in turn["candidates"]:
            assert c["html"] == markdown.render_markdown(c["text"]) and c["html"].startswith("<p>")
        assert turn["continued_html"] == turn["candidates"][0]["html"]
