"""The JSON API in process: every route, authorisation, CSRF, limits, choices, failures and retries."""

from __future__ import annotations

from dataclasses import replace

import orjson
import pytest
from logins import login, session_cookie
from openai_server import openai_backend

from hhrlhf.collect.domain import STOPPED
from hhrlhf.collect.services import annotators, choices, leases, transcripts
from hhrlhf.collect.web.app import SECURITY_HEADERS


def start(client, headers, mode="helpful", task="Learn to keep tomatoes healthy"):
    r = client.post(
        "/api/v1/conversations", json={"mode": mode, "task_description": task}, headers=headers
    )
    assert r.status_code == 201, r.text
    return r.json()["id"]


def say(client, headers, cid, text="How often should I water tomatoes?", **kw):
    r = client.post(
        f"/api/v1/conversations/{cid}/turns", json={"text": text, **kw}, headers=headers
    )
    assert r.status_code == 201, r.text
    return r.json()


def choose(client, headers, turn_id, **body):
    return client.post(f"/api/v1/turns/{turn_id}/choice", json=body, headers=headers)


def sse(text: str) -> list[tuple[str, dict]]:
    out = []
    for block in text.strip().split("\n\n"):
        if block.startswith(":"):  # a keep-alive comment
            continue
        lines = dict(line.split(": ", 1) for line in block.split("\n"))
        out.append((lines["event"], orjson.loads(lines["data"])))
    return out


def test_health_needs_no_login_and_carries_security_headers(client):
    r = client.get("/api/v1/health")
    assert r.status_code == 200 and r.json() == {"status": "ok"}
    for k, v in SECURITY_HEADERS.items():
        assert r.headers[k] == v
    assert "script-src 'self'" in r.headers["content-security-policy"]


def test_errors_are_json_with_headers(client):
    r = client.get("/api/v1/nope")
    assert r.status_code == 404 and "error" in r.json()
    assert r.headers["x-content-type-options"] == "nosniff"


def test_a_three_turn_conversation_continues_with_the_pick(client, alice, storage):
    _, h, _ = alice
    cid = start(client, h)
    t0 = say(client, h, cid)
    assert [c["slot"] for c in t0["candidates"]] == ["a", "b"]
    assert all(c["text"] and c["text"] == c["text"].strip() for c in t0["candidates"])
    # backend names are not shown to annotators
    assert "backend" not in orjson.dumps(t0).decode()
    r = choose(client, h, t0["id"], pick="b", strength=3)
    assert r.status_code == 200
    assert r.json()["turn"]["continued"] == t0["candidates"][1]["text"]
    t1 = say(client, h, cid, "And how much sun?")
    assert choose(client, h, t1["id"], pick="a", strength=1).status_code == 200
    t2 = say(client, h, cid, "Thanks!")
    assert choose(client, h, t2["id"], pick="a", strength=4).status_code == 200
    conv = client.get(f"/api/v1/conversations/{cid}", headers=h).json()
    assert conv["strength_points"] == 4
    assert [t["pick"] for t in conv["turns"]] == ["b", "a", "a"]
    assert [t["strength"] for t in conv["turns"]] == [3, 1, 4]
    assert conv["turns"][1]["human"] == "And how much sun?"
    # the stored prefix of turn 2 is the HH transcript with the continued responses
    export = list(transcripts.iter_conversations_for_export(storage))[0]
    assert export.turns[2].prefix == (
        f"\n\nHuman: How often should I water tomatoes?\n\nAssistant: {t0['candidates'][1]['text']}"
        f"\n\nHuman: And how much sun?\n\nAssistant: {t1['candidates'][0]['text']}"
        "\n\nHuman: Thanks!\n\nAssistant:"
    )
    listed = client.get("/api/v1/conversations", headers=h).json()["conversations"]
    assert [(c["id"], c["turns"], c["status"]) for c in listed] == [(cid, 3, "open")]
    r = client.post(f"/api/v1/conversations/{cid}/finish", json={"comment": "fine"}, headers=h)
    assert r.status_code == 200 and r.json()["status"] == "finished"
    conv = client.get(f"/api/v1/conversations/{cid}", headers=h).json()
    assert conv["comment"] == "fine"


def test_choice_is_idempotent_and_a_different_one_is_409(client, alice, storage):
    _, h, _ = alice
    cid = start(client, h)
    t = say(client, h, cid)
    first = choose(client, h, t["id"], pick="a", strength=2, request_id="r1")
    assert first.status_code == 200
    # same request id (even with another body: a resend of the same click) -> same answer
    again = choose(client, h, t["id"], pick="a", strength=2, request_id="r1")
    assert again.status_code == 200 and again.json() == first.json()
    # identical body without a request id -> same answer
    assert choose(client, h, t["id"], pick="a", strength=2).json() == first.json()
    r = choose(client, h, t["id"], pick="b", strength=2)
    assert r.status_code == 409 and "already has a different choice" in r.json()["error"]
    assert transcripts.counts(storage)["comparisons"] == 1


def test_writing_before_choosing_is_409(client, alice):
    _, h, _ = alice
    cid = start(client, h)
    say(client, h, cid)
    r = client.post(f"/api/v1/conversations/{cid}/turns", json={"text": "again"}, headers=h)
    assert r.status_code == 409 and "pick a response" in r.json()["error"]


def test_edit_gives_two_comparisons_and_the_conversation_continues_with_it(client, alice, storage):
    _, h, _ = alice
    cid = start(client, h)
    t = say(client, h, cid)
    r = choose(client, h, t["id"], pick="a", strength=2, edit="  Water deeply, twice a week.  ")
    assert r.status_code == 200
    turn = r.json()["turn"]
    assert turn["edit"] == "Water deeply, twice a week."
    assert turn["continued"] == "Water deeply, twice a week."
    comps = list(transcripts.iter_conversations_for_export(storage))[0].turns[0].comparisons
    assert [(c.kind, c.chosen_text, c.rejected_text) for c in comps] == [
        ("pick", t["candidates"][0]["text"], t["candidates"][1]["text"]),
        ("edit", "Water deeply, twice a week.", t["candidates"][0]["text"]),
    ]
    t1 = say(client, h, cid, "More?")
    prefix = list(transcripts.iter_conversations_for_export(storage))[0].turns[1].prefix
    assert "Assistant: Water deeply, twice a week.\n\nHuman: More?" in prefix
    assert t1["index"] == 1


@pytest.mark.parametrize(
    "body, status",
    [
        ({"pick": "c", "strength": 1}, 422),
        ({"pick": "a", "strength": 0}, 422),
        ({"pick": "a", "strength": 5}, 422),
        ({"pick": "a", "strength": "2"}, 422),
        ({"pick": "a", "strength": 2, "edit": "   "}, 422),
        ({"pick": "a", "strength": 2, "extra": 1}, 422),
    ],
)
def test_bad_choices_are_422(client, alice, body, status):
    _, h, _ = alice
    t = say(client, h, start(client, h))
    r = choose(client, h, t["id"], **body)
    assert r.status_code == status and r.json()["error"]


def test_choice_before_the_responses_are_ready_is_409(client, alice):
    _, h, _ = alice
    t = say(client, h, start(client, h), wait=False)
    assert t["status"] == "pending" and t["candidates"] == []
    r = choose(client, h, t["id"], pick="a", strength=2)
    assert r.status_code == 409 and "not ready" in r.json()["error"]


def test_stream_generates_then_replays(client, alice):
    _, h, _ = alice
    t = say(client, h, start(client, h), wait=False)
    r = client.get(f"/api/v1/turns/{t['id']}/stream", headers=h)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/event-stream")
    assert r.headers["x-accel-buffering"] == "no"
    assert "default-src 'self'" in r.headers["content-security-policy"]
    events = sse(r.text)
    assert events[-1] == ("end", {"status": "ready"})
    done = {d["slot"]: d for e, d in events if e == "done"}
    assert set(done) == {"a", "b"}
    for slot in "ab":
        streamed = "".join(d["text"] for e, d in events if e == "delta" and d["slot"] == slot)
        assert streamed.strip() == done[slot]["text"]
    replay = sse(client.get(f"/api/v1/turns/{t['id']}/stream", headers=h).text)
    assert [e for e, _ in replay] == ["done", "done", "end"]
    assert {d["slot"]: d["text"] for e, d in replay if e == "done"} == {
        s: d["text"] for s, d in done.items()
    }
    assert choose(client, h, t["id"], pick="b", strength=2).status_code == 200


def test_a_message_sent_with_stream_is_answered_as_its_event_stream(client, alice, storage):
    """``"stream": true`` (the page's way): the message's own answer is the turn's event
    stream, from a ``turn`` event naming it to ``end``; the turn is stored as any other."""
    _, h, _ = alice
    cid = start(client, h)
    r = client.post(
        f"/api/v1/conversations/{cid}/turns",
        json={"text": "How often should I water tomatoes?", "stream": True},
        headers=h,
    )
    assert r.status_code == 201
    assert r.headers["content-type"].startswith("text/event-stream")
    assert r.headers["x-accel-buffering"] == "no"
    events = sse(r.text)
    name, head = events[0]
    assert name == "turn" and head["index"] == 0 and head["status"] == "generating"
    assert events[-1] == ("end", {"status": "ready"})
    done = {d["slot"]: d for e, d in events if e == "done"}
    assert set(done) == {"a", "b"} and all(d["html"].startswith("<") for d in done.values())
    for slot in "ab":
        streamed = "".join(d["text"] for e, d in events if e == "delta" and d["slot"] == slot)
        assert streamed.strip() == done[slot]["text"]
    # stored as streamed: the conversation, a replay, then a choice and the next message
    turn = client.get(f"/api/v1/conversations/{cid}", headers=h).json()["turns"][0]
    assert turn["id"] == head["id"] and turn["status"] == "ready"
    assert {c["slot"]: c["text"] for c in turn["candidates"]} == {
        s: d["text"] for s, d in done.items()
    }
    replay = sse(client.get(f"/api/v1/turns/{head['id']}/stream", headers=h).text)
    assert [e for e, _ in replay] == ["done", "done", "end"]
    assert choose(client, h, head["id"], pick="a", strength=3).status_code == 200
    assert say(client, h, cid, "And in a heat wave?")["status"] == "ready"
    assert transcripts.counts(storage)["comparisons"] == 1


def test_stream_refusals_come_before_the_stream_as_json(client, alice, storage):
    """What refuses a message refuses it as JSON, before any event: ``stream`` with
    ``"wait": false`` (which contradicts it), a message while one is unanswered, and
    another's conversation. Nothing is stored."""
    _, h, _ = alice
    cid = start(client, h)
    url = f"/api/v1/conversations/{cid}/turns"
    r = client.post(url, json={"text": "Hello", "stream": True, "wait": False}, headers=h)
    assert r.status_code == 422 and '"wait": false' in r.json()["error"]
    assert client.get(f"/api/v1/conversations/{cid}", headers=h).json()["turns"] == []
    say(client, h, cid, "First")
    r = client.post(url, json={"text": "Second", "stream": True}, headers=h)
    assert r.status_code == 409 and r.headers["content-type"] == "application/json"
    assert "error" in r.json()
    r = client.post(url, json={"text": "Hi", "stream": "yes"}, headers=h)
    assert r.status_code == 422 and "stream" in r.json()["error"]
    assert len(client.get(f"/api/v1/conversations/{cid}", headers=h).json()["turns"]) == 1


def test_stop_reaches_a_turn_another_worker_is_writing(client, alice, storage):
    """``POST /turns/{id}/stop`` on a worker not writing the turn: asked through the database
    (``here``: false; the writer reads it and keeps what it wrote: tests/collect/test_stop.py).
    Here the writer is gone: once its lease ran out, the turn's stream stores its responses
    as stopped, free to retry. A turn not being written is not stopped."""
    import time

    _, h, _ = alice
    cid = start(client, h)
    t = say(client, h, cid, wait=False)
    stop = f"/api/v1/turns/{t['id']}/stop"
    assert client.post(stop, headers=h).json() == {"stopped": False, "here": False}  # pending
    assert leases.acquire_lease(storage, t["id"], "elsewhere:1:abc", 0.3) is not None
    assert client.post(stop, headers=h).json() == {"stopped": True, "here": False}
    assert leases.turn_state(storage, t["id"]).status == "generating"  # asked, not yet done
    time.sleep(0.4)  # the writer never read it: its lease runs out
    events = sse(client.get(f"/api/v1/turns/{t['id']}/stream", headers=h).text)
    assert events[-1] == ("end", {"status": "failed"})
    state = leases.turn_state(storage, t["id"])
    assert state.status == "failed" and state.lease_owner is None
    assert {c.error for c in state.candidates} == {STOPPED}
    conv = client.get(f"/api/v1/conversations/{cid}", headers=h)
    assert [c["error"] for c in conv.json()["turns"][0]["candidates"]] == [
        "Response A was stopped by the annotator. Retry.",
        "Response B was stopped by the annotator. Retry.",
    ]
    assert client.post(stop, headers=h).json() == {"stopped": False, "here": False}
    assert client.post(f"/api/v1/turns/{t['id']}/retry", headers=h).json() == {"status": "pending"}
    events = sse(client.get(f"/api/v1/turns/{t['id']}/stream", headers=h).text)
    assert events[-1] == ("end", {"status": "ready"})


def _openai_settings(settings, server, **kw):
    return replace(
        settings,
        backends=(
            openai_backend("m1", "openai-chat", server.base_url, **kw),
            openai_backend("m2", "openai-completions", server.base_url, **kw),
        ),
    )


def test_backend_failure_keeps_the_turn_and_retry_recovers(
    make_client, settings, model_server, alice, storage
):
    client = make_client(_openai_settings(settings, model_server))
    _, h, _ = alice
    cid = start(client, h)
    model_server.script.fail = 503
    t = say(client, h, cid, wait=False)
    events = sse(client.get(f"/api/v1/turns/{t['id']}/stream", headers=h).text)
    errors = [d for e, d in events if e == "error"]
    assert {d["slot"] for d in errors} == {"a", "b"}
    assert all("the model could not answer" in d["message"] for d in errors)
    assert all("Retry" in d["message"] for d in errors)
    assert "m1" not in orjson.dumps(errors).decode()  # no backend names for annotators
    assert events[-1] == ("end", {"status": "failed"})
    # no half comparison: choosing is refused, nothing stored
    assert choose(client, h, t["id"], pick="a", strength=2).status_code == 409
    assert transcripts.counts(storage)["comparisons"] == 0
    # the turn is not lost
    conv = client.get(f"/api/v1/conversations/{cid}", headers=h).json()
    assert conv["turns"][0]["status"] == "failed" and conv["turns"][0]["human"]
    model_server.script.fail = None
    model_server.script.replies = ["First answer.", "Second answer."]
    r = client.post(f"/api/v1/turns/{t['id']}/retry", headers=h)
    assert r.status_code == 200 and r.json() == {"status": "pending"}
    events = sse(client.get(f"/api/v1/turns/{t['id']}/stream", headers=h).text)
    assert events[-1] == ("end", {"status": "ready"})
    texts = sorted(d["text"] for e, d in events if e == "done")
    assert texts == ["First answer.", "Second answer."]
    assert choose(client, h, t["id"], pick="a", strength=2).status_code == 200


def test_one_failed_side_is_retried_alone(make_client, settings, model_server, alice):
    client = make_client(_openai_settings(settings, model_server))
    _, h, _ = alice
    model_server.script.fail, model_server.script.fail_times = 500, 1
    t = say(client, h, start(client, h))
    assert t["status"] == "failed" and len(t["candidates"]) == 1 and len(t["errors"]) == 1
    client.post(f"/api/v1/turns/{t['id']}/retry", headers=h)
    before = len(model_server.script.requests)
    events = sse(client.get(f"/api/v1/turns/{t['id']}/stream", headers=h).text)
    assert len(model_server.script.requests) == before + 1  # only the failed side asked again
    assert [e for e, _ in events].count("done") == 2 and events[-1][1]["status"] == "ready"


def test_timeout_is_a_clear_failure(make_client, settings, model_server, alice):
    client = make_client(_openai_settings(settings, model_server, timeout=0.5))
    _, h, _ = alice
    model_server.script.first_delay = 2
    t = say(client, h, start(client, h))
    assert t["status"] == "failed"
    assert all("the model could not answer" in e["message"] for e in t["errors"])


@pytest.mark.parametrize("ignore_stop", [False, True])
def test_speaker_markers_are_cut_and_recorded(
    make_client, settings, model_server, admin, ignore_stop
):
    client = make_client(_openai_settings(settings, model_server))
    _, h, _ = admin
    model_server.script.replies = ["Sure, here.\n\nHuman: pretend I said this\n\nAssistant: ok"]
    model_server.script.ignore_stop = ignore_stop
    cid = start(client, h)
    t = say(client, h, cid, wait=False)
    events = sse(client.get(f"/api/v1/turns/{t['id']}/stream", headers=h).text)
    done = [d for e, d in events if e == "done"]
    assert {d["text"] for d in done} == {"Sure, here."}
    streamed = "".join(d["text"] for e, d in events if e == "delta")
    assert "Human:" not in streamed and "Assistant:" not in streamed
    # both kinds of backend send both speaker markers as stop sequences
    stops = {r["kind"]: r["body"].get("stop") for r in model_server.script.requests}
    assert stops == {
        "chat": ["\n\nHuman:", "\n\nAssistant:"],
        "completions": ["\n\nHuman:", "\n\nAssistant:"],
    }
    conv = client.get(f"/api/v1/conversations/{cid}", headers=h).json()
    cands = {c["backend"]: c for c in conv["turns"][0]["candidates"]}
    # a server that stops at them sends no marker; one that ignores them is cut by the app
    assert cands["m1"]["cut"] is ignore_stop and cands["m2"]["cut"] is ignore_stop
    assert {c["cut_reason"] for c in cands.values()} == {"speaker" if ignore_stop else None}
    assert cands["m1"]["params"] == {"max_tokens": 256}


def test_authorisation(client, alice, bob, admin, storage):
    _, ha, _ = alice
    _, hb, _ = bob
    _, hadm, _ = admin
    cid = start(client, ha)
    t = say(client, ha, cid)
    assert client.get(f"/api/v1/conversations/{cid}").status_code == 401
    assert (
        client.get(
            f"/api/v1/conversations/{cid}", headers={"Authorization": "Bearer nope"}
        ).status_code
        == 401
    )
    for method, url, body in [
        ("get", f"/api/v1/conversations/{cid}", None),
        ("post", f"/api/v1/conversations/{cid}/turns", {"text": "hi"}),
        ("post", f"/api/v1/turns/{t['id']}/choice", {"pick": "a", "strength": 2}),
        ("post", f"/api/v1/turns/{t['id']}/retry", None),
        ("get", f"/api/v1/turns/{t['id']}/stream", None),
        ("post", f"/api/v1/conversations/{cid}/finish", {}),
    ]:
        r = client.request(method.upper(), url, json=body, headers=hb)
        assert r.status_code == 404, (url, r.status_code)
    assert client.get("/api/v1/conversations", headers=hb).json() == {"conversations": []}
    # admins see everyone's, with backend names
    conv = client.get(f"/api/v1/conversations/{cid}", headers=hadm).json()
    assert conv["turns"][0]["candidates"][0]["backend"] in ("demo-a", "demo-b")
    listed = client.get("/api/v1/conversations", headers=hadm).json()["conversations"]
    assert [c["annotator"] for c in listed] == ["alice"]
    # but do not write in them
    r = choose(client, hadm, t["id"], pick="a", strength=2)
    assert r.status_code == 403
    annotators.set_disabled(storage, "alice")
    r = client.get(f"/api/v1/conversations/{cid}", headers=ha)
    assert r.status_code == 403 and "disabled" in r.json()["error"]


def test_me_and_cookie_login_with_csrf_and_origin(client, alice):
    _, h, token = alice
    assert client.get("/api/v1/me", headers=h).json()["name"] == "alice"
    r = login(client, token)
    assert r.status_code == 303 and r.headers["location"] == "/"
    cookie = session_cookie(r)
    assert "hh_session=" in cookie and "HttpOnly" in cookie and "samesite=lax" in cookie.lower()
    assert "Secure" not in cookie  # plain http
    me = client.get("/api/v1/me").json()
    assert me["name"] == "alice" and me["role"] == "annotator" and len(me["csrf_token"]) >= 32
    body = {"mode": "helpful", "task_description": "x"}
    r = client.post("/api/v1/conversations", json=body)
    assert r.status_code == 403 and "X-CSRF-Token" in r.json()["error"]
    r = client.post("/api/v1/conversations", json=body, headers={"X-CSRF-Token": "wrong"})
    assert r.status_code == 403
    good = {"X-CSRF-Token": me["csrf_token"]}
    r = client.post(
        "/api/v1/conversations", json=body, headers={**good, "Origin": "http://evil.example"}
    )
    assert r.status_code == 403 and "Origin" in r.json()["error"]
    r = client.post(
        "/api/v1/conversations", json=body, headers={**good, "Origin": "http://testserver"}
    )
    assert r.status_code == 201
    assert len(client.get("/api/v1/conversations").json()["conversations"]) == 1
    # logout ends the session
    assert client.post("/logout", headers=good).status_code == 200
    client.cookies.clear()
    assert client.get("/api/v1/me").status_code == 401


def test_login_with_a_bad_token_is_refused(client, storage):
    r = client.get("/login?token=nope", follow_redirects=False)
    assert r.status_code == 401 and "hh_session" not in r.headers.get("set-cookie", "")
    assert client.get("/login", follow_redirects=False).status_code == 401
    _, token = annotators.add_annotator(storage, "gone")
    annotators.set_disabled(storage, "gone")
    assert login(client, token).status_code == 403


def test_size_limits(client, alice, settings):
    _, h, _ = alice
    r = client.post(
        "/api/v1/conversations",
        json={"mode": "helpful", "task_description": "x" * (settings.max_task_chars + 1)},
        headers=h,
    )
    assert r.status_code == 413 and "task_description is too long" in r.json()["error"]
    cid = start(client, h)
    r = client.post(
        f"/api/v1/conversations/{cid}/turns",
        json={"text": "y" * (settings.max_message_chars + 1)},
        headers=h,
    )
    assert r.status_code == 413 and "limit is 20000" in r.json()["error"]
    t = say(client, h, cid)
    r = choose(client, h, t["id"], pick="a", strength=2, edit="z" * (settings.max_edit_chars + 1))
    assert r.status_code == 413
    r = client.post(
        f"/api/v1/conversations/{cid}/finish",
        json={"comment": "c" * (settings.max_comment_chars + 1)},
        headers=h,
    )
    assert r.status_code == 413
    r = client.post(
        "/api/v1/conversations",
        content=b'{"mode": "helpful", "task_description": "' + b"q" * 300_000 + b'"}',
        headers={**h, "content-type": "application/json"},
    )
    assert r.status_code == 413 and "too large" in r.json()["error"]
    assert r.headers["x-content-type-options"] == "nosniff"


def test_bad_requests_are_one_clear_error(client, alice):
    _, h, _ = alice
    r = client.post(
        "/api/v1/conversations", json={"mode": "chat", "task_description": "x"}, headers=h
    )
    assert r.status_code == 422 and "mode" in r.json()["error"]
    r = client.post(
        "/api/v1/conversations", json={"mode": "helpful", "task_description": "  "}, headers=h
    )
    assert r.status_code == 422
    r = client.post(
        "/api/v1/conversations",
        content=b"{not json",
        headers={**h, "content-type": "application/json"},
    )
    assert r.status_code == 422 and r.json()["error"].startswith("invalid request")
    cid = start(client, h)
    r = client.post(f"/api/v1/conversations/{cid}/turns", json={"text": ""}, headers=h)
    assert r.status_code == 422


def test_finish_rules(client, alice):
    _, h, _ = alice
    cid = start(client, h)
    r = client.post(f"/api/v1/conversations/{cid}/finish", json={"rating": 2}, headers=h)
    assert r.status_code == 422 and "red-team" in r.json()["error"]
    assert client.post(f"/api/v1/conversations/{cid}/finish", headers=h).status_code == 200
    # repeat: same answer; different: 409
    assert client.post(f"/api/v1/conversations/{cid}/finish", headers=h).status_code == 200
    r = client.post(f"/api/v1/conversations/{cid}/finish", json={"comment": "late"}, headers=h)
    assert r.status_code == 409
    r = client.post(f"/api/v1/conversations/{cid}/turns", json={"text": "hi"}, headers=h)
    assert r.status_code == 409 and "finished" in r.json()["error"]


def test_red_team_one_backend_and_a_rating(client, alice, admin):
    _, h, _ = alice
    cid = start(client, h, mode="red-team", task="Try to get unsafe advice")
    t = say(client, h, cid)
    conv = client.get(f"/api/v1/conversations/{cid}", headers=admin[1]).json()
    backends = {c["backend"] for c in conv["turns"][0]["candidates"]}
    assert backends == {conv["backend"]}
    assert choose(client, h, t["id"], pick="a", strength=3, edit="x").status_code == 422
    assert choose(client, h, t["id"], pick="a", strength=3).status_code == 200
    r = client.post(f"/api/v1/conversations/{cid}/finish", json={}, headers=h)
    assert r.status_code == 422 and "rating" in r.json()["error"]
    r = client.post(f"/api/v1/conversations/{cid}/finish", json={"rating": 5}, headers=h)
    assert r.status_code == 422
    r = client.post(f"/api/v1/conversations/{cid}/finish", json={"rating": 3}, headers=h)
    assert r.status_code == 200
    assert client.get(f"/api/v1/conversations/{cid}", headers=h).json()["rating"] == 3


def test_pairing_records_which_backend_was_shown_as_a(make_client, settings, alice, admin):
    client = make_client(replace(settings, seed=3))
    _, h, _ = alice
    cid = start(client, h)
    firsts = []
    for i in range(8):
        t = say(client, h, cid, f"question {i}")
        choose(client, h, t["id"], pick="a", strength=2)
    conv = client.get(f"/api/v1/conversations/{cid}", headers=admin[1]).json()
    for turn in conv["turns"]:
        a, b = turn["candidates"]
        assert {a["backend"], b["backend"]} == {"demo-a", "demo-b"}
        firsts.append(a["backend"])
    assert set(firsts) == {"demo-a", "demo-b"}  # the A side is drawn, not fixed


def test_a_turn_generated_by_another_worker_is_awaited_then_replayed(client, alice, storage):
    import threading
    import time

    _, h, _ = alice
    t = say(client, h, start(client, h), wait=False)
    # another worker holds the lease and finishes a little later
    assert leases.acquire_lease(storage, t["id"], "other-worker", 60) is not None

    def other_worker():
        time.sleep(0.5)
        answers = {slot: {"text": f"from {slot}", "raw_text": f"from {slot}"} for slot in "ab"}
        leases.finish_generation(storage, t["id"], "other-worker", answers)

    thread = threading.Thread(target=other_worker)
    thread.start()
    events = sse(client.get(f"/api/v1/turns/{t['id']}/stream", headers=h).text)
    thread.join()
    a = {"slot": "a", "text": "from a", "cut": False, "cut_reason": None}
    b = {"slot": "b", "text": "from b", "cut": False, "cut_reason": None}
    # each finished text comes with its sanitised rendering for the page
    assert events == [
        ("done", {**a, "html": "<p>from a</p>\n"}),
        ("done", {**b, "html": "<p>from b</p>\n"}),
        ("end", {"status": "ready"}),
    ]


def test_a_choice_the_database_cannot_store_is_an_error_not_a_success(
    client, alice, storage, monkeypatch
):
    import sqlite3

    from sqlalchemy.exc import OperationalError

    _, h, _ = alice
    t = say(client, h, start(client, h))

    def failing(*a, **kw):
        raise OperationalError("COMMIT", {}, sqlite3.OperationalError("database or disk is full"))

    with monkeypatch.context() as m:
        m.setattr(choices, "record_choice", failing)
        r = choose(client, h, t["id"], pick="a", strength=2)
    assert r.status_code == 503
    assert r.json() == {
        "error": "the database could not store this (database or disk is full); nothing was saved, try again"
    }
    assert transcripts.counts(storage)["comparisons"] == 0
    assert choose(client, h, t["id"], pick="a", strength=2).status_code == 200


def test_a_quiet_stream_gets_keep_alive_comments(
    make_client, settings, model_server, alice, monkeypatch
):
    from hhrlhf.collect.web import stream

    monkeypatch.setattr(stream, "KEEPALIVE_SECONDS", 0.1)
    client = make_client(_openai_settings(settings, model_server))
    _, h, _ = alice
    model_server.script.first_delay = 0.6
    t = say(client, h, start(client, h), wait=False)
    r = client.get(f"/api/v1/turns/{t['id']}/stream", headers=h)
    assert ": keep-alive\n\n" in r.text
    assert sse(r.text)[-1] == ("end", {"status": "ready"})


def _stream_writes(app, path_end="/stream"):
    """``(asgi app, writes)``: the app, recording each body write of an event stream."""
    writes: list[bytes] = []

    async def counting(scope, receive, send):
        async def counted(message):
            if message["type"] == "http.response.body" and message.get("body"):
                if scope["path"].endswith(path_end):
                    writes.append(message["body"])
            await send(message)

        await app(scope, receive, counted)

    return counting, writes


def test_a_slow_models_words_go_out_a_few_times_a_second(storage, settings, alice):
    """A model writing a word every 10 ms: the stream waits ``STREAM_LINGER`` after a word for
    more, so it writes a few times a second, not once per word; its last events are not
    held back (the turn ends as soon as the run does)."""
    import time

    from fastapi.testclient import TestClient

    from hhrlhf.collect.web import stream
    from hhrlhf.collect.web.app import create_app

    slow = replace(
        settings, backends=tuple(replace(b, token_delay=0.01) for b in settings.backends)
    )
    app, writes = _stream_writes(create_app(slow, storage=storage))
    _, h, _ = alice
    with TestClient(app, base_url="http://testserver") as client:
        t = say(client, h, start(client, h), wait=False)
        t0 = time.monotonic()
        events = sse(client.get(f"/api/v1/turns/{t['id']}/stream", headers=h).text)
        took = time.monotonic() - t0
    assert events[-1] == ("end", {"status": "ready"})
    words = max(len(d["text"].split()) for e, d in events if e == "done")
    assert words >= 20  # each at least 10 ms apart
    # one write per linger, give or take the first and the last (not one per word)
    assert len(writes) <= took / stream.STREAM_LINGER + 3, (len(writes), took)
    assert len(writes) < words / 2


def test_a_lingering_listener_gets_the_runs_end_at_once():
    """A listener waiting for more words gets the run's last events as soon as it ends, not
    when its wait would have run out."""
    import asyncio

    from hhrlhf.collect.generation.runner import TurnRun

    async def go():
        run = TurnRun(1)
        got: list[list[str]] = []

        async def listen():
            async for batch in run.batches(linger=30.0):
                got.append([e.name for e in batch])

        listener = asyncio.create_task(listen())
        run.emit("delta", {"slot": "a", "text": "one "})
        await asyncio.sleep(0.05)  # the first word is out; the listener waits for the next
        run.emit("delta", {"slot": "a", "text": "two"})
        await asyncio.sleep(0.05)
        assert got == [["delta"]]  # the second word lingers
        run.emit("done", {"slot": "a", "text": "one two", "cut": False, "cut_reason": None})
        run.finish("ready")
        await asyncio.wait_for(listener, 1.0)
        assert got == [["delta"], ["delta", "done", "end"]]

    asyncio.run(go())


def test_a_burst_of_events_goes_out_in_one_write(storage, settings, alice):
    """Events queued while the stream was writing go out together: a fast model's (or the
    demo's) words are a few writes to the socket, not one each, and a response's words in
    a write are one ``delta`` event."""
    from fastapi.testclient import TestClient

    from hhrlhf.collect.web.app import create_app

    counting, writes = _stream_writes(create_app(settings, storage=storage))
    _, h, _ = alice
    with TestClient(counting, base_url="http://testserver") as client:
        t = say(client, h, start(client, h), wait=False)
        events = sse(client.get(f"/api/v1/turns/{t['id']}/stream", headers=h).text)
    assert events[-1] == ("end", {"status": "ready"})
    assert sse(b"".join(writes).decode()) == events  # the writes are the stream
    done = {d["slot"]: d["text"] for e, d in events if e == "done"}
    for slot in "ab":  # every word, in order, and the words of a write in one event
        words = "".join(d["text"] for e, d in events if e == "delta" and d["slot"] == slot)
        assert words.strip() == done[slot] and len(done[slot].split()) >= 20
    deltas = sum(e == "delta" for e, _ in events)
    assert len(writes) <= 4 and deltas <= 2 * len(writes), (len(writes), deltas)
