"""A database that refuses writes (read-only, or a full disk): the choice is a clear 503, nothing is
stored, nothing is acknowledged, and the same choice sent again once the database is back is stored."""

from __future__ import annotations

from contextlib import contextmanager

from sqlalchemy import event
from sqlalchemy.engine import make_url

from hhrlhf.collect.services import transcripts


def _ready_turn(client, h):
    r = client.post(
        "/api/v1/conversations", json={"mode": "helpful", "task_description": "Cats"}, headers=h
    )
    cid = r.json()["id"]
    r = client.post(f"/api/v1/conversations/{cid}/turns", json={"text": "Why purr?"}, headers=h)
    assert r.status_code == 201 and len(r.json()["candidates"]) == 2
    return cid, r.json()["id"]


@contextmanager
def _sqlite_pragma(storage, pragma: str):
    """Every pooled connection runs ``pragma`` (a real SQLite refusal, not a mock)."""

    def on_checkout(dbapi_connection, _record, _proxy):
        dbapi_connection.execute(pragma)

    storage.engine.dispose()
    event.listen(storage.engine, "checkout", on_checkout)
    try:
        yield
    finally:
        event.remove(storage.engine, "checkout", on_checkout)
        storage.engine.dispose()


@contextmanager
def read_only(storage):
    if storage.url.startswith("sqlite"):
        with _sqlite_pragma(storage, "PRAGMA query_only = 1"):
            yield
        return
    name = make_url(storage.url).database
    with storage.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
        c.exec_driver_sql(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
    storage.dispose()  # every pooled connection, the event loop's too, opens anew
    try:
        yield
    finally:
        with storage.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
            c.exec_driver_sql("SET default_transaction_read_only = off")
            c.exec_driver_sql(f'ALTER DATABASE "{name}" RESET default_transaction_read_only')
        storage.dispose()


@contextmanager
def disk_full(storage):
    """SQLite's own 'database or disk is full': the file may not grow by one page (and has no
    free page left inside it: VACUUM first, else a write fits or not by the schema's layout)."""
    import sqlite3

    storage.engine.dispose()
    raw = sqlite3.connect(make_url(storage.url).database, isolation_level=None)
    try:
        raw.execute("VACUUM")
    finally:
        raw.close()
    with storage.engine.connect() as c:
        pages = c.exec_driver_sql("PRAGMA page_count").scalar()
    with _sqlite_pragma(storage, f"PRAGMA max_page_count = {pages}"):
        yield


def _choice_is_refused_then_stored(client, storage, h, tid, fault, message):
    before = transcripts.counts(storage)
    body = {"pick": "b", "strength": 3, "edit": "Cats purr when content. " * 200}
    with fault:
        r = client.post(f"/api/v1/turns/{tid}/choice", json=body, headers=h)
        assert r.status_code == 503, r.text
        assert message in r.json()["error"] and "nothing was saved" in r.json()["error"]
        # a read still works; the annotator's page can resend
        assert client.get("/api/v1/conversations", headers=h).status_code == 200
    assert transcripts.counts(storage) == before
    r = client.post(f"/api/v1/turns/{tid}/choice", json=body, headers=h)
    assert r.status_code == 200 and r.json()["turn"]["pick"] == "b"
    assert transcripts.counts(storage)["comparisons"] == before["comparisons"] + 2  # pick + edit


def test_a_read_only_database_refuses_the_choice_loudly(client, storage, alice):
    _, h, _ = alice
    _, tid = _ready_turn(client, h)
    msg = "read-only" if not storage.url.startswith("sqlite") else "readonly"
    _choice_is_refused_then_stored(client, storage, h, tid, read_only(storage), msg)


def test_a_full_disk_refuses_the_choice_loudly(sqlite_only, client, storage, alice):
    _, h, _ = alice
    _, tid = _ready_turn(client, h)
    _choice_is_refused_then_stored(client, storage, h, tid, disk_full(storage), "full")


def test_a_read_only_database_refuses_a_new_conversation(client, storage, alice):
    _, h, _ = alice
    with read_only(storage):
        r = client.post(
            "/api/v1/conversations", json={"mode": "helpful", "task_description": "x"}, headers=h
        )
    assert r.status_code == 503 and transcripts.counts(storage)["conversations"] == 0


async def _take_loop_connections(storage, n):
    """Check out ``n`` connections of the running loop's engine (PostgreSQL's units of work)."""
    import asyncio

    loop_engine = storage._loops[asyncio.get_running_loop()].engine
    assert loop_engine.sync_engine.pool.timeout() == 0.2
    return [await loop_engine.connect() for _ in range(n)]


async def _close_all(connections):
    for c in connections:
        await c.close()


def test_a_choice_that_finds_no_free_connection_is_503_and_can_be_resent(
    db_url, settings, storage, alice, monkeypatch
):
    """Every pooled connection of the worker held elsewhere for the pool's whole timeout: a
    real SQLAlchemy pool timeout, refused as 503 with Retry-After (not a 500); resent, stored."""
    from fastapi.testclient import TestClient

    from hhrlhf.collect.db import Storage, engine
    from hhrlhf.collect.web.app import create_app

    monkeypatch.setattr(engine, "POOL_TIMEOUT", 0.2)
    busy = Storage(db_url)
    assert busy.engine.pool.timeout() == 0.2
    _, h, _ = alice
    with TestClient(create_app(settings, storage=busy), base_url="http://testserver") as client:
        _, tid = _ready_turn(client, h)
        before = transcripts.counts(storage)
        every = engine.POOL_SIZE + engine.MAX_OVERFLOW
        if db_url.startswith("sqlite"):  # the choice's unit of work runs in a thread
            held = [busy.engine.connect() for _ in range(every)]
            release = lambda: [c.close() for c in held]  # noqa: E731
        else:  # on the event loop, through the loop's async engine
            loop_held = client.portal.call(_take_loop_connections, busy, every)
            release = lambda: client.portal.call(_close_all, loop_held)  # noqa: E731
        try:
            r = client.post(
                f"/api/v1/turns/{tid}/choice", json={"pick": "a", "strength": 2}, headers=h
            )
        finally:
            release()
        assert r.status_code == 503, r.text
        assert r.headers["retry-after"] == "1"
        assert "busy" in r.json()["error"] and "nothing was saved" in r.json()["error"]
        assert transcripts.counts(storage) == before
        r = client.post(f"/api/v1/turns/{tid}/choice", json={"pick": "a", "strength": 2}, headers=h)
        assert r.status_code == 200 and r.json()["turn"]["pick"] == "a"
    busy.dispose()


def test_a_hosts_connections_are_shared_by_its_workers(monkeypatch, postgres_server):
    """hh serve --workers N: each worker's pool is its share of db_connections, so a host's
    PostgreSQL connections stay within db_connections whatever N is."""
    import asyncio

    from hhrlhf.collect.db import Storage, engine
    from hhrlhf.collect.serve.factory import create_app_from_env

    assert engine.pool_sizes(40) == (40, 0) and engine.pool_sizes(1) == (2, 0)
    assert [engine.worker_connections(40, n) for n in (1, 2, 4, 64)] == [40, 20, 10, 2]
    url = postgres_server.url()
    monkeypatch.setenv("HH_COLLECT_DB", url)
    monkeypatch.delenv("HH_COLLECT_CONFIG", raising=False)
    assert [engine.loop_share(n) for n in (40, 10, 4, 2)] == [30, 8, 2, 2]

    async def pools(storage):  # threads' and the event loop's
        await storage.call(lambda _storage: None)  # the loop's engine is made on first use
        loop_pool = storage._loops[asyncio.get_running_loop()].engine.sync_engine.pool
        out = [(p.size(), p._max_overflow) for p in (storage.engine.pool, loop_pool)]
        await storage.close_loop()
        return out

    for workers, threads, loop in ((1, 10, 30), (4, 2, 8)):
        monkeypatch.setenv("HH_COLLECT_WORKERS", str(workers))
        storage = create_app_from_env().state.context.storage
        assert asyncio.run(pools(storage)) == [(threads, 0), (loop, 0)]
        assert threads + loop == engine.worker_connections(40, workers)
        storage.dispose()
    lone = Storage(url).engine.pool  # the CLI's commands
    assert (lone.size(), lone._max_overflow) == (engine.POOL_SIZE, engine.MAX_OVERFLOW)
