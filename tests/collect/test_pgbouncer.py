"""The app through PgBouncer in transaction mode (Debian's package, once): more client
connections than the pooler's server connections, every choice stored once, the export whole.

Transaction pooling hands each transaction whichever server connection is free, so a client
that keeps session state or server-side prepared statements breaks under it. The app keeps no
session state; its prepared statements (psycopg's, on by default) are turned off by
``?prepare_threshold=none`` in the URL, and without it the failure names that fix."""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import replace

import pytest
from test_api import choose, say, start

from hhrlhf.collect.config import demo_settings
from hhrlhf.collect.db import Storage
from hhrlhf.collect.services import annotators, transcripts

ANNOTATORS = 12
TURNS = 4
POOL = 3


@pytest.fixture
def bouncer(start_pgbouncer):
    return start_pgbouncer(POOL)


def test_the_app_through_pgbouncer_in_transaction_mode(bouncer, postgres_server, tmp_path, report):
    import psycopg
    from fastapi.testclient import TestClient
    from sqlalchemy.engine import make_url

    from hhrlhf.collect.web.app import create_app

    name = make_url(postgres_server.new_database()).database
    url = bouncer.url(name) + "&prepare_threshold=none"
    storage = Storage(url, connections=ANNOTATORS + 2)
    storage.upgrade()  # the migrations run through the pooler too
    tokens = [annotators.add_annotator(storage, f"a{i}")[1] for i in range(ANNOTATORS)]
    app = create_app(replace(demo_settings(url), seed=7), storage=storage)

    seen = {"server": 0, "client": 0}
    done = threading.Event()

    def watch():  # server connections to the database (direct), client ones in our pool
        with psycopg.connect(postgres_server.conninfo(), autocommit=True) as conn:
            while not done.is_set():
                (n,) = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (name,)
                ).fetchone()
                seen["server"] = max(seen["server"], n)
                in_use = storage.engine.pool.checkedout() + sum(
                    db.engine.sync_engine.pool.checkedout() for db in list(storage._loops.values())
                )
                seen["client"] = max(seen["client"], in_use)
                time.sleep(0.005)

    errors: list[str] = []

    def annotate(client, token):
        h = {"Authorization": f"Bearer {token}"}
        try:
            cid = start(client, h)
            for k in range(TURNS):
                turn = say(client, h, cid, text=f"How do I keep basil alive, part {k}?")
                r = choose(client, h, turn["id"], pick="ab"[k % 2], strength=1 + k % 4)
                if r.status_code != 200:
                    errors.append(r.text)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(repr(exc))

    watcher = threading.Thread(target=watch)
    watcher.start()
    t0 = time.monotonic()
    try:
        with TestClient(app, base_url="http://testserver") as client:
            threads = [threading.Thread(target=annotate, args=(client, t)) for t in tokens]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    finally:
        done.set()
        watcher.join()
    elapsed = time.monotonic() - t0
    assert not errors, errors[:3]
    assert transcripts.counts(storage)["comparisons"] == ANNOTATORS * TURNS
    import gzip

    from hhrlhf.collect.services.export import export_collection

    out = tmp_path / "export"
    export_collection(storage, out, min_strength=1, test_fraction=0.0, include_unfinished=True)
    lines = sum(len(gzip.open(f).read().splitlines()) for f in out.rglob("*.jsonl.gz"))
    assert lines == ANNOTATORS * TURNS
    # the pooler held the server side to its pool while more clients were connected
    assert seen["server"] <= POOL + 1  # + the pooler's own check connection at most
    assert seen["client"] > POOL
    storage.dispose()
    report(
        f"pgbouncer (transaction mode, {POOL} server connections): {ANNOTATORS} annotators x "
        f"{TURNS} turns through up to {seen['client']} client connections in {elapsed:.1f} s, "
        f"0 errors, {ANNOTATORS * TURNS} choices stored once"
    )


def test_prepared_statements_through_the_pooler_fail_with_the_fix_named(
    postgres_server, start_pgbouncer
):
    """Without ``?prepare_threshold=none``, a client connection's statement prepared on one
    server connection is not there when the pooler gives its next transaction another one:
    the error a client is given says what to add to the URL."""
    from sqlalchemy import text
    from sqlalchemy.engine import make_url

    from hhrlhf.collect.db.errors import DATABASE_ERRORS, as_unavailable, pooler_trouble

    name = make_url(postgres_server.new_database()).database
    pooler = start_pgbouncer(2)
    try:
        storage = Storage(pooler.url(name) + "&prepare_threshold=0")  # prepare at once
        first, second = storage.engine.connect(), storage.engine.connect()
        try:
            first.execute(text("SELECT 1")).scalar()  # prepared on server connection 1
            first.commit()
            second.execute(text("SELECT 2")).scalar()  # its open transaction holds 1
            with pytest.raises(DATABASE_ERRORS) as info:  # on server connection 2
                first.execute(text("SELECT 1")).scalar()
        finally:
            for conn in (first, second):
                with contextlib.suppress(*DATABASE_ERRORS):
                    conn.close()
            storage.dispose()
    finally:
        pooler.stop()
    assert pooler_trouble(info.value)
    assert "add ?prepare_threshold=none to the --db URL" in str(as_unavailable(info.value))
