"""Units of work from the event loop (:meth:`Storage.call`): on PostgreSQL on the loop itself,
through psycopg's async connections; on SQLite in a worker thread. Either way the loop goes on
while the database answers, every unit is one transaction, and the connections close with the
app (or with :meth:`Storage.dispose`, from any thread)."""

from __future__ import annotations

import asyncio
import collections
import threading
import time

import pytest
from sqlalchemy import func, select, text, update
from sqlalchemy.engine import make_url

from hhrlhf.collect.db import Storage, engine
from hhrlhf.collect.db.models import Annotator
from hhrlhf.collect.services import annotators


def _where(storage: Storage) -> tuple[int, bool]:
    """A unit of work that says which thread ran it, and whether through an async driver."""
    with storage.read() as s:
        s.execute(text("SELECT 1"))
        return threading.get_ident(), s.get_bind().dialect.is_async


def test_postgres_units_of_work_run_on_the_loop_sqlite_ones_in_a_thread(storage):
    async def main():
        return threading.get_ident(), await storage.call(_where)

    loop_thread, (ran_on, is_async) = asyncio.run(main())
    if storage.url.startswith("sqlite"):
        assert (ran_on != loop_thread, is_async) == (True, False)
    else:
        assert (ran_on, is_async) == (loop_thread, True)
    # outside a loop the same service code uses the plain engine
    assert _where(storage) == (threading.get_ident(), False)


def _sleep(storage: Storage, seconds: float) -> None:
    with storage.read() as s:
        if storage.url.startswith("sqlite"):
            time.sleep(seconds)  # in a worker thread: blocks only that thread
        else:
            s.execute(text("SELECT pg_sleep(:s)"), {"s": seconds})


def test_the_loop_goes_on_while_the_database_answers(storage):
    """A unit of work waiting 0.3 s on the database holds up nothing else on the loop."""

    async def main():
        ticks = 0
        stop = asyncio.Event()

        async def ticker():
            nonlocal ticks
            while not stop.is_set():
                await asyncio.sleep(0.01)
                ticks += 1

        task = asyncio.create_task(ticker())
        await asyncio.sleep(0)
        await asyncio.gather(*(storage.call(_sleep, 0.3) for _ in range(3)))
        stop.set()
        await task
        return ticks

    t0 = time.monotonic()
    ticks = asyncio.run(main())
    assert time.monotonic() - t0 < 0.9  # the three waits overlapped
    assert ticks >= 10, ticks  # ~30 ticks of 10 ms when nothing blocks the loop


def test_a_unit_of_work_is_one_transaction_rolled_back_on_error(storage):
    """A failure inside a unit of work leaves nothing of it behind."""

    def change_then_fail(st: Storage) -> None:
        with st.write() as s:
            s.execute(update(Annotator).values(role="admin"))
            raise RuntimeError("boom")

    async def main():
        await storage.call(annotators.add_annotator, "whole")
        with pytest.raises(RuntimeError, match="boom"):
            await storage.call(change_then_fail)
        await storage.close_loop()

    asyncio.run(main())
    with storage.read() as s:
        assert list(s.execute(select(Annotator.name, Annotator.role))) == [("whole", "annotator")]


def _connections(server, url: str) -> int:
    import psycopg

    name = make_url(url).database
    with psycopg.connect(server.conninfo(), autocommit=True) as c:
        row = c.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        ).fetchone()
    assert row is not None
    return int(row[0])


def _connections_left(server, url: str, within: float = 10.0) -> int:
    """The connections to ``url``'s database once they have closed, or as many as are left
    ``within`` seconds on. A client's close is only sent: its server process ends a moment
    later (longer on a busy machine), and is listed in pg_stat_activity until it has."""
    deadline = time.monotonic() + within
    while (left := _connections(server, url)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return left


@pytest.fixture
def pg_storage(postgres_server, _migrated_postgres):
    url = postgres_server.new_database(template=_migrated_postgres)
    st = Storage(url)
    yield postgres_server, st
    st.dispose()


def test_the_loops_connections_close_with_the_app(pg_storage):
    server, storage = pg_storage

    async def main():
        await asyncio.gather(*(storage.call(_sleep, 0.05) for _ in range(4)))
        opened = _connections(server, storage.url)
        await storage.close_loop()
        return opened

    assert asyncio.run(main()) >= 2  # the four overlapped on connections of their own
    assert _connections_left(server, storage.url) == 0


def test_dispose_closes_a_loop_running_in_another_thread(pg_storage):
    """A test's client runs its app's loop in a thread of its own: dispose() from here closes
    that loop's connections too, and the next request opens new ones."""
    from fastapi.testclient import TestClient

    from hhrlhf.collect.config import demo_settings
    from hhrlhf.collect.web.app import create_app

    server, storage = pg_storage
    _, token = annotators.add_annotator(storage, "alice")
    h = {"Authorization": f"Bearer {token}"}
    app = create_app(demo_settings(storage.url), storage=storage)
    with TestClient(app, base_url="http://testserver") as client:
        body = {"mode": "helpful", "task_description": "Cats"}
        assert client.post("/api/v1/conversations", json=body, headers=h).status_code == 201
        assert _connections(server, storage.url) >= 1
        storage.dispose()
        assert _connections_left(server, storage.url) == 0
        assert client.post("/api/v1/conversations", json=body, headers=h).status_code == 201
    assert _connections_left(server, storage.url) == 0  # the app's shutdown closed the new ones


def test_a_database_restart_is_not_seen_by_the_loops_units_of_work(pg_storage):
    """Every pooled connection cut by the server (what a PostgreSQL restart does): the next
    unit of work checks its connection first, reconnects, and succeeds. (The cut waits for
    each backend to end: one still ending as its connection is lent, a few milliseconds,
    is found by the unit's first statement, and that request is refused.)"""
    import psycopg

    server, storage = pg_storage

    async def main():
        await asyncio.gather(*(storage.call(_sleep, 0.05) for _ in range(3)))
        with psycopg.connect(server.conninfo(), autocommit=True) as c:
            cut = c.execute(
                "SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (make_url(storage.url).database,),
            ).fetchone()
        assert cut is not None and cut[0] >= 2
        who, _ = await storage.call(annotators.add_annotator, "after")
        await storage.close_loop()
        return who.name

    assert asyncio.run(main()) == "after"
    with storage.read() as s:
        assert s.scalar(select(func.count()).select_from(Annotator)) == 1


def _backend_pid(storage: Storage) -> int:
    with storage.read() as s:
        return int(s.execute(text("SELECT pg_backend_pid()")).scalar_one())


def test_pooled_connections_are_checked_without_a_round_trip(pg_storage, monkeypatch):
    """A pooled connection is lent after a look at its socket, not a ping (a statement per
    transaction, and on the loop a wait per statement): on the loop's engine and the
    threads' one, a connection the server ended while it was idle is replaced before the
    unit of work starts, and one still open is lent as it is."""
    import psycopg
    from sqlalchemy.engine import Dialect

    server, storage = pg_storage

    def no_ping(self, dbapi_connection):
        raise AssertionError("a statement was sent to check a pooled connection")

    monkeypatch.setattr(Dialect, "do_ping", no_ping)
    monkeypatch.setattr(type(storage.engine.dialect), "do_ping", no_ping)

    def cut(pid: int) -> None:
        with psycopg.connect(server.conninfo(), autocommit=True) as c:
            # waits for the backend to end: its goodbye is then on the pooled socket
            ended = c.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,)).fetchone()
            assert ended == (True,)

    async def loop_pids():
        first = await storage.call(_backend_pid)
        again = await storage.call(_backend_pid)
        cut(again)
        after = await storage.call(_backend_pid)
        await storage.close_loop()
        return first, again, after

    first, again, after = asyncio.run(loop_pids())
    assert first == again != after  # kept while open, replaced once ended
    first, again = _backend_pid(storage), _backend_pid(storage)
    cut(again)
    after = _backend_pid(storage)
    assert first == again != after


def test_pool_budget_is_split_between_the_loop_and_threads():
    """A worker's share of db_connections: most for the loop's units of work, the rest (two
    at least) for threads (pages, exports); four in all at the least."""
    split = {}
    for share in (2, 4, 10, 20, 40):
        loop = engine.loop_share(share)
        threads = engine.pool_sizes(share - loop)[0]
        split[share] = (loop, threads)
        assert loop + threads == max(share, 4)
    assert split == {2: (2, 2), 4: (2, 2), 10: (8, 2), 20: (15, 5), 40: (30, 10)}


async def _arrivals_and_admissions(gate, tasks: int = 300) -> tuple[list[int], list[int]]:
    import random

    rng = random.Random(5)
    arrived: list[int] = []
    admitted: list[int] = []

    async def unit(i: int):
        await asyncio.sleep(rng.uniform(0, 0.02))
        arrived.append(i)
        async with gate:
            admitted.append(i)
            await asyncio.sleep(rng.choice([0, 0, 0.001]))

    await asyncio.gather(*(unit(i) for i in range(tasks)))
    return arrived, admitted


class _Barging:
    """A gate as SQLAlchemy's async pool queue behaves: a freed slot goes to whoever asks
    first; a woken waiter that finds it gone queues again at the back."""

    def __init__(self, slots: int):
        self.free = slots
        self.waiting: collections.deque = collections.deque()

    async def __aenter__(self):
        while self.free == 0:
            waiter = asyncio.get_running_loop().create_future()
            self.waiting.append(waiter)
            await waiter
        self.free -= 1

    async def __aexit__(self, *exc):
        self.free += 1
        while self.waiting:
            waiter = self.waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)
                break


def test_the_gate_admits_in_order_of_arrival_even_when_a_slot_comes_free():
    """With every slot taken, a task that arrives just as one frees queues behind those
    already waiting; a barging gate lets it in first, and the same check finds that."""
    from hhrlhf.collect.db import _FairGate

    arrived, admitted = asyncio.run(_arrivals_and_admissions(_FairGate(3)))
    assert len(admitted) == 300 and admitted == arrived
    arrived, admitted = asyncio.run(_arrivals_and_admissions(_Barging(3)))
    assert len(admitted) == 300 and admitted != arrived


def test_a_cancelled_waiter_gives_its_place_and_any_slot_it_was_handed_to_the_next():
    from hhrlhf.collect.db import _FairGate

    async def main():
        gate = _FairGate(1)
        await gate.__aenter__()  # the one slot, held here
        gone, handed, last = (asyncio.create_task(gate.__aenter__()) for _ in range(3))
        await asyncio.sleep(0)  # all three wait
        gone.cancel()  # cancelled while waiting: leaves the queue
        await asyncio.sleep(0)
        await gate.__aexit__()  # the slot is handed to the next waiting ...
        handed.cancel()  # ... which is cancelled before it runs: the slot passes on
        results = await asyncio.wait_for(
            asyncio.gather(gone, handed, last, return_exceptions=True), 1
        )
        await gate.__aexit__()  # "last" leaves: the slot is free again
        await asyncio.wait_for(gate.__aenter__(), 1)
        return [type(r).__name__ for r in results]

    assert asyncio.run(main()) == ["CancelledError", "CancelledError", "NoneType"]


def test_a_database_that_refuses_connections_is_a_503_then_the_same_choice_is_stored(pg_storage):
    """PostgreSQL refusing new connections and every open one cut (a restart in progress):
    the choice is refused with 503 and nothing stored; sent again once the database takes
    connections, it is stored once."""
    import psycopg
    from fastapi.testclient import TestClient

    from hhrlhf.collect.config import demo_settings
    from hhrlhf.collect.services import transcripts
    from hhrlhf.collect.web.app import create_app

    server, storage = pg_storage
    name = make_url(storage.url).database
    _, token = annotators.add_annotator(storage, "alice")
    h = {"Authorization": f"Bearer {token}"}

    def allow(yes: bool) -> None:
        with psycopg.connect(server.conninfo(), autocommit=True) as c:
            c.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS {str(yes).lower()}')
            if not yes:
                c.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = %s AND pid <> pg_backend_pid()",
                    (name,),
                )

    app = create_app(demo_settings(storage.url), storage=storage)
    with TestClient(app, base_url="http://testserver") as client:
        body = {"mode": "helpful", "task_description": "Cats"}
        cid = client.post("/api/v1/conversations", json=body, headers=h).json()["id"]
        r = client.post(f"/api/v1/conversations/{cid}/turns", json={"text": "Hi"}, headers=h)
        tid = r.json()["id"]
        choice = {"pick": "a", "strength": 2, "request_id": "r1"}
        allow(False)
        try:
            r = client.post(f"/api/v1/turns/{tid}/choice", json=choice, headers=h)
        finally:
            allow(True)
        assert r.status_code == 503, r.text
        assert "nothing was saved" in r.json()["error"]
        r = client.post(f"/api/v1/turns/{tid}/choice", json=choice, headers=h)
        assert r.status_code == 200 and r.json()["turn"]["pick"] == "a"
    assert transcripts.counts(storage)["comparisons"] == 1
