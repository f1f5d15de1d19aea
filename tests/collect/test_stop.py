"""Stopping a turn being written: the backend's connection is closed, the unfinished responses
are stored as failed ("stopped by the annotator"), and the turn can be retried at once."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

import pytest
from openai_server import Script, openai_backend, serve

pytest.importorskip("fastapi")

from hhrlhf.collect.generation.runner import Generator  # noqa: E402
from hhrlhf.collect.services import annotators, conversations, leases


@pytest.fixture
def endless():
    """A model server that streams far longer than any test waits (it stops when the client
    stops reading: ``script.repeated`` then stops growing)."""
    running = serve(Script(replies=["Start."], chunk_delay=0.01, repeat=("more ", 100_000)))
    yield running
    running.stop()


def test_stop_closes_the_backend_request_and_the_turn_can_be_retried(storage, settings, endless):
    backends = tuple(
        openai_backend(name, "openai-chat", endless.base_url, timeout=60.0) for name in ("m1", "m2")
    )
    gen = Generator(storage, replace(settings, backends=backends))
    who, _ = annotators.add_annotator(storage, "alice")
    cid = conversations.create_conversation(storage, who, "helpful", "task")["id"]
    tid = conversations.create_turn(storage, who, cid, "hello", ("m1", "m2"))["id"]
    script = endless.script

    async def go():
        _, run = await gen.open(tid)
        assert run is not None
        while script.repeated < 20:  # both responses are being written
            await asyncio.sleep(0.02)
        t0 = time.monotonic()
        assert gen.stop(tid)
        status = await run.wait()
        took = time.monotonic() - t0
        sent = script.repeated
        await asyncio.sleep(0.5)
        return status, took, sent, [e.name for e in run.events if e.name != "delta"]

    status, took, sent, events = asyncio.run(go())
    assert status == "failed" and took < 2.0
    assert events == ["error", "error", "end"]
    assert script.repeated - sent <= 4  # the server stopped sending: its client went away
    state = leases.turn_state(storage, tid)
    assert state["status"] == "failed"
    assert all("stopped by the annotator" in c["error"] for c in state["candidates"])
    assert conversations.retry_turn(storage, who, tid) == "pending"  # at once, no lease to wait for
    assert not gen.stop(tid)  # nothing running any more
