"""A model server's reply is checked field by field at the boundary: text where text belongs
(a list or a dict is a failed response, not a wedged turn), and every text it sends, an
error's message included, bounded before it is stored, logged or shown."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace

import orjson
import pytest
from openai_server import Script, openai_backend, serve

pytest.importorskip("openai")

from hhrlhf.collect.generation.runner import Generator  # noqa: E402
from hhrlhf.collect.generation.wire import MAX_ERROR_CHARS  # noqa: E402
from hhrlhf.collect.services import annotators, conversations, leases  # noqa: E402


def _chat(choice: object, **extra) -> str:
    return orjson.dumps(
        {"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m", **extra}
        | ({"choices": choice} if choice is not ... else {})
    ).decode()


def _completion(choice: object) -> str:
    return orjson.dumps(
        {"id": "x", "object": "text_completion", "created": 1, "model": "m", "choices": choice}
    ).decode()


OK_CHAT = _chat([{"index": 0, "delta": {"content": "Fine."}, "finish_reason": "stop"}])
BIG = "E" * 3_000_000

#: hostile chat streams: each must fail the response (never wedge the turn), its error bounded
CHAT = {
    "content is a list": [_chat([{"index": 0, "delta": {"content": ["a"]}}]), OK_CHAT],
    "content is a dict": [_chat([{"index": 0, "delta": {"content": {"a": 1}}}])],
    "content is a number": [_chat([{"index": 0, "delta": {"content": 5}}])],
    "delta is text": [_chat([{"index": 0, "delta": "abc"}])],
    "choices is a dict": [_chat({"0": {"delta": {"content": "a"}}})],
    "choices is text": [_chat("abc")],
    "a choice is a list": [_chat([["a"]])],
    "finish_reason is a dict": [
        _chat([{"index": 0, "delta": {"content": "a"}, "finish_reason": {"x": 1}}])
    ],
    "finish_reason is a megabyte": [
        _chat([{"index": 0, "delta": {"content": "a"}, "finish_reason": "s" * 1_000_000}])
    ],
    "usage is text": [_chat([], usage="lots"), OK_CHAT],
    "a chunk is a list": ["[1, 2]"],
    "an error of 3 MB mid-stream": [
        _chat([{"index": 0, "delta": {"content": "Hel"}}]),
        orjson.dumps({"error": {"message": BIG, "type": "server_error"}}).decode(),
    ],
    "an error that is text": [orjson.dumps({"error": BIG}).decode()],
    "an error in a chunk with choices": [
        _chat([{"index": 0, "delta": {"content": "a"}}], error={"message": BIG})
    ],
}

COMPLETIONS = {
    "text is a list": [_completion([{"index": 0, "text": ["a"]}])],
    "text is a dict": [_completion([{"index": 0, "text": {"t": "a"}}])],
    "choices is a number": [_completion(3)],
}


@pytest.fixture(scope="module")
def server():
    running = serve(Script())
    yield running
    running.stop()


def _run_turn(storage, settings, server, kind, events):
    server.script.raw_events = events
    backends = tuple(openai_backend(n, kind, server.base_url, timeout=10.0) for n in ("m1", "m2"))
    gen = Generator(storage, replace(settings, backends=backends))
    who, _ = annotators.add_annotator(storage, f"a{abs(hash(str(events))) % 10**8}")
    cid = conversations.create_conversation(storage, who, "helpful", "task").id
    tid = conversations.create_turn(storage, who, cid, "Hi?", ("m1", "m2")).id

    async def go():
        _, run = await gen.open(tid)
        assert run is not None
        status = await asyncio.wait_for(run.wait(), 15)
        await gen.shutdown()
        return status, run

    status, run = asyncio.run(go())
    return gen, who, tid, status, run


def _failed_and_bounded(storage, tid, status, run):
    state = leases.turn_state(storage, tid)
    assert status == state.status == "failed" and state.lease_owner is None
    for c in state.candidates:
        assert c.status == "failed"
        assert len(c.error) <= MAX_ERROR_CHARS + 250, len(c.error)
    for e in run.events:
        if e.name == "error":
            assert len(e.data["message"]) <= MAX_ERROR_CHARS + 300


@pytest.mark.parametrize("case", sorted(CHAT))
def test_a_hostile_chat_reply_fails_the_response_bounded(
    storage, settings, server, case, caplog, sqlite_only
):
    caplog.set_level(logging.WARNING, "hhrlhf.collect.backends")
    _, who, tid, status, run = _run_turn(storage, settings, server, "openai-chat", CHAT[case])
    _failed_and_bounded(storage, tid, status, run)
    assert all(len(r.getMessage()) < 2_000 for r in caplog.records)  # the log is bounded too
    assert "malformed" in str(leases.turn_state(storage, tid).candidates) or "error" in case
    assert conversations.retry_turn(storage, who, tid) == "pending"  # Retry works at once


@pytest.mark.parametrize("case", sorted(COMPLETIONS))
def test_a_hostile_completion_fails_the_response(storage, settings, server, case, sqlite_only):
    _, _, tid, status, run = _run_turn(
        storage, settings, server, "openai-completions", COMPLETIONS[case]
    )
    _failed_and_bounded(storage, tid, status, run)


def test_a_well_formed_reply_still_goes_through(storage, settings, server, sqlite_only):
    events = [
        _chat([], usage={"prompt_tokens": 3}),
        _chat([{"index": 0, "delta": {"role": "assistant"}}]),
        _chat([{"index": 0, "delta": {"content": "All "}}]),
        OK_CHAT,
    ]
    _, _, tid, status, _ = _run_turn(storage, settings, server, "openai-chat", events)
    assert status == "ready"
    assert [c.text for c in leases.turn_state(storage, tid).candidates] == ["All Fine."] * 2


@pytest.mark.parametrize("case", ["content is a list", "an error of 3 MB mid-stream"])
def test_a_rerank_backend_over_a_hostile_server_fails_the_turn_bounded(
    storage, settings, server, case, sqlite_only
):
    """The rerank backend's samples come through the same checks: a hostile base fails the
    turn (both slots), with a bounded message, and Retry works."""
    from hhrlhf.collect.config import BackendConfig

    server.script.raw_events = CHAT[case]
    base = openai_backend("m1", "openai-chat", server.base_url, timeout=10.0)
    rerank = BackendConfig("best", "rerank", base="m1", k=3, pm="no-pm-needed-before-sampling")
    gen = Generator(storage, replace(settings, backends=(base, rerank)))
    who, _ = annotators.add_annotator(storage, "rerank-" + case.replace(" ", "-"))
    cid = conversations.create_conversation(storage, who, "helpful", "task").id
    tid = conversations.create_turn(storage, who, cid, "Hi?", ("best", "best")).id

    async def go():
        _, run = await gen.open(tid)
        status = await asyncio.wait_for(run.wait(), 15)
        await gen.shutdown()
        return status, run

    status, run = asyncio.run(go())
    _failed_and_bounded(storage, tid, status, run)
    assert conversations.retry_turn(storage, who, tid) == "pending"


def test_a_rerank_backend_over_a_base_sending_non_text_fails_the_turn(
    storage, settings, monkeypatch, sqlite_only
):
    from hhrlhf.collect.config import BackendConfig

    base = settings.backends[0]
    rerank = BackendConfig("best", "rerank", base=base.name, k=3, pm="unused")
    gen = Generator(storage, replace(settings, backends=(base, rerank)))

    def stream(prompt, slot="a"):
        async def pieces():
            yield {"text": "a"}, None

        return pieces()

    monkeypatch.setattr(gen.backends[base.name], "stream", stream)
    who, _ = annotators.add_annotator(storage, "rerank-dict")
    cid = conversations.create_conversation(storage, who, "helpful", "task").id
    tid = conversations.create_turn(storage, who, cid, "Hi?", ("best", "best")).id

    async def go():
        _, run = await gen.open(tid)
        return await asyncio.wait_for(run.wait(), 15)

    assert asyncio.run(go()) == "failed"
    state = leases.turn_state(storage, tid)
    assert state.status == "failed"
    assert all("malformed" in c.error for c in state.candidates)
