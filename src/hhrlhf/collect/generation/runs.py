"""A turn's run as its listeners see it: the events it emits (``delta``, ``done``, ``error``,
``end``), kept so that a listener arriving late replays them from the first, handed out in
batches (a listener lingers a moment after an event for more, so it wakes a few times a
second, not once per word), and what an annotator reads when a response fails.

The runner (:mod:`.runner`) makes and ends runs; the web's event stream
(:mod:`hhrlhf.collect.web.stream`) writes their batches as server-sent events.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from ..domain import CandidateState, annotator_failure

__all__ = ["Event", "TurnRun", "close_run", "failure_message", "replay_done", "slot_label"]


def replay_done(c: CandidateState) -> dict[str, Any]:
    """A stored ready candidate as a ``done`` event's data."""
    return {"slot": c.slot, "text": c.text, "cut": c.cut, "cut_reason": c.cut_reason}


def slot_label(slot: str) -> str:
    return slot.upper()


def failure_message(slot: str, why: str | None) -> str:
    """What an annotator reads for a failed response (the model server's words, ``why``, go
    to the log and to admins only): :func:`~hhrlhf.collect.domain.annotator_failure`."""
    return annotator_failure(slot, why)


@dataclass(frozen=True)
class Event:
    name: str  # delta | done | error | end
    data: dict[str, Any]


@dataclass
class TurnRun:
    turn_id: int
    events: list[Event] = field(default_factory=list)
    done: bool = False
    status: str | None = None
    #: set by :meth:`Generator.stop`: the responses still being written fail as "stopped"
    stopped: bool = False
    #: its lease is gone (taken over after this worker stalled past it): it stores nothing
    lost: bool = False
    readers: set[asyncio.Future[None]] = field(default_factory=set)
    #: the responses whose failure was sent as it happened (the other one still written)
    failed_early: set[str] = field(default_factory=set)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)
    _ended: asyncio.Event = field(default_factory=asyncio.Event)
    #: listeners lingering for more events (:meth:`batches`): woken at once when the run ends
    _lingering: set[asyncio.Future[None]] = field(default_factory=set)

    def emit(self, name: str, data: dict[str, Any]) -> None:
        self.events.append(Event(name, data))
        self._changed.set()

    def finish(self, status: str) -> None:
        self.status = status
        self.done = True
        self.emit("end", {"status": status})
        self._ended.set()
        for waiting in self._lingering:
            _wake(waiting)

    async def batches(self, linger: float = 0.0) -> AsyncIterator[list[Event]]:
        """Every event from the first, then new ones as they come, until ``end``: each time
        a list of all that came meanwhile (a fast model's words, or a replay, in one).

        ``linger``: seconds to wait after a new event for more before the next list (unless
        the run ended): a listener then wakes a few times a second, not once per word."""
        i = 0
        while True:
            if i < len(self.events):
                batch = self.events[i:]
                i += len(batch)
                yield batch
            if self.done and i == len(self.events):
                return
            self._changed.clear()
            if i < len(self.events):
                continue
            await self._changed.wait()
            if linger and not self.done:
                await self._linger(linger)

    async def _linger(self, seconds: float) -> None:
        """Sleep ``seconds``, or until the run ends (its last events go out at once)."""
        loop = asyncio.get_running_loop()
        waiting = loop.create_future()
        timer = loop.call_later(seconds, _wake, waiting)
        self._lingering.add(waiting)
        try:
            await waiting
        finally:
            timer.cancel()
            self._lingering.discard(waiting)

    async def wait(self) -> str:
        """The run's status once it ended (woken once, not by each event)."""
        await self._ended.wait()
        assert self.status is not None  # set before the run ends
        return self.status


def close_run(run: TurnRun) -> None:
    """Stop ``run``'s responses being written: its backend requests close, and the
    responses not finished fail as stopped."""
    run.stopped = True
    for task in list(run.readers):
        task.cancel()


def _wake(waiting: asyncio.Future[None]) -> None:
    if not waiting.done():
        waiting.set_result(None)
