"""Gold, qualification and feedback over HTTP: a gold review answers like a real one, the
admin's routes are the admin's, the feedback says what it should, the pages escape."""

from __future__ import annotations

from dataclasses import replace

import pytest
from test_gold import hh, write
from test_review import conversation

from hhrlhf.collect.services.gold import import_gold, read_gold
from hhrlhf.collect.services.qualification import round_of

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'
GOLD = [
    hh([f"Herb question {i}? {HOSTILE}"], f"Right {i}. {HOSTILE}", f"Wrong {i}.") for i in range(6)
]


@pytest.fixture
def gold(storage, tmp_path):
    items = read_gold(write(tmp_path / "gold.jsonl", GOLD))
    import_gold(storage, items)
    return {g.chosen for g in items}


def shape(value):
    """The JSON value's structure: keys and types, not the content."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(v) for v in value]
    return type(value).__name__


def test_a_gold_task_answers_like_a_real_one(make_client, settings, storage, alice, bob, gold):
    a, _, _ = alice
    _, hb, _ = bob
    conversation(storage, a, [("a", 3)])
    real_client = make_client(replace(settings, review_fraction=1.0, gold_fraction=0.0))
    real = real_client.get("/api/v1/reviews/next", headers=hb)
    rid = real.json()["review"]["id"]
    real_answer = real_client.post(
        f"/api/v1/reviews/{rid}", json={"pick": "a", "strength": 2}, headers=hb
    )
    conversation(storage, a, [("b", 2)])
    gold_client = make_client(replace(settings, review_fraction=1.0, gold_fraction=1.0))
    fake = gold_client.get("/api/v1/reviews/next", headers=hb)
    task = fake.json()["review"]
    assert any(c["text"] in gold for c in task["candidates"])  # it is the gold one
    assert shape(fake.json()) == shape(real.json())
    assert list(task) == list(real.json()["review"])
    assert task["id"] == rid + 1  # the same table's ids
    assert fake.headers["content-type"] == real.headers["content-type"]
    answer = gold_client.post(
        f"/api/v1/reviews/{task['id']}", json={"pick": "b", "strength": 2}, headers=hb
    )
    assert shape(answer.json()) == shape(real_answer.json())
    # the page looks the same: same sections, the gold text escaped
    page = gold_client.get("/review", headers={**hb, "accept": "text/html"})
    assert page.status_code == 200
    assert 'id="review"' in page.text and 'id="review-task"' in page.text
    assert "<script>alert" not in page.text
    assert "gold" not in page.text.lower()


def test_admin_routes_are_the_admins(client, alice, admin):
    _, ha, _ = alice
    _, hroot, _ = admin
    assert client.get("/api/v1/admin/qualification").status_code == 401
    assert client.get("/api/v1/admin/qualification", headers=ha).status_code == 403
    assert client.post("/api/v1/admin/qualification/alice/reset", headers=ha).status_code == 403
    r = client.get("/api/v1/admin/qualification", headers=hroot)
    assert r.status_code == 200 and r.json()["round"] is None
    # no round: nothing to reset (409), an unknown name is not found once there is one
    assert client.post("/api/v1/admin/qualification/alice/reset", headers=hroot).status_code == 409
    assert client.get("/api/v1/feedback").status_code == 401


def test_round_from_the_config_feedback_and_reset(
    make_client, settings, storage, alice, bob, admin, gold
):
    a, ha, _ = alice
    b, hb, _ = bob
    _, hroot, _ = admin
    c = make_client(
        replace(settings, review_fraction=1.0, qualification_reviews=2, qualification_threshold=1.0)
    )
    assert round_of(storage).reviews == 2  # the app wrote the config's round
    conversation(storage, a, [("a", 3)])
    for _ in range(2):  # bob misses both
        task = c.get("/api/v1/reviews/next", headers=hb).json()["review"]
        wrong = next(x["slot"] for x in task["candidates"] if x["text"] not in gold)
        assert c.post(
            f"/api/v1/reviews/{task['id']}", json={"pick": wrong, "strength": 3}, headers=hb
        ).is_success
    fb = c.get("/api/v1/feedback", headers=hb).json()
    assert fb["qualification"]["status"] == "failed" and len(fb["gold_misses"]) == 2
    miss = fb["gold_misses"][0]
    assert miss["pick"] != miss["right"] and miss[miss["right"]] in gold
    assert c.get("/api/v1/reviews/next", headers=hb).json()["review"] is None
    q = c.get("/api/v1/admin/qualification", headers=hroot).json()
    row = next(r for r in q["annotators"] if r["name"] == "bob")
    assert (row["status"], row["answered"], row["accuracy"]) == ("failed", 2, 0.0)
    assert c.post("/api/v1/admin/qualification/nobody/reset", headers=hroot).status_code == 404
    r = c.post("/api/v1/admin/qualification/bob/reset", headers=hroot)
    assert r.status_code == 200 and r.json()["annotator"]["status"] == "waiting"
    page = c.get("/admin/quality", headers={**hroot, "accept": "text/html"})
    assert page.status_code == 200 and 'data-name="bob" data-status="waiting"' in page.text
    assert c.get("/admin/quality", headers={**ha, "accept": "text/html"}).status_code == 403


def test_feedback_shows_a_disagreeing_review_anonymously(
    make_client, settings, storage, alice, bob
):
    a, ha, _ = alice
    _, hb, _ = bob
    conversation(storage, a, [("a", 3)])
    c = make_client(replace(settings, review_fraction=1.0))
    task = c.get("/api/v1/reviews/next", headers=hb).json()["review"]
    # bob picks the response alice did not (Answer B0.)
    other = next(x["slot"] for x in task["candidates"] if x["text"] == "Answer B0.")
    c.post(f"/api/v1/reviews/{task['id']}", json={"pick": other, "strength": 4}, headers=hb)
    fb = c.get("/api/v1/feedback", headers=ha).json()
    assert fb["qualification"] is None and fb["gold_misses"] == []
    (d,) = fb["disagreements"]
    assert (d["pick"], d["strength"], d["review_pick"], d["review_strength"]) == ("a", 3, "b", 4)
    assert "bob" not in str(fb)
    page = c.get("/feedback", headers={**ha, "accept": "text/html"})
    assert page.status_code == 200 and "a reviewer: 4/" in page.text and "bob" not in page.text
    assert c.get("/api/v1/feedback", headers=hb).json()["disagreements"] == []
