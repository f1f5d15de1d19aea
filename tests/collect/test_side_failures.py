"""A side that fails is told at once: its ``error`` event goes out when it fails, while the
other side is still written (not when both are done)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

import pytest
from openai_server import Script, openai_backend, serve

pytest.importorskip("fastapi")
pytest.importorskip("openai")

from hhrlhf.collect.generation.runner import Generator  # noqa: E402
from hhrlhf.collect.services import annotators, conversations, leases  # noqa: E402


@pytest.fixture
def slow_and_failing():
    slow = serve(Script(replies=["word " * 30], chunk_delay=0.1))
    failing = serve(Script(fail=503, fail_message="model `secret-model` overloaded"))
    yield slow, failing
    slow.stop()
    failing.stop()


def test_a_failed_side_is_sent_while_the_other_is_written(storage, settings, slow_and_failing):
    slow, failing = slow_and_failing
    backends = (
        openai_backend("m1", "openai-chat", slow.base_url),
        openai_backend("m2", "openai-chat", failing.base_url),
    )
    gen = Generator(storage, replace(settings, backends=backends, pairing="fixed"))
    who, _ = annotators.add_annotator(storage, "alice")
    cid = conversations.create_conversation(storage, who, "helpful", "task").id
    tid = conversations.create_turn(storage, who, cid, "hello", ("m1", "m2")).id

    async def go():
        _, run = await gen.open(tid)
        assert run is not None
        t0 = time.monotonic()
        while not any(e.name == "error" for e in run.events):
            assert not run.done, "the failure came only with the end"
            await asyncio.sleep(0.02)
        failed_after = time.monotonic() - t0
        status = await run.wait()
        await gen.shutdown()
        return status, failed_after, run.events

    status, failed_after, events = asyncio.run(go())
    names = [(e.name, e.data.get("slot")) for e in events]
    errors = [i for i, n in enumerate(names) if n == ("error", "b")]
    a_words = [i for i, n in enumerate(names) if n == ("delta", "a")]
    assert len(errors) == 1  # sent once, not again at the end
    assert errors[0] < a_words[-1]  # A was still being written
    assert failed_after < 1.5  # A takes 3 s
    assert names[-2:] == [("done", "a"), ("end", None)] and status == "failed"
    message = events[errors[0]].data["message"]
    assert message == "Response B: the model could not answer. Retry."
    state = leases.turn_state(storage, tid)
    assert {c.slot: c.status for c in state.candidates} == {"a": "ready", "b": "failed"}


def test_a_message_whose_every_response_failed_is_withdrawn_and_given_back(
    make_client, settings, alice, storage
):
    from test_api import say, start

    failing = serve(Script(fail=400, fail_message="prompt too long for the context"))
    try:
        backends = tuple(
            openai_backend(n, "openai-chat", failing.base_url, timeout=5) for n in ("m1", "m2")
        )
        client = make_client(replace(settings, backends=backends))
        _, h, _ = alice
        cid = start(client, h)
        t = say(client, h, cid, "a very long question")
        assert t["status"] == "failed" and len(t["errors"]) == 2
        r = client.post(f"/api/v1/turns/{t['id']}/withdraw", headers=h)
        assert r.status_code == 200 and r.json() == {"text": "a very long question"}
        conv = client.get(f"/api/v1/conversations/{cid}", headers=h).json()
        assert conv["turns"] == []  # nothing of it is left to compare or export
        again = client.post(f"/api/v1/turns/{t['id']}/withdraw", headers=h)
        assert again.status_code == 404
        failing.script.fail = None  # the edited message is sent and answered
        t2 = say(client, h, cid, "a short question")
        assert t2["status"] == "ready" and t2["index"] == 0
    finally:
        failing.stop()


def test_a_turn_with_a_written_response_is_not_withdrawn(make_client, settings, alice):
    from test_api import say, start

    failing = serve(Script(fail=503, fail_times=1))
    try:
        backends = tuple(
            openai_backend(n, "openai-chat", failing.base_url, timeout=5) for n in ("m1", "m2")
        )
        client = make_client(replace(settings, backends=backends))
        _, h, _ = alice
        t = say(client, h, start(client, h))
        assert t["status"] == "failed" and len(t["candidates"]) == 1
        r = client.post(f"/api/v1/turns/{t['id']}/withdraw", headers=h)
        assert r.status_code == 409 and "every response failed" in r.json()["error"]
    finally:
        failing.stop()
