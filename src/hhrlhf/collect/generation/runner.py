"""Generating a turn's two candidates: one leased run per turn, its events replayable to any listener.

The lease lives in the database (``turns.lease_owner``/``lease_until``), so across workers
only one process generates a turn; a live run renews it, so a dead worker's turn is taken over
``lease_seconds`` after its last renewal, or at once when the dead worker was a process of the
same host (:mod:`.owners`); a listener on another worker polls the turn until it is done
and replays the stored candidates. A run outlives the request that started it: an annotator
who closes the page finds the responses stored when they come back.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Coroutine
from typing import Any

from ..config import Settings
from ..db import Storage
from ..domain import STOPPED, AnnotatorInfo, PendingCandidate, Prompt, TurnState
from ..finish import SIZE_CUT, STOP_CUT, cut_reason
from ..services import leases
from ..textrules import clean_model_text
from .backends import BackendError, finalize
from .kinds import make_backend
from .owners import dead_here, new_owner_id
from .reading import Fields, Outcome, Read, watch
from .runs import Event, TurnRun, close_run, failure_message, replay_done, slot_label
from .visible import VisibleText, _visible  # noqa: F401  (_visible: the tests' reference)
from .wire import bounded, checked_piece

__all__ = ["Generator", "TurnRun", "Event", "slot_label", "failure_message"]

POLL_SECONDS = 0.2
#: seconds between two reads of the Stops asked for through other workers, while runs are live
STOP_POLL_SECONDS = 1.0
#: every backend failure is logged here, with the model server's own explanation
log = logging.getLogger("hhrlhf.collect.backends")


def _failed_fields(error: str, like: Fields | None = None) -> Fields:
    """A failed candidate's fields to store: ``error``, the model facts of ``like`` if they
    are plain values, nothing of its text."""
    like = like or {}
    facts = {
        k: v
        for k in ("model", "model_type", "num_params")
        if isinstance(v := like.get(k), str) or v is None
    }
    return {
        **dict.fromkeys(("model", "model_type", "num_params")),
        **facts,
        "params": {},
        "latency_ms": like.get("latency_ms") if isinstance(like.get("latency_ms"), int) else 0,
        "text": None,
        "raw_text": None,
        "cut": False,
        "error": error,
    }


class Generator:
    """Runs turns: the backends of the settings, one lease owner id per process."""

    def __init__(self, storage: Storage, settings: Settings):
        self.storage = storage
        self.settings = settings
        self.backends = {b.name: make_backend(b) for b in settings.backends}
        for backend in self.backends.values():
            backend.bind(self.backends, settings.max_response_chars)
        self.owner = new_owner_id()
        self.runs: dict[int, TurnRun] = {}
        # a live run renews its lease every third of it (however slow its backend), so a turn
        # is taken over only when its worker died: ``lease_seconds`` after the last renewal
        self.lease_seconds = settings.lease_seconds
        self._tasks: set[asyncio.Task[None]] = set()
        self._watching: asyncio.Task[None] | None = None

    async def open(
        self, turn_id: int, who: AnnotatorInfo | None = None
    ) -> tuple[TurnState, TurnRun | None]:
        """A listener's start: the turn's :func:`.leases.turn_state` (NotFound unless it is
        ``who``'s or they are an admin; None: not checked) and the run generating it in this
        process, if any: one already live here, or one started now when the turn is free
        (pending, its lease run out, or its worker a dead process of this host). One
        transaction either way."""
        run = self.runs.get(turn_id)
        if run is not None and not run.done:
            state = await self.storage.call(leases.turn_state, turn_id, who)
            if state.lease_owner == self.owner and not run.lost:
                return state, run
            # its lease was taken from it (this worker stalled past it, and another took the
            # turn over): it stops, and once it ended (storing nothing: a lease of this
            # process's taken after it would be its too) the turn opens as the database has it
            self._lose(run)
            await run.wait()
        state, got = await self.storage.call(
            leases.open_turn, turn_id, who, self.owner, self.lease_seconds, dead=dead_here
        )
        if got is None:
            return state, None
        if state.status == "generating":
            log.warning(
                "turn %s: its worker %s is gone; generating it here", turn_id, state.lease_owner
            )
        return state, self.adopt(turn_id, *got)

    def adopt(self, turn_id: int, prompt: Prompt, pending: list[PendingCandidate]) -> TurnRun:
        """Generate a turn whose lease this process holds (``conversations.create_turn(Storage, lease=...)``)."""
        run = TurnRun(turn_id)
        self.runs[turn_id] = run
        self._spawn(self._run(run, prompt, pending))
        if self._watching is None or self._watching.done():
            self._watching = self._spawn(self._watch_stops())
        return run

    def _spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _watch_stops(self) -> None:
        """While this process writes turns: the Stops asked for through other workers
        (:func:`.leases.stop_elsewhere`), read every :data:`STOP_POLL_SECONDS` in one query
        for all its runs, each stopped here as this worker's own Stop is (the text kept)."""
        while self.runs:
            await asyncio.sleep(STOP_POLL_SECONDS)
            try:
                asked = await self.storage.call(leases.stops_requested, self.owner)
            except Exception as exc:  # the database away: the next read, or the lease, tells
                log.warning("Stops asked through other workers not read: %s", exc)
                continue
            for turn_id in asked:
                self.stop(turn_id)

    def stop(self, turn_id: int) -> bool:
        """Stop the run of ``turn_id`` in this process: its open backend requests are closed
        and each unfinished response is stored with what it wrote (cut, ``stopped``; one with
        no words yet fails, so Retry works at once). False when no run of it is live here
        (another process's: :func:`.leases.stop_elsewhere`)."""
        run = self.runs.get(turn_id)
        if run is None or run.done:
            return False
        close_run(run)
        return True

    def _lose(self, run: TurnRun) -> None:
        """A run whose lease is gone: its backend requests close and it ends storing nothing."""
        run.lost = True
        close_run(run)

    async def _renew(self, run: TurnRun) -> None:
        """Heartbeat of a live run: keep the lease until the run ends; when the lease is lost
        (taken over after this worker stalled past it), the run stops writing."""
        while True:
            await asyncio.sleep(self.lease_seconds / 3)
            if not await self.storage.call(
                leases.renew_lease, run.turn_id, self.owner, self.lease_seconds
            ):
                self._lose(run)
                return

    async def _run(self, run: TurnRun, prompt: Prompt, pending: list[PendingCandidate]) -> None:
        status = "failed"
        heartbeat = asyncio.create_task(self._renew(run))
        try:
            outcomes: list[Outcome] = list(
                await asyncio.gather(*(self._one(run, prompt, p.slot, p.backend) for p in pending))
            )
            # one transaction (one fsync) for both candidates and the lease
            results = {slot: fields for slot, fields, _ in outcomes}
            stored, unsaved = (None, "") if run.lost else await self._store(run, results)
            if unsaved:
                outcomes = [(slot, f, unsaved) for slot, f, _ in outcomes]
            try:
                self._emit_outcomes(run, outcomes, stored)
            except Exception:  # the turn is stored: its listeners replay it from there
                log.exception("turn %s: its events could not be sent", run.turn_id)
            status = stored or "failed"
        finally:  # never leave a listener waiting
            heartbeat.cancel()
            run.finish(status)
            if self.runs.get(run.turn_id) is run:  # (not a run started since its lease was lost)
                del self.runs[run.turn_id]

    @staticmethod
    def _emit_outcomes(run: TurnRun, outcomes: list[Outcome], stored: str | None) -> None:
        for slot, fields, message in outcomes:
            if slot in run.failed_early:  # sent as it failed
                continue
            if stored is None:
                message = (
                    "the response was not stored (it was stopped, or another worker took over)"
                )
            if message is None:
                run.emit(
                    "done",
                    {
                        "slot": slot,
                        "text": fields["text"],
                        "cut": fields["cut"],
                        "cut_reason": cut_reason(fields["cut"], fields["finish_reason"]),
                    },
                )
            else:
                run.emit("error", {"slot": slot, "message": failure_message(slot, message)})

    async def _store(self, run: TurnRun, results: dict[str, Fields]) -> tuple[str | None, str]:
        """Store the run's responses and free its lease: (the turn's new status, or None when
        its lease was gone; why they were stored as failed instead, or ''). When storing them
        fails, they are stored again as failed, so the turn does not stay generating while
        this worker lives (Retry works at once); if that fails too, its lease runs out."""
        try:
            status = await self.storage.call(
                leases.finish_generation, run.turn_id, self.owner, results
            )
            return status, ""
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("turn %s: its responses could not be stored", run.turn_id)
            why = "the response could not be stored"
            stored = bounded(f"{why}: {type(exc).__name__}: {exc}")
            failed = {slot: _failed_fields(stored, f) for slot, f in results.items()}
            status = await self.storage.call(
                leases.finish_generation, run.turn_id, self.owner, failed
            )
            return status, why

    async def _one(self, run: TurnRun, prompt: Prompt, slot: str, backend_name: str) -> Outcome:
        """Generate one candidate, streaming deltas; returns (slot, fields to store, error or
        None). Whatever goes wrong in it (a bug included) ends the response as failed, and its
        ``error`` event goes out at once: the page shows it while the other is still written."""
        try:
            outcome = await self._generate(run, prompt, slot, backend_name)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            stored = bounded(f"the response could not be generated: {type(exc).__name__}: {exc}")
            log.exception("turn %s, response %s: generation failed", run.turn_id, slot_label(slot))
            outcome = (slot, _failed_fields(stored), "the response could not be generated")
        message = outcome[2]
        if message is not None and not run.lost:
            run.failed_early.add(slot)
            run.emit("error", {"slot": slot, "message": failure_message(slot, message)})
        return outcome

    async def _generate(
        self, run: TurnRun, prompt: Prompt, slot: str, backend_name: str
    ) -> Outcome:
        backend = self.backends.get(backend_name)
        config = backend.config if backend else None
        t0 = time.perf_counter()
        read = await self._read(run, prompt, slot, backend_name)
        error, detail, shown_detail = read.error, read.detail, read.shown_detail
        # the server's words, whatever their size or kind, are bounded before they go anywhere
        if error is not None:
            error, detail = bounded(error, 200), bounded(detail) if detail else detail
        fields: Fields = dict(
            # as configured now: a later change of the config does not rewrite them
            model=config.model if config else None,
            model_type=config.model_type if config else None,
            num_params=config.num_params if config else None,
            params=config.sampling_params() if config else {},
            latency_ms=int((time.perf_counter() - t0) * 1000),
        )
        if error is None and backend is not None:
            fields["params"] = {**fields["params"], **backend.record(prompt, slot)}
        # a surrogate pair split across two deltas is joined again; a lone one is U+FFFD
        whole = clean_model_text("".join(read.raw))
        if error is None:
            done = finalize(whole, read.finish_reason, cut_as=read.cut_as)
            if done.text:
                fields.update(
                    text=done.text,
                    raw_text=done.raw_text,
                    cut=done.cut,
                    finish_reason=done.finish_reason,
                )
                return slot, fields, None
            error, detail = "the model gave an empty response", "empty after cutting"
            if read.cut_as == STOP_CUT:  # stopped before a word: Retry
                error, detail = STOPPED, None
        stored = f"{error}: {detail}" if detail else error
        fields.update(text=None, raw_text=whole or None, cut=False, error=stored)
        log.warning(
            "backend %s (model %s) failed for turn %s, response %s: %s",
            backend_name,
            config.model if config else "?",
            run.turn_id,
            slot_label(slot),
            stored,
        )
        return slot, fields, stored if shown_detail else error

    async def _read(self, run: TurnRun, prompt: Prompt, slot: str, backend_name: str) -> Read:
        """Stream one response from its backend, emitting what becomes visible, until it ends,
        is cut (``max_response_chars``, ``max_response_seconds``, Stop: its text so far kept),
        or no word came for the backend's idle timeout: what was read, and why it failed."""
        backend = self.backends.get(backend_name)
        read = Read(last=asyncio.get_running_loop().time())
        room = self.settings.max_response_chars
        shown = VisibleText()

        async def consume() -> None:
            nonlocal room
            assert backend is not None
            stream = backend.stream(prompt, slot)  # rerank: one ranking, two slots
            try:
                async for delta, reason in stream:
                    read.last = asyncio.get_running_loop().time()
                    delta, reason = checked_piece(delta, reason)  # any backend's
                    if reason:
                        read.finish_reason = reason
                    if not delta:
                        continue
                    if len(delta) > room:  # max_response_chars: keep what fits, stop reading
                        delta, read.cut_as = delta[:room], SIZE_CUT
                    room -= len(delta)
                    read.raw.append(delta)
                    # U+0000 and lone surrogates cannot be stored: shown and kept as U+FFFD
                    visible = shown.feed(clean_model_text(delta))
                    if visible:
                        run.emit("delta", {"slot": slot, "text": visible})
                    if read.cut_as:
                        break
            finally:
                aclose = getattr(stream, "aclose", None)
                if aclose is not None:  # closes the connection of a server still sending
                    await aclose()

        try:
            if backend is None:
                raise BackendError(
                    "this response's model is not configured any more",
                    f"backend {backend_name!r} is not in the config",
                )
            reader = asyncio.ensure_future(consume())
            run.readers.add(reader)
            if run.stopped:
                reader.cancel()
            try:
                await watch(
                    reader, read, backend.config.idle_seconds, self.settings.max_response_seconds
                )
            finally:
                run.readers.discard(reader)
        except asyncio.CancelledError:
            me = asyncio.current_task()
            if not run.stopped or (me is not None and getattr(me, "cancelling", lambda: 0)()):
                raise  # the app is shutting down, not an annotator's Stop
            read.cut_as = STOP_CUT  # its text so far is kept (none: failed as stopped)
        except asyncio.TimeoutError:
            read.error = "the model server stopped sending"
            read.detail = f"no word for {backend.config.idle_seconds:g} s" if backend else None
            read.shown_detail = True
        except BackendError as exc:
            read.error, read.detail, read.shown_detail = exc.message, exc.detail, True
        except Exception as exc:  # a backend bug must not lose the turn
            read.error, read.detail = "the model server failed", f"{type(exc).__name__}: {exc}"
        return read

    async def batches(
        self,
        turn_id: int,
        state: TurnState | None = None,
        run: TurnRun | None = None,
        linger: float = 0.0,
    ) -> AsyncIterator[list[Event]]:
        """Events for a listener, in lists of what came together: generate if pending, follow
        a run, or replay what is stored. ``state`` and ``run``: what :meth:`open` gave the
        caller (else :meth:`open` here); ``linger``: :meth:`TurnRun.batches`'."""
        if state is None:
            state, run = await self.open(turn_id)
        while run is None and state.status in ("pending", "generating"):
            # another worker holds the lease: wait for it to finish (or run out, or die)
            await asyncio.sleep(POLL_SECONDS)
            state, run = await self.open(turn_id)
        if run is not None:
            # a response stored ready (a retry of the other): shown at once
            stored = [
                Event("done", replay_done(c)) for c in state.candidates if c.status == "ready"
            ]
            if stored:
                yield stored
            async for batch in run.batches(linger):
                yield batch
            return
        replay = []
        for c in state.candidates:
            if c.status == "ready":
                replay.append(Event("done", replay_done(c)))
            elif c.status == "failed":
                message = failure_message(c.slot, c.error)
                replay.append(Event("error", {"slot": c.slot, "message": message}))
        yield [*replay, Event("end", {"status": state.status})]

    async def events(
        self, turn_id: int, state: TurnState | None = None, run: TurnRun | None = None
    ) -> AsyncIterator[Event]:
        """:meth:`batches`, one event at a time."""
        async for batch in self.batches(turn_id, state, run):
            for event in batch:
                yield event

    async def shutdown(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            try:
                await task
            except BaseException:
                pass
        for backend in self.backends.values():
            try:
                await backend.aclose()
            except Exception as exc:  # closing must not stop the others closing
                log.warning("backend %s did not close cleanly: %s", backend.config.name, exc)
