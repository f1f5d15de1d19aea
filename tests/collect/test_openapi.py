"""/api/v1/openapi.json documents every answer, and the answers are what it says."""

from __future__ import annotations

import pytest
from contract import CHECKED, documented_model
from pydantic import ValidationError

from hhrlhf.collect.web import schemas


def test_every_api_route_documents_its_answer(client):
    spec = client.get("/api/v1/openapi.json").json()
    missing = []
    for path, ops in spec["paths"].items():
        if not path.startswith("/api/v1/"):
            continue
        for method, op in ops.items():
            ok = [c for c, r in op["responses"].items() if c.startswith("2")]
            content = op["responses"][ok[0]].get("content", {}) if ok else {}
            schema = content.get("application/json", {}).get("schema")
            if not (schema and "$ref" in schema) and "text/event-stream" not in content:
                missing.append(f"{method.upper()} {path}")
    assert missing == []
    assert "Conversation" in spec["components"]["schemas"]
    assert "Refusal" in spec["components"]["schemas"]


def test_the_answers_of_a_whole_conversation_are_checked_against_the_documentation(client, admin):
    _, headers, _ = admin
    CHECKED.clear()
    cid = client.post(
        "/api/v1/conversations",
        json={"mode": "helpful", "task_description": "Plan a picnic"},
        headers=headers,
    ).json()["id"]
    turn = client.post(
        f"/api/v1/conversations/{cid}/turns",
        json={"text": "What should I bring?", "wait": True},
        headers=headers,
    ).json()
    client.post(
        f"/api/v1/turns/{turn['id']}/choice", json={"pick": "a", "strength": 3}, headers=headers
    )
    client.get(f"/api/v1/conversations/{cid}", headers=headers)
    client.get("/api/v1/conversations", headers=headers)
    client.post(f"/api/v1/conversations/{cid}/finish", json={}, headers=headers)
    client.get("/api/v1/me", headers=headers)
    client.get("/api/v1/admin/stats?resamples=10", headers=headers)
    checked = set(CHECKED)
    assert {
        ("POST", "/api/v1/conversations"),
        ("POST", "/api/v1/conversations/{conversation_id}/turns"),
        ("POST", "/api/v1/turns/{turn_id}/choice"),
        ("GET", "/api/v1/conversations/{conversation_id}"),
        ("GET", "/api/v1/conversations"),
        ("POST", "/api/v1/conversations/{conversation_id}/finish"),
        ("GET", "/api/v1/me"),
        ("GET", "/api/v1/admin/stats"),
    } <= checked, checked


def test_an_answer_that_drifts_from_its_model_fails_the_check(client, admin):
    _, headers, _ = admin
    r = client.get("/api/v1/conversations", headers=headers)
    route, model = documented_model(client.app, "GET", "/api/v1/conversations", 200)
    assert route == "/api/v1/conversations" and model is schemas.ConversationList
    drifted = {"conversations": [], "next_page": 2}
    with pytest.raises(ValidationError):
        model.model_validate(drifted)
    assert model.model_validate(r.json())


def test_the_loops_routes_answer_without_fastapis_encoder(client, alice, monkeypatch):
    """A turn's routes answer the services' plain data as it is: FastAPI's per-value walk
    over an answer (``jsonable_encoder``, ~90 us for a choice's) is not made, while the
    answers still match their documented models (the test above)."""
    import fastapi.routing

    walked: list[object] = []
    real = fastapi.routing.jsonable_encoder
    monkeypatch.setattr(
        fastapi.routing, "jsonable_encoder", lambda obj, *a, **k: walked.append(obj) or real(obj)
    )
    _, headers, _ = alice
    r = client.post(
        "/api/v1/conversations", json={"mode": "helpful", "task_description": "t"}, headers=headers
    )
    assert r.status_code == 201
    cid = r.json()["id"]
    for wait in (True, False):
        r = client.post(
            f"/api/v1/conversations/{cid}/turns", json={"text": "Hi", "wait": wait}, headers=headers
        )
        assert r.status_code == 201 and r.headers["content-type"] == "application/json"
        tid = r.json()["id"]
        if not wait:
            assert r.json()["status"] == "pending"
            client.get(f"/api/v1/turns/{tid}/stream", headers=headers)
        r = client.post(
            f"/api/v1/turns/{tid}/choice", json={"pick": "b", "strength": 2}, headers=headers
        )
        assert r.status_code == 200 and r.json()["turn"]["pick"] == "b"
    r = client.post(f"/api/v1/conversations/{cid}/finish", json={}, headers=headers)
    assert r.status_code == 200 and r.json()["status"] == "finished"
    assert walked == []
    client.get("/api/v1/conversations", headers=headers)  # not a loop route: walked
    assert walked
