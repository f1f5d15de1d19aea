"""Stopping a turn being written: the backend's connection is closed and each response keeps
its text so far (cut, rateable), whether the Stop came to the worker writing it or to another
one (through the database); a turn whose writer died after a Stop was asked for fails as
stopped ("stopped by the annotator") and can be retried at once."""

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
    keeps the request, the writing worker reads it within a second, closes its backend
    requests and stores what each response wrote, as at its own Stop. (Units of work inside
    the loop go through ``storage.call``, as the app's do.)"""
    # a cap the endless reply does not reach in the seconds before the Stop is read
    roomy = replace(settings, max_response_chars=50_000_000)
    writer, other, who, tid = _two_workers(storage, roomy, endless, lease_seconds=30)
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
        asked = await storage.call(leases.turn_state, tid)
        status = await asyncio.wait_for(run.wait(), 10)
        took = time.monotonic() - t0
        sent = script.repeated
        await asyncio.sleep(0.5)
        return asked, status, took, sent

    asked, status, took, sent = asyncio.run(go())
    assert asked.status == "generating"  # asked: the writer stores it, not the asker
    # read within a poll (1 s), not at the lease's heartbeat (10 s here): a loose bound, as a
    # busy machine delays the poll
    assert status == "ready" and took < 6.0, (status, took)
    assert endless.script.repeated - sent <= 4  # its backend requests were closed
    state = leases.turn_state(storage, tid)
    assert state.status == "ready" and state.lease_owner is None
    for c in state.candidates:  # rateable, marked cut where it was stopped, the text kept
        assert c.cut and c.cut_reason == "stopped" and c.error is None
        assert re.fullmatch(r"Start(\.(more ?)*)?", c.text.strip()), c.text
    assert tid not in writer.runs
    assert not leases.stop_elsewhere(storage, tid, other.owner)  # nothing left to stop


def test_a_stop_asked_for_a_turn_whose_writer_died_fails_it_as_stopped(storage, settings, endless):
    """The writer took the lease and died before it read the Stop: its words are gone with
    it, so whoever opens the turn next (after the lease ran out) stores its responses as
    failed, stopped, instead of writing them again; the turn can be retried at once."""
    _, other, who, tid = _two_workers(storage, settings, endless, lease_seconds=30)
    assert leases.acquire_lease(storage, tid, "a-worker-that-died", 0.3) is not None
    assert leases.stop_elsewhere(storage, tid, other.owner)
    assert leases.turn_state(storage, tid).status == "generating"
    time.sleep(0.4)  # the dead writer's lease runs out

    async def go():
        return await other.open(tid)

    state, run = asyncio.run(go())
    assert run is None and tid not in other.runs  # nothing generated again
    assert state.status == "failed" and state.lease_owner is None
    assert [c.error for c in state.candidates] == [STOPPED] * 2
    assert leases.turn_state(storage, tid) == state
    assert endless.script.repeated == 0  # no request was sent
    assert conversations.retry_turn(storage, who, tid) == "pending"
    # a lease taken again starts without the old request
    assert leases.acquire_lease(storage, tid, other.owner, 30) is not None
    assert leases.stops_requested(storage, other.owner) == []
