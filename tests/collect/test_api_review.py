"""The review, statistics, leaderboard and annotator-management routes, in process."""

from __future__ import annotations

from dataclasses import replace

import pytest
from logins import login

from hhrlhf.collect.services import annotators
from hhrlhf.errors import Conflict


@pytest.fixture
def review_client(make_client, settings):
    return make_client(replace(settings, review_fraction=1.0))


def finished_conversation(client, headers, picks):
    cid = client.post(
        "/api/v1/conversations",
        json={"mode": "helpful", "task_description": "Garden help"},
        headers=headers,
    ).json()["id"]
    for i, (pick, strength) in enumerate(picks):
        turn = client.post(
            f"/api/v1/conversations/{cid}/turns",
            json={"text": f"How do I grow herb number {i}?"},
            headers=headers,
        )
        assert turn.status_code == 201, turn.text
        r = client.post(
            f"/api/v1/turns/{turn.json()['id']}/choice",
            json={"pick": pick, "strength": strength},
            headers=headers,
        )
        assert r.status_code == 200, r.text
    assert client.post(f"/api/v1/conversations/{cid}/finish", json={}, headers=headers).is_success
    return cid


#: a review task's keys in the API, in order
TASK_KEYS = ["id", "mode", "prefix", "human", "candidates", "status", "pick", "strength"]


def test_review_round_trip_and_stats(review_client, alice, bob, admin):
    c = review_client
    _, ha, _ = alice
    _, hb, _ = bob
    _, hroot, _ = admin
    finished_conversation(c, ha, [("a", 3), ("b", 2)])
    assert c.get("/api/v1/reviews/next", headers=ha).json()["review"] is None  # own work
    answered = 0
    while (task := c.get("/api/v1/reviews/next", headers=hb).json()["review"]) is not None:
        assert len(task["candidates"]) == 2 and "backend" not in str(task)
        assert list(task) == [*TASK_KEYS, "task_description"]  # the next task says its task
        assert set(task["candidates"][0]) == {"slot", "text"}
        r = c.post(f"/api/v1/reviews/{task['id']}", json={"pick": "a", "strength": 2}, headers=hb)
        assert r.status_code == 200 and r.json()["review"]["status"] == "done"
        assert list(r.json()["review"]) == TASK_KEYS
        answered += 1
    assert answered == 2
    # someone else's review is not found; a bad answer is refused
    assert (
        c.post("/api/v1/reviews/1", json={"pick": "a", "strength": 2}, headers=ha).status_code
        == 404
    )
    assert (
        c.post("/api/v1/reviews/1", json={"pick": "x", "strength": 2}, headers=hb).status_code
        == 422
    )
    stats = c.get("/api/v1/admin/stats?resamples=20", headers=hroot)
    assert stats.status_code == 200
    body = stats.json()
    assert body["agreement"]["units"] == 2 and body["agreement"]["ratings"] == 4
    per = {r["name"]: r for r in body["annotators"]}
    assert per["alice"]["comparisons"] == 2 and per["bob"]["reviews"] == 2
    board = c.get("/api/v1/admin/leaderboard?resamples=20", headers=hroot).json()
    assert {"models", "comparisons", "conversations"} <= set(board)
    for row in board["models"]:
        assert set(row) == {
            "name",
            "rating",
            "ci_low",
            "ci_high",
            "comparisons",
            "win_rate",
            "warning",
        }


def test_admin_routes_are_for_admins_only(review_client, alice):
    _, ha, _ = alice
    for path in ("/api/v1/admin/stats", "/api/v1/admin/leaderboard"):
        assert review_client.get(path, headers=ha).status_code == 403
        assert review_client.get(path).status_code == 401
    r = review_client.post("/api/v1/admin/annotators", json={"name": "eve"}, headers=ha)
    assert r.status_code == 403
    r = review_client.post("/api/v1/admin/annotators/alice", json={"role": "admin"}, headers=ha)
    assert r.status_code == 403


def test_admin_manages_annotators(review_client, admin, storage):
    c = review_client
    root, hroot, _ = admin
    r = c.post(
        "/api/v1/admin/annotators",
        json={"name": "dana", "attributes": {"is_upworker": True}},
        headers=hroot,
    )
    assert r.status_code == 201, r.text
    token = r.json()["token"]
    assert (
        c.get("/api/v1/me", headers={"Authorization": f"Bearer {token}"}).json()["name"] == "dana"
    )
    assert (
        c.post("/api/v1/admin/annotators", json={"name": "dana"}, headers=hroot).status_code == 409
    )
    r = c.post(
        "/api/v1/admin/annotators/dana",
        json={"role": "admin", "attributes": {"team": "north"}},
        headers=hroot,
    )
    assert r.json()["annotator"]["role"] == "admin"
    assert r.json()["annotator"]["attributes"] == {"is_upworker": True, "team": "north"}
    r = c.post("/api/v1/admin/annotators/dana", json={"disabled": True}, headers=hroot)
    assert r.json()["annotator"]["disabled"] is True
    assert c.get("/api/v1/me", headers={"Authorization": f"Bearer {token}"}).status_code in (
        401,
        403,
    )
    assert (
        c.post(
            f"/api/v1/admin/annotators/{root.name}", json={"disabled": True}, headers=hroot
        ).status_code
        == 409
    )
    assert (
        c.post("/api/v1/admin/annotators/nobody", json={"role": "admin"}, headers=hroot).status_code
        == 404
    )


def test_the_last_admin_cannot_demote_or_disable_themself(review_client, admin, storage):
    c = review_client
    root, hroot, _ = admin
    url = f"/api/v1/admin/annotators/{root.name}"
    for body in (
        {"role": "annotator"},
        {"disabled": True},
        {"role": "annotator", "attributes": {"x": 1}},
    ):
        r = c.post(url, json=body, headers=hroot)
        assert r.status_code == 409, (body, r.text)
        assert "last admin" in r.json()["error"] or "yourself" in r.json()["error"]
    r = c.post(url, json={"role": "annotator"}, headers=hroot)
    assert "is the last admin: make another annotator an admin first" in r.json()["error"]
    after = annotators.annotator_by_name(storage, root.name)
    assert after.role == "admin" and not after.disabled and "x" not in after.attributes
    # with a second admin, stepping down is allowed; then that one is the last
    c.post("/api/v1/admin/annotators", json={"name": "erin", "role": "admin"}, headers=hroot)
    r = c.post(url, json={"role": "annotator"}, headers=hroot)
    assert r.status_code == 200 and r.json()["annotator"]["role"] == "annotator"
    assert c.post(url, json={"role": "admin"}, headers=hroot).status_code == 403  # no longer admin
    erin = annotators.rotate_token(storage, "erin")
    he = {"Authorization": f"Bearer {erin}"}
    assert (
        c.post("/api/v1/admin/annotators/erin", json={"role": "annotator"}, headers=he).status_code
        == 409
    )
    assert annotators.annotator_by_name(storage, "erin").role == "admin"


def test_two_admins_demoting_themselves_at_once_leave_one(storage):
    """The check and the change are one transaction with the admins' rows locked."""
    import threading

    from hhrlhf.collect.services.annotators import set_annotator

    for name in ("ann", "bea"):
        annotators.add_annotator(storage, name, role="admin")
    barrier = threading.Barrier(2)
    results: dict[str, object] = {}

    def step_down(name: str) -> None:
        barrier.wait()
        try:
            results[name] = set_annotator(storage, name, role="annotator")
        except Exception as exc:  # noqa: BLE001 - the refusal is what is counted
            results[name] = exc

    threads = [threading.Thread(target=step_down, args=(n,)) for n in ("ann", "bea")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    refused = [r for r in results.values() if isinstance(r, Exception)]
    assert len(refused) == 1 and isinstance(refused[0], Conflict), results
    roles = [annotators.annotator_by_name(storage, n).role for n in ("ann", "bea")]
    assert sorted(roles) == ["admin", "annotator"]


def test_cookie_writes_need_the_csrf_token(review_client, storage, alice, bob):
    c = review_client
    _, ha, _ = alice
    finished_conversation(c, ha, [("a", 3)])
    _, _, bob_token = bob
    assert login(c, bob_token).status_code == 303
    task = c.get("/api/v1/reviews/next").json()["review"]
    body = {"pick": "a", "strength": 2}
    assert c.post(f"/api/v1/reviews/{task['id']}", json=body).status_code == 403
    csrf = c.get("/api/v1/me").json()["csrf_token"]
    r = c.post(f"/api/v1/reviews/{task['id']}", json=body, headers={"X-CSRF-Token": csrf})
    assert r.status_code == 200
