"""Whatever goes wrong in a generation ends its responses as failed, never a turn left
"generating": an exception is injected at every step of the runner (the backend's call, its
stream, each piece's type, the cleaning, the marker cut, the record, the store, the events),
and each time the turn ends failed (or ready), its lease free, and Retry then generates it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

pytest.importorskip("fastapi")

from hhrlhf.collect.config import BackendConfig  # noqa: E402
from hhrlhf.collect.generation import runner  # noqa: E402
from hhrlhf.collect.generation.runner import Generator  # noqa: E402
from hhrlhf.collect.services import annotators, conversations, leases  # noqa: E402


class Boom(Exception):
    pass


def _raise(*_args, **_kwargs):
    raise Boom("injected")


def _pieces(*pieces):
    """A backend stream yielding ``pieces`` (anything: the runner must check them)."""

    def stream(prompt, slot="a"):
        async def gen():
            for p in pieces:
                yield p

        return gen()

    return stream


def _fails_after_one(prompt, slot="a"):
    async def gen():
        yield "Hello ", None
        raise Boom("mid-stream")

    return gen()


def _once(real: Callable) -> Callable:
    """``real``, except its first call raises."""
    calls = []

    def call(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise Boom("injected once")
        return real(*args, **kwargs)

    return call


#: fault name -> what to patch: (object getter, attribute, replacement factory)
FAULTS: dict[str, Callable] = {
    "the backend's call": lambda gen, mp: mp.setattr(gen.backends["demo-a"], "stream", _raise),
    "the stream mid-way": lambda gen, mp: mp.setattr(
        gen.backends["demo-a"], "stream", _fails_after_one
    ),
    "a list for text": lambda gen, mp: mp.setattr(
        gen.backends["demo-a"], "stream", _pieces(("Hi ", None), (["a"], None), ("", "stop"))
    ),
    "a dict for text": lambda gen, mp: mp.setattr(
        gen.backends["demo-a"], "stream", _pieces(({"text": "a"}, "stop"))
    ),
    "a number for text": lambda gen, mp: mp.setattr(
        gen.backends["demo-a"], "stream", _pieces((7, "stop"))
    ),
    "bytes for text": lambda gen, mp: mp.setattr(
        gen.backends["demo-a"], "stream", _pieces((b"abc", "stop"))
    ),
    "a dict for the finish reason": lambda gen, mp: mp.setattr(
        gen.backends["demo-a"], "stream", _pieces(("Hi", {"why": "stop"}))
    ),
    "a finish reason of a megabyte": lambda gen, mp: mp.setattr(
        gen.backends["demo-a"], "stream", _pieces(("Hi", "x" * 1_000_000))
    ),
    "a piece that is not a pair": lambda gen, mp: mp.setattr(
        gen.backends["demo-a"], "stream", _pieces("Hi")
    ),
    "the backend's record": lambda gen, mp: mp.setattr(gen.backends["demo-a"], "record", _raise),
    "the sampling parameters": lambda gen, mp: mp.setattr(BackendConfig, "sampling_params", _raise),
    "cleaning the text": lambda gen, mp: mp.setattr(runner, "clean_model_text", _raise),
    "the visible text": lambda gen, mp: mp.setattr(runner.VisibleText, "feed", _raise),
    "the marker cut": lambda gen, mp: mp.setattr(runner, "finalize", _raise),
    "the cut's reason": lambda gen, mp: mp.setattr(runner, "cut_reason", _raise),
    "the failure message": lambda gen, mp: mp.setattr(runner, "failure_message", _raise),
    "storing the responses": lambda gen, mp: mp.setattr(
        runner.leases, "finish_generation", _once(leases.finish_generation)
    ),
    "an event": lambda gen, mp: mp.setattr(runner.TurnRun, "emit", _once(runner.TurnRun.emit)),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_an_exception_anywhere_ends_the_turn_never_leaves_it_generating(
    storage, settings, monkeypatch, fault
):
    gen = Generator(storage, settings)
    who, _ = annotators.add_annotator(storage, "alice")
    cid = conversations.create_conversation(storage, who, "helpful", "task").id
    tid = conversations.create_turn(
        storage, who, cid, "How do I grow basil?", ("demo-a", "demo-b")
    ).id
    with monkeypatch.context() as mp:
        FAULTS[fault](gen, mp)

        async def go():
            _, run = await gen.open(tid)
            assert run is not None
            return await asyncio.wait_for(run.wait(), 10)

        status = asyncio.run(go())
    state = leases.turn_state(storage, tid)
    assert state.status == status and status in ("ready", "failed"), fault
    assert state.lease_owner is None
    for c in state.candidates:
        assert c.status in ("ready", "failed")
        assert c.status == "ready" or (c.error and len(c.error) <= 800), c
    if status == "failed":
        assert conversations.retry_turn(storage, who, tid) == "pending"  # at once
        _, run = asyncio.run(_open(gen, tid))
        assert leases.turn_state(storage, tid).status == "ready"


async def _open(gen, tid):
    state, run = await gen.open(tid)
    assert run is not None
    await asyncio.wait_for(run.wait(), 10)
    return state, run
