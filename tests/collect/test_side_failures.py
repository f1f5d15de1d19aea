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
    cid = conversations.create_conversation(storage, who, "helpful", "task")["id"]
    tid = conversations.create_turn(storage, who, cid, "hello", ("m1", "m2"))["id"]

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
    assert {c["slot"]: c["status"] for c in state["candidates"]} == {"a": "ready", "b": "failed"}
