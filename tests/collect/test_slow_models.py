"""A model that writes slowly is not thrown away: a backend's idle timeout bounds the silence
between words, ``max_response_seconds`` the whole response, which is then cut (its text kept
and rateable, exported marked cut), as a reply the annotator stopped is."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest
from openai_server import Script, openai_backend, serve

pytest.importorskip("fastapi")
pytest.importorskip("openai")  # imported now, not while the first word is awaited

from hhrlhf.collect.domain import STOPPED  # noqa: E402
from hhrlhf.collect.generation.runner import Generator  # noqa: E402
from hhrlhf.collect.services import annotators, choices, conversations, leases  # noqa: E402
from hhrlhf.collect.services.export import export_collection  # noqa: E402

#: 30 chunks of 5 characters, one every 0.1 s: about 3 s of steady writing
STEADY = "word " * 30


@pytest.fixture
def steady():
    running = serve(Script(replies=[STEADY], chunk_delay=0.1))
    yield running
    running.stop()


def _generate(storage, settings, server, stop_after: float | None = None, **backend):
    backends = tuple(
        openai_backend(name, "openai-chat", server.base_url, **backend) for name in ("m1", "m2")
    )
    gen = Generator(storage, replace(settings, backends=backends))
    who, _ = annotators.add_annotator(storage, "alice")
    cid = conversations.create_conversation(storage, who, "helpful", "task").id
    tid = conversations.create_turn(storage, who, cid, "hello", ("m1", "m2")).id

    async def go():
        _, run = await gen.open(tid)
        assert run is not None
        if stop_after is not None:
            await asyncio.sleep(stop_after)
            assert gen.stop(tid)
        status = await run.wait()
        await gen.shutdown()
        return status, [(e.name, e.data) for e in run.events if e.name != "delta"]

    status, events = asyncio.run(go())
    return status, events, leases.turn_state(storage, tid), (who, cid, tid)


def test_a_steady_stream_longer_than_the_timeout_is_kept_whole(storage, settings, steady):
    # timeout 1.5 s (the first word may take most of a second on a busy machine), the reply
    # takes 3 s: a word comes every 0.1 s, so it is never idle that long
    status, events, state, _ = _generate(storage, settings, steady, timeout=1.5)
    assert status == "ready", events
    assert [c.text for c in state.candidates] == [STEADY.strip()] * 2
    assert not any(c.cut for c in state.candidates)


def test_a_silence_longer_than_the_idle_timeout_fails_the_side(storage, settings):
    server = serve(Script(replies=["late"], first_delay=1.5))
    try:
        status, events, state, _ = _generate(storage, settings, server, timeout=5, idle_timeout=0.5)
    finally:
        server.stop()
    assert status == "failed"
    assert [name for name, _ in events] == ["error", "error", "end"]
    assert all("no word for 0.5 s" in c.error for c in state.candidates)


def test_the_total_cap_cuts_the_response_and_keeps_it_rateable(storage, settings, steady):
    status, events, state, _ = _generate(
        storage, replace(settings, max_response_seconds=1.5), steady, idle_timeout=2
    )
    assert status == "ready", events
    done = [d for name, d in events if name == "done"]
    assert [d["cut_reason"] for d in done] == ["time", "time"]
    for c in state.candidates:
        assert c.status == "ready" and c.cut
        assert 0 < len(c.text) < len(STEADY.strip())  # what was written in 1.5 s
        assert STEADY.startswith(c.text)


def test_stop_keeps_the_text_so_far_as_a_rateable_cut_response(storage, settings, steady):
    status, events, state, _ = _generate(storage, settings, steady, stop_after=1.5)
    assert status == "ready", events
    assert [d["cut_reason"] for name, d in events if name == "done"] == ["stopped", "stopped"]
    assert all(c.cut and STEADY.startswith(c.text) for c in state.candidates)


def test_a_cut_response_is_rated_and_the_export_counts_it_as_cut(
    storage, settings, steady, tmp_path
):
    status, _, _, (who, cid, tid) = _generate(
        storage, replace(settings, max_response_seconds=1.5), steady, idle_timeout=2
    )
    assert status == "ready"
    choices.record_choice(storage, who, tid, pick="a", strength=3, strength_points=4)
    conversations.finish_conversation(storage, who, cid)
    manifest = export_collection(storage, tmp_path / "out", test_fraction=0.5)
    assert manifest["left_out"]["cut"] == 1  # as a reply cut at max_response_chars is


def test_a_side_stopped_before_its_first_word_stays_failed(storage, settings):
    server = serve(Script(replies=["late"], first_delay=3))
    try:
        status, events, state, _ = _generate(storage, settings, server, stop_after=0.3)
    finally:
        server.stop()
    assert status == "failed"
    assert all(STOPPED in c.error for c in state.candidates)


def test_an_idle_timeout_longer_than_timeout_lets_a_read_wait_that_long(storage, settings):
    # a word a second: past ``timeout`` (0.5 s, the HTTP limit) but within ``idle_timeout``
    server = serve(Script(replies=["one, two, three"], chunk_delay=1.0))
    try:
        status, events, state, _ = _generate(storage, settings, server, timeout=0.5, idle_timeout=3)
    finally:
        server.stop()
    assert status == "ready", events
    assert [c.text for c in state.candidates] == ["one, two, three"] * 2
