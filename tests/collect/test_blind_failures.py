"""The comparison stays blind when a model fails: a model server's error text names the model
and its address, and nothing an annotator receives (pages, JSON, event streams, headers) holds
a backend's name, model or base URL; the admin still reads the server's words."""

from __future__ import annotations

from dataclasses import replace

import pytest
from logins import login
from openai_server import Script, serve
from test_api import say, sse, start

from hhrlhf.collect.config import BackendConfig
from hhrlhf.collect.domain import STOPPED, annotator_failure
from hhrlhf.collect.services import annotators, conversations

FAILING = "The model `{model}` at {url} is overloaded; try again later."


@pytest.fixture
def servers():
    down = serve(Script(fail=503, fail_message=FAILING))
    up = serve(Script(replies=["Steep green tea for two minutes."]))
    yield down, up
    down.stop()
    up.stop()


def _backends(down, up) -> tuple[BackendConfig, ...]:
    return (
        BackendConfig(
            name="zephyr-backend-down",
            kind="openai-chat",
            base_url=down.base_url,
            model="secret-model-7b",
            timeout=5,
        ),
        BackendConfig(
            name="kestrel-backend-up",
            kind="openai-completions",
            base_url=up.base_url,
            model="other-model-13b",
            timeout=5,
        ),
    )


def _tells(backends) -> set[str]:
    """Every string that would name or locate a backend."""
    out = set()
    for b in backends:
        out |= {b.name, b.model, b.base_url, b.base_url.removesuffix("/v1")}
        out.add(b.base_url.split("//", 1)[1].split("/", 1)[0])  # host:port
    return out


class Recorder:
    """Every response the annotator's session receives: status line, headers and body."""

    def __init__(self, client):
        self.client, self.seen = client, []

    def __call__(self, method: str, url: str, **kw):
        r = self.client.request(method, url, **kw)
        headers = "\n".join(f"{k}: {v}" for k, v in r.headers.items())
        self.seen.append((f"{method} {url}", f"{r.status_code}\n{headers}\n\n{r.text}"))
        return r


def _session(client, h, rec):
    """An annotator's whole session around a failing model: pages, the streamed message,
    the replayed stream, the conversation read back, retries (the last on another backend),
    the pick, a second message answered without streaming and read back after failing."""
    for path in ("/", "/help", "/review", "/api/v1/me", "/api/v1/reviews/next"):
        rec("GET", path, headers=h)
    cid = start(client, h)
    rec("GET", f"/conversations/{cid}")
    first = rec(
        "POST",
        f"/api/v1/conversations/{cid}/turns",
        json={"text": "How long should green tea steep?", "stream": True},
        headers=h,
    )
    tid = int(next(d["id"] for e, d in sse(first.text) if e == "turn"))
    rec("GET", f"/api/v1/turns/{tid}/stream", headers=h)
    rec("GET", f"/api/v1/conversations/{cid}", headers=h)
    rec("GET", "/api/v1/conversations", headers=h)
    for _ in range(3):  # the third retry switches the failing backend away
        assert rec("POST", f"/api/v1/turns/{tid}/retry", headers=h).status_code == 200
        rec("GET", f"/api/v1/turns/{tid}/stream", headers=h)
        rec("GET", f"/api/v1/conversations/{cid}", headers=h)
    picked = rec(
        "POST", f"/api/v1/turns/{tid}/choice", json={"pick": "a", "strength": 2}, headers=h
    )
    assert picked.status_code == 200, picked.text
    second = rec(
        "POST", f"/api/v1/conversations/{cid}/turns", json={"text": "And black tea?"}, headers=h
    )
    assert second.status_code == 201, second.text
    rec("POST", f"/api/v1/turns/{second.json()['id']}/stop", headers=h)
    rec("GET", f"/api/v1/conversations/{cid}", headers=h)
    rec("GET", f"/conversations/{cid}")
    rec("POST", f"/api/v1/conversations/{cid}/finish", json={"comment": "done"}, headers=h)
    return cid, tid


def test_nothing_an_annotator_receives_names_a_failing_backend(
    make_client, settings, servers, storage, admin
):
    backends = _backends(*servers)
    client = make_client(replace(settings, backends=backends, pairing="fixed"))
    _, token = annotators.add_annotator(storage, "ann")
    assert login(client, token).status_code == 303  # the pages' cookie
    h = {"Authorization": f"Bearer {token}"}
    rec = Recorder(client)
    cid, tid = _session(client, h, rec)

    everything = "\n".join(text for _, text in rec.seen)
    # the failure was there, and was told generically
    assert annotator_failure("a", "x") in everything
    assert "the model could not answer" in everything
    for tell in _tells(backends):
        found = [what for what, text in rec.seen if tell in text]
        assert not found, f"{tell!r} reached the annotator in {found}"
    assert "overloaded" not in everything and "HTTP 503" not in everything

    # the admin reads the server's own words: the conversation's JSON and /admin/backends
    _, ah, admin_token = admin
    stored = client.get(f"/api/v1/conversations/{cid}", headers=ah).json()
    errors = [c["error"] for t in stored["turns"] for c in t["candidates"] if c.get("error")]
    assert any("`secret-model-7b`" in e and "overloaded" in e for e in errors), errors
    client.cookies.clear()
    assert login(client, admin_token).status_code == 303
    page = client.get("/admin/backends").text
    assert "The model `secret-model-7b` at" in page and "is overloaded" in page


def test_the_one_message_an_annotator_reads_for_a_failure():
    words = "The model `secret-model-7b` does not exist. HTTP 404"
    assert annotator_failure("b", words) == "Response B: the model could not answer. Retry."
    assert annotator_failure("a", None) == "Response A: the model could not answer. Retry."
    assert annotator_failure("a", STOPPED) == f"Response A was {STOPPED}. Retry."


@pytest.mark.parametrize("coin", [True, False])
def test_a_retry_on_another_backend_draws_the_sides_again(
    make_client, settings, servers, storage, alice, coin
):
    """A backend switched on Retry lands on A or B by the draw (here forced), and the response
    already complete moves with it: the side that failed is not a tell."""
    backends = _backends(*servers)
    client = make_client(replace(settings, backends=backends, pairing="fixed"))
    who, h, _ = alice
    cid = start(client, h)
    t = say(client, h, cid, wait=True)
    assert [c["slot"] for c in t["candidates"]] == ["b"]  # A (the failing backend) failed
    for _ in range(2):  # A's backend has failed it twice: the next retry switches
        conversations.retry_turn(storage, who, t["id"])
        sse(client.get(f"/api/v1/turns/{t['id']}/stream", headers=h).text)
    with storage.read() as s:
        from sqlalchemy import select

        from hhrlhf.collect.db.models import Candidate

        rows = s.execute(
            select(Candidate.slot, Candidate.status, Candidate.text).where(
                Candidate.turn_id == t["id"]
            )
        ).all()
    before = {slot: (status, text) for slot, status, text in rows}
    assert before["a"][0] == "failed" and before["b"][0] == "ready"
    conversations.retry_turn(
        storage,
        who,
        t["id"],
        switch_after=2,
        replace=lambda failed, other: "kestrel-backend-up",
        swap_sides=lambda: coin,
    )
    state = client.get(f"/api/v1/conversations/{cid}", headers=h).json()
    after = {c["slot"]: (c["status"], c["text"]) for c in state["turns"][0]["candidates"]}
    kept = before["b"]
    if coin:
        assert after == {"a": kept, "b": ("pending", None)}
    else:
        assert after == {"a": ("pending", None), "b": kept}
