"""A turn's events as server-sent events: the one place that writes them.

:class:`~hhrlhf.collect.generation.runs.TurnRun` keeps a run's events and hands them out in
batches (lingering :data:`STREAM_LINGER` after a word for more); here each batch becomes one
write: every response's words joined into one ``delta`` (:func:`joined`), a ``done`` event's
text rendered as the page shows it (within the annotator's render budget, in a thread when
it is not cached), and a keep-alive comment after :data:`KEEPALIVE_SECONDS` of silence, so
that proxies keep a quiet stream open.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import orjson
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from ..domain import AnnotatorInfo, TurnState
from ..generation.runs import Event, TurnRun
from .context import AppContext
from .markdown import cached_html, render_within
from .ratelimit import Limits

__all__ = [
    "KEEPALIVE_SECONDS",
    "STREAM_LINGER",
    "event_stream",
    "joined",
    "render_all",
    "rendered",
    "sse",
]


#: seconds of silence on an event stream before a keep-alive comment is sent
KEEPALIVE_SECONDS = 15.0
#: seconds an event stream waits after a model's word for more before it writes: ten writes
#: a second at most, whatever the model's speed (a wake and a write per word cost nearly as
#: much as the rest of the turn: bench/RESULTS-collect.md)
STREAM_LINGER = 0.1


def joined(batch: list[Event]) -> list[Event]:
    """``batch`` with each response's words in one ``delta`` (where its first was): what the
    page shows is the same, in one event per response, not one per word."""
    out: list[Event | str] = []
    words: dict[str, list[str]] = {}
    for e in batch:
        if e.name != "delta":
            out.append(e)
        elif (slot := e.data["slot"]) in words:
            words[slot].append(e.data["text"])
        else:
            words[slot] = [e.data["text"]]
            out.append(slot)
    if len(out) == len(batch):
        return batch
    return [
        Event("delta", {"slot": e, "text": "".join(words[e])}) if isinstance(e, str) else e
        for e in out
    ]


def render_all(texts: list[str], limits: Limits, who_id: int) -> list[str]:
    """The texts' HTML, rendered within the annotator's render budget on this worker."""
    return render_within(texts, lambda chars: limits.take_render(who_id, chars))


async def rendered(texts: list[str], st: AppContext, who_id: int) -> list[str]:
    """The texts' HTML: on the loop when every one was rendered lately (a lookup), else in
    one trip to a thread (markdown of 20,000 characters can take a tenth of a second)."""
    hit = cached_html(texts)
    if hit is not None:
        return hit
    return await run_in_threadpool(render_all, texts, st.limits, who_id)


def sse(name: str, data: dict[str, Any]) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


def event_stream(
    st: AppContext,
    who: AnnotatorInfo,
    turn_id: int,
    state: TurnState,
    run: TurnRun | None,
    head: Event | None = None,
    status_code: int = 200,
) -> StreamingResponse:
    """The turn's events as server-sent events, from ``head`` (if any) to ``end``:
    :meth:`.Generator.batches` from what :meth:`.Generator.open` (or a turn created leased
    here) gave, a write per batch."""

    async def body() -> AsyncIterator[bytes]:
        # a comment line while nothing happens keeps proxies from closing a quiet stream
        queue: asyncio.Queue[list[Event] | None] = asyncio.Queue()

        async def pump() -> None:
            try:
                async for batch in st.generator.batches(turn_id, state, run, STREAM_LINGER):
                    await queue.put(batch)
            finally:
                await queue.put(None)

        async def frames(batch: list[Event]) -> bytes:
            batch = joined(batch)
            # a done event carries the finished text as the page shows it too: the batch's
            # markdown found rendered, or rendered in one trip to a thread (a long response
            # must not hold the loop)
            texts = [e.data["text"] for e in batch if e.name == "done"]
            htmls = iter(await rendered(texts, st, who.id))
            return b"".join(
                sse(e.name, {**e.data, "html": next(htmls)} if e.name == "done" else e.data)
                for e in batch
            )

        task = asyncio.create_task(pump())
        try:
            if head is not None:
                yield sse(head.name, head.data)
            while True:
                try:
                    got = await asyncio.wait_for(queue.get(), KEEPALIVE_SECONDS)
                except asyncio.TimeoutError:
                    yield b": keep-alive\n\n"
                    continue
                # what was queued meanwhile goes in the same write: a burst of deltas (a fast
                # model, a replay) is one write, not one each (None comes last)
                batch: list[Event] = []
                while got is not None:
                    batch.extend(got)
                    if queue.empty():
                        break
                    got = queue.get_nowait()
                if batch:
                    yield await frames(batch)
                if got is None:
                    break
        finally:
            task.cancel()

    return StreamingResponse(
        body(),
        status_code,
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
