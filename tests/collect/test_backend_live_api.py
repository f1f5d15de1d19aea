"""Backends live through the app: the admin's JSON routes (admins only), a change through
one app drawn by another app on the same database within ``backend_refresh_seconds``, a
turn in flight on a backend paused mid-generation finishing, and a red-team conversation on
a paused backend refused."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import pytest
from contract import checked_client

from hhrlhf.collect.db import Storage
from hhrlhf.collect.services import backend_live
from hhrlhf.collect.services.rules import CONVERSATION_PAUSED
from hhrlhf.collect.web.context import app_context

#: seconds between two reads of the states (small: the test waits for one)
REFRESH = 0.05


@pytest.fixture
def live_settings(settings):
    return replace(settings, backend_refresh_seconds=REFRESH)


def _backends(client, headers, cid):
    turns = client.get(f"/api/v1/conversations/{cid}", headers=headers).json()["turns"]
    return [c["backend"] for t in turns for c in t["candidates"]]


def test_the_routes_pause_resume_and_weight_for_admins_only(
    make_client, live_settings, admin, alice
):
    client = make_client(live_settings)
    _, headers, _ = admin
    _, annotator, _ = alice
    base = "/api/v1/admin/backends"
    for method, url, body in (
        ("GET", base, None),
        ("POST", f"{base}/demo-a/pause", None),
        ("POST", f"{base}/demo-a/resume", None),
        ("POST", f"{base}/demo-a/weight", {"weight": 2}),
    ):
        assert client.request(method, url, json=body, headers=annotator).status_code == 403
        assert client.request(method, url, json=body).status_code == 401
    r = client.post(f"{base}/demo-a/pause", headers=headers)
    assert r.status_code == 200 and r.json()["changed"] and r.json()["backend"]["paused"]
    assert client.post(f"{base}/demo-a/pause", headers=headers).json()["changed"] is False
    # this worker draws without it at once
    assert app_context(client.app).rules.backends == ("demo-b",)
    r = client.post(f"{base}/demo-b/pause", headers=headers)
    assert r.status_code == 409 and "cannot be paused" in r.json()["error"]
    r = client.post(f"{base}/demo-b/weight", json={"weight": 0.5}, headers=headers)
    assert r.json()["backend"]["weight"] == 0.5
    for bad in (0, -2, "2", None):
        r = client.post(f"{base}/demo-b/weight", json={"weight": bad}, headers=headers)
        assert r.status_code == 422, bad
    r = client.post(f"{base}/nope/pause", headers=headers)
    assert r.status_code == 404 and "demo-a, demo-b" in r.json()["error"]
    client.post(f"{base}/demo-a/resume", headers=headers)
    got = client.get(base, headers=headers).json()
    assert [(b["name"], b["paused"], b["weight"]) for b in got["backends"]] == [
        ("demo-a", False, 1.0),
        ("demo-b", False, 0.5),
    ]
    assert [
        (e["backend"], e["action"], e["value"], e["previous"], e["by"]) for e in got["events"]
    ] == [
        ("demo-a", "pause", None, None, "root"),
        ("demo-b", "weight", 0.5, 1.0, "root"),
        ("demo-a", "resume", None, None, "root"),
    ]


def test_a_change_through_one_app_is_drawn_by_another_within_the_refresh(
    make_client, live_settings, storage, admin, alice
):
    from fastapi.testclient import TestClient

    from hhrlhf.collect.web.app import create_app

    one = make_client(live_settings)
    own = Storage(storage.url)  # another worker: its own connections
    other = checked_client(TestClient(create_app(live_settings, storage=own)))
    _, headers, _ = admin
    try:
        other.__enter__()
        rules = app_context(other.app).live
        assert rules.rules.backends == ("demo-a", "demo-b")
        assert one.post("/api/v1/admin/backends/demo-a/pause", headers=headers).status_code == 200
        changed = time.monotonic()
        while "demo-a" in rules.rules.backends:
            assert time.monotonic() - changed < 5, "the other app never read the change"
            time.sleep(0.01)
        # read within a refresh or two (the test's machine may be busy: a second's slack)
        assert time.monotonic() - changed < 1 + 2 * REFRESH
        cid = other.post(
            "/api/v1/conversations",
            json={"task_description": "Plan a walk"},
            headers=headers,
        ).json()["id"]
        for i in range(6):
            turn = other.post(
                f"/api/v1/conversations/{cid}/turns",
                json={"text": f"step {i}?", "wait": True},
                headers=headers,
            ).json()
            assert turn["status"] == "ready"
            other.post(
                f"/api/v1/turns/{turn['id']}/choice",
                json={"pick": "a", "strength": 2},
                headers=headers,
            )
        assert set(_backends(other, headers, cid)) == {"demo-b"}
    finally:
        other.__exit__(None, None, None)
        own.dispose()


def test_a_turn_in_flight_on_a_backend_paused_mid_generation_finishes(
    make_client, settings, storage, admin
):
    from hhrlhf.collect.config import demo_settings

    slow = replace(
        demo_settings(storage.url, token_delay=0.02), seed=7, backend_refresh_seconds=REFRESH
    )
    client = make_client(slow)
    who, headers, _ = admin
    cid = client.post(
        "/api/v1/conversations", json={"task_description": "Plan a picnic"}, headers=headers
    ).json()["id"]
    answer: dict = {}

    def send():
        r = client.post(
            f"/api/v1/conversations/{cid}/turns",
            json={"text": "What should I bring?", "wait": True},
            headers=headers,
        )
        answer.update(r.json())

    sending = threading.Thread(target=send)
    sending.start()
    deadline = time.monotonic() + 10
    while True:  # the responses are being written
        turns = client.get(f"/api/v1/conversations/{cid}", headers=headers).json()["turns"]
        if turns and turns[0]["status"] == "generating":
            break
        assert time.monotonic() < deadline
        time.sleep(0.01)
    backend_live.pause(storage, slow, "demo-a", who.name)
    sending.join(30)
    assert answer["status"] == "ready" and len(answer["candidates"]) == 2
    assert all(c["text"] for c in answer["candidates"])
    assert sorted(_backends(client, headers, cid)) == ["demo-a", "demo-b"]


def test_a_red_team_conversation_on_a_paused_backend_takes_no_new_message(
    make_client, live_settings, storage, admin
):
    client = make_client(live_settings)
    who, headers, _ = admin
    cid = client.post(
        "/api/v1/conversations",
        json={"mode": "red-team", "task_description": "Try to get a recipe for trouble"},
        headers=headers,
    ).json()["id"]
    backend = client.get(f"/api/v1/conversations/{cid}", headers=headers).json()["backend"]
    other = {"demo-a": "demo-b", "demo-b": "demo-a"}[backend]
    assert client.post(f"/api/v1/admin/backends/{backend}/pause", headers=headers).json()["changed"]
    r = client.post(
        f"/api/v1/conversations/{cid}/turns", json={"text": "hello", "wait": False}, headers=headers
    )
    assert r.status_code == 409 and r.json()["error"] == CONVERSATION_PAUSED
    assert client.get(f"/api/v1/conversations/{cid}", headers=headers).json()["turns"] == []
    # new red-team conversations draw the other one only
    for _ in range(8):
        new = client.post(
            "/api/v1/conversations",
            json={"mode": "red-team", "task_description": "again"},
            headers=headers,
        ).json()["id"]
        assert (
            client.get(f"/api/v1/conversations/{new}", headers=headers).json()["backend"] == other
        )


def test_the_leaderboard_page_and_route_say_when_weights_changed(
    make_client, live_settings, storage, admin
):
    from logins import login
    from test_backend_live import _picks_around_now

    from hhrlhf.collect.db.models import BackendEvent
    from hhrlhf.collect.domain import now

    client = make_client(live_settings)
    _, headers, token = admin
    _picks_around_now(storage)
    assert (
        "weight_changes"
        not in client.get("/api/v1/admin/leaderboard?resamples=10", headers=headers).json()
    )
    with storage.write() as s:
        s.add(BackendEvent(backend="m1", action="weight", value=0.5, by="<b>eve</b>", at=now()))
    got = client.get("/api/v1/admin/leaderboard?resamples=10", headers=headers).json()
    assert [(c["backend"], c["value"], c["by"]) for c in got["weight_changes"]] == [
        ("m1", 0.5, "<b>eve</b>")
    ]
    assert login(client, token).status_code == 303
    page = client.get("/admin/leaderboard").text
    assert 'id="leaderboard-weights"' in page
    assert "m1 weight 0.5 at " in page and "by &lt;b&gt;eve&lt;/b&gt;" in page
