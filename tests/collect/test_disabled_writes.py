"""A disabled annotator writes nothing more, at once, wherever the change was made: each write
reads the login's state in its own transaction (a column of its first statement), so a worker
that still remembers the login (for a few seconds) refuses it all the same."""

from __future__ import annotations

import pytest
from sqlalchemy import update

from hhrlhf.collect.db.models import Annotator
from hhrlhf.collect.services import annotators, transcripts


def _disable_elsewhere(storage, name: str) -> None:
    """As ``hh collect annotator disable`` or another worker does: the row only (this
    process's memory of the login is left as it is)."""
    with storage.write() as s:
        s.execute(update(Annotator).where(Annotator.name == name).values(disabled=True))


@pytest.fixture
def started(client, storage):
    """alice with a conversation: a decided turn, and a second turn ready for a choice."""
    _, token = annotators.add_annotator(storage, "alice")
    h = {"Authorization": f"Bearer {token}"}
    cid = client.post("/api/v1/conversations", json={"task_description": "Grow basil"}, headers=h)
    cid = cid.json()["id"]
    first = client.post(f"/api/v1/conversations/{cid}/turns", json={"text": "Sun?"}, headers=h)
    ok = client.post(
        f"/api/v1/turns/{first.json()['id']}/choice", json={"pick": "a", "strength": 2}, headers=h
    )
    assert ok.status_code == 200
    second = client.post(f"/api/v1/conversations/{cid}/turns", json={"text": "Soil?"}, headers=h)
    assert client.get("/api/v1/conversations", headers=h).status_code == 200  # remembered now
    return h, cid, second.json()["id"]


WRITES = {
    "a conversation": lambda cid, tid: ("/api/v1/conversations", {"task_description": "More"}),
    "a choice": lambda cid, tid: (f"/api/v1/turns/{tid}/choice", {"pick": "b", "strength": 3}),
    "a message": lambda cid, tid: (f"/api/v1/conversations/{cid}/turns", {"text": "Water?"}),
    "the end": lambda cid, tid: (f"/api/v1/conversations/{cid}/finish", {"comment": "done"}),
    "a retry": lambda cid, tid: (f"/api/v1/turns/{tid}/retry", None),
    "a stop": lambda cid, tid: (f"/api/v1/turns/{tid}/stop", None),
}


@pytest.mark.parametrize("write", sorted(WRITES))
def test_a_write_is_refused_as_soon_as_the_annotator_is_disabled(client, storage, started, write):
    h, cid, tid = started
    _disable_elsewhere(storage, "alice")
    before = transcripts.counts(storage)
    path, body = WRITES[write](cid, tid)
    r = client.post(path, json=body, headers=h)
    assert r.status_code == 403, r.text
    assert "disabled" in r.json()["error"]
    assert transcripts.counts(storage) == before


def test_review_answers_are_refused_as_soon_as_the_reviewer_is_disabled(
    make_client, settings, storage, started
):
    from dataclasses import replace

    client = make_client(replace(settings, review_fraction=1.0))
    h, cid, tid = started
    ok = client.post(f"/api/v1/turns/{tid}/choice", json={"pick": "a", "strength": 2}, headers=h)
    assert ok.status_code == 200
    assert client.post(f"/api/v1/conversations/{cid}/finish", json={}, headers=h).status_code == 200
    _, token = annotators.add_annotator(storage, "bob")
    hb = {"Authorization": f"Bearer {token}"}
    task = client.get("/api/v1/reviews/next", headers=hb).json()["review"]
    assert task is not None
    _disable_elsewhere(storage, "bob")
    before = transcripts.counts(storage)
    for path, body in (
        (f"/api/v1/reviews/{task['id']}", {"pick": "a", "strength": 2}),
        (f"/api/v1/reviews/{task['id']}/skip", None),
    ):
        r = client.post(path, json=body, headers=hb)
        assert r.status_code == 403 and "disabled" in r.json()["error"], r.text
    assert transcripts.counts(storage) == before
