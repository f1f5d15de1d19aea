"""Reads count too: GETs per annotator (a whole conversation as several), and the markdown one
worker renders for one annotator per minute, so that one annotator cannot take the CPU that
the others' turns need."""

from __future__ import annotations

from dataclasses import replace

import pytest

pytest.importorskip("markdown_it")

from hhrlhf.collect.web import markdown  # noqa: E402


@pytest.fixture(autouse=True)
def _empty_cache(monkeypatch):
    monkeypatch.setattr(markdown, "_cache", markdown._Recent(markdown.CACHE_CHARS))


def _conversation_with_edit(client, h, edit: str) -> tuple[int, dict]:
    cid = client.post(
        "/api/v1/conversations", json={"task_description": "Plan a picnic"}, headers=h
    ).json()["id"]
    turn = client.post(f"/api/v1/conversations/{cid}/turns", json={"text": "Pack?"}, headers=h)
    assert turn.status_code == 201, turn.text
    r = client.post(
        f"/api/v1/turns/{turn.json()['id']}/choice",
        json={"pick": "a", "strength": 2, "edit": edit},
        headers=h,
    )
    assert r.status_code == 200, r.text
    return cid, r.json()["turn"]


def test_reads_are_limited_per_annotator(make_client, settings, alice, bob):
    client = make_client(replace(settings, rate_reads_per_minute=3))
    _, ha, _ = alice
    _, hb, _ = bob
    for _ in range(3):
        assert client.get("/api/v1/conversations", headers=ha).status_code == 200
    r = client.get("/api/v1/conversations", headers=ha)
    assert r.status_code == 429 and "too many requests" in r.json()["error"]
    assert 1 <= int(r.headers["retry-after"]) <= 61
    assert client.get("/api/v1/me", headers=ha).status_code == 429  # every GET counts
    assert client.get("/api/v1/conversations", headers=hb).status_code == 200  # not bob


def test_a_whole_conversation_counts_as_more_reads_by_its_size(make_client, settings, alice):
    """A conversation holding 20,000-22,000 characters of text counts as eleven reads (one,
    and one more per 2,000 characters)."""
    client = make_client(replace(settings, rate_reads_per_minute=25))
    _, h, _ = alice
    cid, _ = _conversation_with_edit(client, h, "word " * 4_000)
    for _ in range(2):  # 11 each
        assert client.get(f"/api/v1/conversations/{cid}", headers=h).status_code == 200
    assert client.get(f"/api/v1/conversations/{cid}", headers=h).status_code == 429


def test_markdown_past_the_render_budget_shows_as_plain_text(make_client, settings, alice, bob):
    """One worker renders at most ``render_chars_per_minute`` characters of markdown for one
    annotator; past it a text comes back as escaped plain text (not kept in the cache: it is
    rendered once the budget has room), and other annotators' texts render as before."""
    client = make_client(replace(settings, render_chars_per_minute=30_000))
    _, ha, _ = alice
    _, hb, _ = bob
    first = "*a* " * 5_000
    _, turn = _conversation_with_edit(client, ha, first)
    assert turn["continued_html"].startswith("<p><em>a</em>")
    second = "**b** " * 3_000
    cid, turn = _conversation_with_edit(client, ha, second)
    assert turn["continued_html"].startswith('<p class="plain">**b** **b**')
    assert markdown.cached_html([second]) is None
    view = client.get(f"/api/v1/conversations/{cid}", headers=ha).json()
    assert view["turns"][0]["continued_html"].startswith('<p class="plain">')
    _, turn = _conversation_with_edit(client, hb, second)
    assert turn["continued_html"].startswith("<p><strong>b</strong>")
    # now in the cache (bob's render): found for alice too, at no cost
    view = client.get(f"/api/v1/conversations/{cid}", headers=ha).json()
    assert view["turns"][0]["continued_html"].startswith("<p><strong>b</strong>")


def test_the_conversation_view_does_not_read_each_turns_prefix(storage, alice):
    """Each turn's transcript prefix holds every earlier turn: reading them all for the view
    cost the square of the conversation's length (36 M characters for 60 edits of 20,000)."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    from hhrlhf.collect.services import conversations

    who, _, _ = alice
    cid = conversations.create_conversation(storage, who, "helpful", "task").id
    conversations.create_turn(storage, who, cid, "hello", ("demo-a", "demo-b"))
    statements: list[str] = []

    def seen(conn, cursor, statement, *args):
        statements.append(statement)

    event.listen(Engine, "before_cursor_execute", seen)
    try:
        view = conversations.get_conversation(storage, who, cid)
    finally:
        event.remove(Engine, "before_cursor_execute", seen)
    assert view.turns[0].human == "hello"
    assert any("turns.human" in s for s in statements)  # the turns were read
    assert not [s for s in statements if "turns.prefix" in s]


def test_a_refused_heavy_read_fills_the_window(monkeypatch):
    """A heavy read refused (its size known only once read) counts as the limit's worth, so
    the next reads are refused at the door, before reading the conversation again, until
    the window has room (and Retry-After says when)."""
    from hhrlhf.collect.web.ratelimit import Limits, RateLimited

    class Clock:
        t = 60 * 29_000_000 + 30.0

        def __call__(self):
            return self.t

    clock = Clock()
    limits = Limits(0, 0, clock, wall=clock, reads_per_minute=100)
    limits.check_read(7, 60)  # a heavy read: 60
    with pytest.raises(RateLimited):
        limits.check_read(7, 60)  # 60 more do not fit: refused, and the window filled
    with pytest.raises(RateLimited) as refused:
        limits.check_read(7)  # a plain read is refused at once now
    clock.t += refused.value.retry_after
    limits.check_read(7)
