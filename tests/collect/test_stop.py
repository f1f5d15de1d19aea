"""Stopping a turn being written: the backend's connection is closed; a response stopped in
this worker keeps its text so far (cut, rateable), one stopped through another worker is
stored as failed ("stopped by the annotator"), and that turn can be retried at once."""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import replace

import pytest
from openai_server import Script, openai_backend, serve

pytest.importorskip("fastapi")

from hhrlhf.collect.domain import STOPPED  # noqa: E402
from hhrlhf.collect.generation.runner import Generator  # noqa: E402
from hhrlhf.collect.services import annotators, conversations, leases


@pytest.fixture
def endless():
    """A model server that streams far longer than any test waits (it stops when the client
    stops reading: ``script.repeated`` then stops growing)."""
    running = serve(Script(replies=["Start."], chunk_delay=0.01, repeat=("more ", 100_000)))
    yield running
    running.stop()


def test_stop_closes_the_backend_request_and_keeps_the_text_so_far(storage, settings, endless):
    backends = tuple(
        openai_backend(name, "openai-chat", endless.base_url, timeout=60.0) for name in ("m1", "m2")
    )
    gen = Generator(storage, replace(settings, backends=backends))
    who, _ = annotators.add_annotator(storage, "alice")
    cid = conversations.create_conversation(storage, who, "helpful", "task").id
    tid = conversations.create_turn(storage, who, cid, "hello", ("m1", "m2")).id
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
    assert status == "ready" and took < 2.0
    assert events == ["done", "done", "end"]
    assert script.repeated - sent <= 4  # the server stopped sending: its client went away
    state = leases.turn_state(storage, tid)
    assert state.status == "ready"
    for c in state.candidates:  # rateable, marked cut where it was stopped
        # what the runner had read when Stop came (the server may have sent more, still buffered)
        assert c.cut and c.cut_reason == "stopped"
        assert re.fullmatch(r"Start(\.(more ?)*)?", c.text.strip()), c.text
    assert not gen.stop(tid)  # nothing running any more


def _two_workers(storage, settings, endless, lease_seconds):
    """Two generators on one database (two workers, or hosts), and a turn of alice's."""
    backends = tuple(
        openai_backend(name, "openai-chat", endless.base_url, timeout=60.0) for name in ("m1", "m2")
    )
    both = replace(settings, backends=backends, lease_seconds=lease_seconds)
    writer, other = Generator(storage, both), Generator(storage, both)
    who, _ = annotators.add_annotator(storage, "alice")
    cid = conversations.create_conversation(storage, who, "helpful", "task").id
    tid = conversations.create_turn(storage, who, cid, "hello", ("m1", "m2")).id
    return writer, other, who, tid


def test_a_turn_another_worker_writes_is_stopped_through_the_database(storage, settings, endless):
    """The Stop request reaches a worker whose process is not writing the turn: the database
    stores its responses as stopped and releases the lease; the writing worker finds the
    lease gone at its next heartbeat, closes its backend requests and stores nothing.
    (Units of work inside the loop go through ``storage.call``, as the app's do: a blocking
    one waiting on a row lock the loop's own transaction holds would stall the loop.)"""
    writer, other, who, tid = _two_workers(storage, settings, endless, lease_seconds=0.9)
    script = endless.script

    async def go():
        _, run = await writer.open(tid)
        assert run is not None
        while script.repeated < 20:
            await asyncio.sleep(0.02)
        assert not await storage.call(
            leases.stop_elsewhere, tid, writer.owner
        )  # its own: Generator.stop
        assert not other.stop(tid)  # not this process's run
        t0 = time.monotonic()
        assert await storage.call(leases.stop_elsewhere, tid, other.owner)
        stopped = await storage.call(leases.turn_state, tid)
        status = await asyncio.wait_for(run.wait(), 5)
        took = time.monotonic() - t0
        sent = script.repeated
        await asyncio.sleep(0.5)
        return stopped, status, took, sent, run

    stopped, status, took, sent, run = asyncio.run(go())
    assert stopped.status == "failed" and stopped.lease_owner is None
    assert [c.error for c in stopped.candidates] == [STOPPED] * 2
    # a heartbeat is 0.3 s and the reply never ends: any bound shows the stop reached it (a
    # loose one, as a busy machine delays the heartbeats)
    assert status == "failed" and took < 6.0
    assert script.repeated - sent <= 4  # its backend requests were closed
    assert tid not in writer.runs
    assert leases.turn_state(storage, tid) == stopped  # the old run stored nothing
    assert not leases.stop_elsewhere(storage, tid, other.owner)  # nothing left to stop
    assert conversations.retry_turn(storage, who, tid) == "pending"


def test_a_run_stopped_elsewhere_is_not_followed_when_the_turn_is_retried(
    storage, settings, endless
):
    """Stopped through the database and retried before the writing worker's heartbeat: a
    listener on that worker gets a new run of the turn, not the old one (whose results
    could not be stored), and the old one stops."""
    writer, other, who, tid = _two_workers(storage, settings, endless, lease_seconds=30)
    script = endless.script

    async def go():
        _, old = await writer.open(tid)
        while script.repeated < 20:
            await asyncio.sleep(0.02)
        assert await storage.call(leases.stop_elsewhere, tid, other.owner)
        assert await storage.call(conversations.retry_turn, who, tid) == "pending"
        state, new = await writer.open(tid)
        assert new is not None and new is not old and writer.runs[tid] is new
        assert old.done and old.status == "failed"  # it ended before the new lease
        assert state.status == "pending"  # as it was read, before this lease
        assert (await storage.call(leases.turn_state, tid)).lease_owner == writer.owner
        while script.repeated < 40:  # the new run writes (its lease was not taken back)
            await asyncio.sleep(0.02)
        assert (await storage.call(leases.turn_state, tid)).status == "generating"
        assert writer.stop(tid)
        return await asyncio.wait_for(new.wait(), 5)

    assert asyncio.run(go()) == "failed"
    state = leases.turn_state(storage, tid)
    assert state.status == "failed" and state.lease_owner is None
