"""Concurrency across workers, on SQLite and PostgreSQL: one comparison per turn, one generator per turn.

Each "worker" here has its own :class:`Storage` (its own engine and connection pool, as a
separate ``hh serve`` process has), so it is the database, not a lock inside one process, that
has to keep the guarantees.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import replace
from datetime import timedelta

from hhrlhf.collect.db import Storage
from hhrlhf.collect.domain import TurnAnswer
from hhrlhf.collect.generation.runner import Generator
from hhrlhf.collect.services import annotators, choices, conversations, leases, transcripts
from hhrlhf.errors import Conflict

WORKERS = 20


def _ready_turn(storage, who):
    cid = conversations.create_conversation(storage, who, "helpful", "task").id
    tid = conversations.create_turn(storage, who, cid, "hello", ("m1", "m2")).id
    assert leases.acquire_lease(storage, tid, "w", 60) is not None
    status = leases.finish_generation(
        storage, tid, "w", {s: {"text": f"answer {s}", "raw_text": f"answer {s}"} for s in "ab"}
    )
    assert status == "ready"
    return cid, tid


def _race(n, fn):
    """Run ``fn(i)`` in ``n`` threads released at once; their results (or exceptions)."""
    barrier, results = threading.Barrier(n), [None] * n

    def one(i):
        barrier.wait()
        try:
            results[i] = fn(i)
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            results[i] = exc

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_twenty_workers_choosing_one_turn_store_one_comparison(storage, db_url):
    who, _ = annotators.add_annotator(storage, "alice")
    cid, tid = _ready_turn(storage, who)
    workers = [Storage(db_url) for _ in range(WORKERS)]
    try:
        results = _race(
            WORKERS,
            lambda i: choices.record_choice(
                workers[i], who, tid, pick="ab"[i % 2], strength=1 + i % 4, strength_points=4
            ),
        )
    finally:
        for w in workers:
            w.dispose()
    assert transcripts.counts(storage)["comparisons"] == 1
    stored = conversations.get_conversation(storage, who, cid).turns[0]
    answered = [r for r in results if isinstance(r, TurnAnswer)]
    refused = [r for r in results if not isinstance(r, TurnAnswer)]
    assert answered, results
    # every 2xx answer is the stored choice; every other answer is a 409, nothing else
    assert {(r.pick, r.strength) for r in answered} == {(stored.pick, stored.strength)}
    assert all(isinstance(r, Conflict) for r in refused), refused
    # sending the stored choice again gets the idempotent answer
    again = choices.record_choice(
        storage, who, tid, pick=stored.pick, strength=stored.strength, strength_points=4
    )
    assert (again.pick, again.strength) == (stored.pick, stored.strength)


def test_twenty_workers_racing_for_a_lease_one_wins(storage, db_url):
    who, _ = annotators.add_annotator(storage, "alice")
    cid = conversations.create_conversation(storage, who, "helpful", "task").id
    tid = conversations.create_turn(storage, who, cid, "hello", ("m1", "m2")).id
    workers = [Storage(db_url) for _ in range(WORKERS)]
    try:
        results = _race(WORKERS, lambda i: leases.acquire_lease(workers[i], tid, f"w{i}", 60))
    finally:
        for w in workers:
            w.dispose()
    assert not [r for r in results if isinstance(r, Exception)], results
    winners = [i for i, r in enumerate(results) if r is not None]
    assert len(winners) == 1
    assert leases.turn_state(storage, tid).status == "generating"


def test_workers_listening_to_the_same_turns_generate_each_once(storage, db_url, settings):
    """Several generators (one per worker) follow the same turns at once: each turn runs once."""
    who, _ = annotators.add_annotator(storage, "alice")
    turns = []
    for i in range(4):
        cid = conversations.create_conversation(storage, who, "helpful", f"task {i}").id
        turns.append(
            conversations.create_turn(storage, who, cid, f"hello {i}", ("demo-a", "demo-b")).id
        )
    slow = replace(
        settings,
        backends=tuple(replace(b, token_delay=0.005) for b in settings.backends),
    )
    calls: list[tuple[int, str]] = []
    lock = threading.Lock()

    def worker(i):
        st = Storage(db_url)
        gen = Generator(st, slow)
        for name, backend in gen.backends.items():
            real = backend.stream

            def counted(prompt, slot="a", _real=real, _name=name):
                with lock:
                    calls.append((prompt.human, _name))
                return _real(prompt, slot)

            backend.stream = counted

        async def follow_all():
            seen = {}
            for tid in turns:
                seen[tid] = [e async for e in gen.events(tid)]
            return seen

        try:
            return asyncio.run(follow_all())
        finally:
            st.dispose()

    results = _race(6, worker)
    assert not [r for r in results if isinstance(r, Exception)], results
    # one run per turn: each turn's two candidates were asked for once, across all workers
    assert sorted(calls) == sorted(
        (f"hello {i}", n) for i in range(4) for n in ("demo-a", "demo-b")
    )
    for tid in turns:
        assert leases.turn_state(storage, tid).status == "ready"
        # every worker saw the same two responses and the same end
        finals = {
            tuple(
                (e.name, e.data.get("slot"), e.data.get("text"))
                for e in r[tid]
                if e.name != "delta"
            )
            for r in results
        }
        assert len(finals) == 1, finals
        (final,) = finals
        assert final[-1] == ("end", None, None) and len(final) == 3


def test_a_live_run_renews_its_lease_and_keeps_the_turn(storage, settings):
    """A run slower than ``lease_seconds`` is not taken over: its heartbeat renews the lease.
    (The lease is 0.9 s, renewed every 0.3 s: a busy machine may delay a renewal by a good
    part of a second. The test waits for the renewals themselves, the lease's end moved past
    two lease lengths, not for a time it hopes is enough.)"""
    who, _ = annotators.add_annotator(storage, "alice")
    cid = conversations.create_conversation(storage, who, "helpful", "task").id
    tid = conversations.create_turn(storage, who, cid, "hello", ("demo-a", "demo-b")).id
    slow = replace(
        settings,
        lease_seconds=0.9,
        backends=tuple(replace(b, token_delay=0.1) for b in settings.backends),
    )
    gen = Generator(storage, slow)
    assert gen.lease_seconds == 0.9

    async def go():
        _, run = await gen.open(tid)
        assert run is not None
        first = (await storage.call(leases.turn_state, tid)).lease_until
        deadline = time.monotonic() + 30
        while (await storage.call(leases.turn_state, tid)).lease_until < first + timedelta(
            seconds=2 * 0.9
        ):  # renewed over more than two lease lengths
            assert not run.done and time.monotonic() < deadline
            await asyncio.sleep(0.05)
        assert not run.done
        taken = await asyncio.to_thread(leases.acquire_lease, storage, tid, "other-worker", 60)
        return taken, await run.wait()

    taken, status = asyncio.run(go())
    assert taken is None  # still held by the live run
    assert status == "ready"
    # once the run is over, nothing holds the turn
    state = leases.turn_state(storage, tid)
    assert state.status == "ready" and state.lease_until is None


def _exited_pid() -> int:
    """The PID of a process of this host that has exited (and been reaped)."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_crashed_workers_turn_is_taken_over_at_once_not_after_its_lease(storage, settings):
    """A worker of this host died mid-turn (an hh serve killed and restarted): the next listener
    generates the turn at once, though its lease still has a minute to run."""
    from hhrlhf.collect.generation import owners

    who, _ = annotators.add_annotator(storage, "alice")
    cid = conversations.create_conversation(storage, who, "helpful", "task").id
    tid = conversations.create_turn(storage, who, cid, "hello", ("demo-a", "demo-b")).id
    alive = owners.new_owner_id()
    dead = alive.replace(f"-{__import__('os').getpid()}-", f"-{_exited_pid()}-")
    assert owners.dead_here(dead) and not owners.dead_here(alive)
    assert leases.acquire_lease(storage, tid, dead, 60) is not None
    gen = Generator(storage, settings)

    async def listen():
        return [e.name async for e in gen.events(tid)]

    started = asyncio.run(asyncio.wait_for(listen(), timeout=10))
    assert started.count("done") == 2 and started[-1] == "end"
    assert leases.turn_state(storage, tid).status == "ready"


def test_a_lease_of_a_live_or_foreign_process_is_never_taken_early():
    import os

    from hhrlhf.collect.generation import owners

    me = owners.new_owner_id()
    host, namespace, pid, rand = me.split("-")
    gone = str(_exited_pid())
    assert not owners.dead_here(me)  # this process (another generator in it may be live)
    assert not owners.dead_here("-".join([host, namespace, str(os.getppid()), rand]))  # alive
    assert not owners.dead_here("-".join(["otherhost", namespace, gone, rand]))  # another host
    assert not owners.dead_here("-".join([host, "12345", gone, rand]))  # another PID namespace
    assert not owners.dead_here("-".join([host, "0", gone, rand]))  # no /proc: cannot tell
    assert not owners.dead_here("-".join([host, namespace, gone, rand]).replace(gone, "¹2"))
    assert not owners.dead_here("w") and not owners.dead_here(None)
    assert len(me) <= 64 and owners.dead_here("-".join([host, namespace, gone, rand]))
