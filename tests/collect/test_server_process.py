"""What the server process adds around the app: its own time on every response, a settled heap."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy import text

ROOT = Path(__file__).resolve().parents[2]
TIMING = re.compile(r'^app;dur=(\d+\.\d), sql;desc="(\d+)"$')


def _dur(response) -> float:
    m = TIMING.match(response.headers.get("server-timing", ""))
    assert m, response.headers.get("server-timing")
    return float(m.group(1))


def _statements(response) -> int:
    m = TIMING.match(response.headers.get("server-timing", ""))
    assert m, response.headers.get("server-timing")
    return int(m.group(2))


def test_every_response_says_how_long_the_app_took(storage, settings, alice):
    from hhrlhf.collect.web.app import create_app

    app = create_app(settings, storage=storage)

    @app.get("/slow")
    def slow():
        time.sleep(0.05)
        return {}

    client = TestClient(app, base_url="http://testserver", raise_server_exceptions=False)
    _, h, _ = alice
    cid = client.post("/api/v1/conversations", json={"task_description": "t"}, headers=h).json()
    turn = client.post(
        f"/api/v1/conversations/{cid['id']}/turns", json={"text": "hi"}, headers=h
    ).json()
    answers = [
        client.get("/api/v1/health"),
        client.get("/api/v1/me"),  # 401
        client.post(
            f"/api/v1/turns/{turn['id']}/choice", json={"pick": "a", "strength": 2}, headers=h
        ),
        client.get("/help"),
        client.get("/static/collect.js"),
        client.get(f"/api/v1/turns/{turn['id']}/stream", headers=h),
    ]
    assert [r.status_code for r in answers] == [200, 401, 200, 200, 200, 200]
    for r in answers:
        assert _dur(r) >= 0
        assert len(r.headers.get_list("server-timing")) == 1
    assert _dur(client.get("/slow")) >= 50.0  # the handler's own time is inside it
    # statements: none for the health check, some for a choice, none left counting after
    assert _statements(answers[0]) == 0
    assert _statements(answers[2]) >= 1
    assert _statements(client.get("/api/v1/health")) == 0
    client.close()


def test_the_statement_count_is_the_requests_own(storage, settings, alice):
    """``sql;desc`` counts exactly what the request sent: its reads and writes, in its thread
    pool call, and nothing of another request."""
    from hhrlhf.collect.db.engine import count_statements
    from hhrlhf.collect.web.app import create_app

    app = create_app(settings, storage=storage)

    @app.get("/three")
    def three():
        with storage.read() as s:
            for _ in range(3):
                s.execute(text("SELECT 1"))
        return {}

    client = TestClient(app, base_url="http://testserver", raise_server_exceptions=False)
    with count_statements() as outside:
        r = client.get("/three")
    # the three SELECTs, and SQLite's explicit BEGIN of a reading transaction
    assert _statements(r) == 3 + storage.url.startswith("sqlite")
    assert outside[0] == 0  # the test's context saw none of them (the app counted its own)
    client.close()


def test_the_server_factory_freezes_what_startup_made(tmp_path):
    """``hh serve``'s workers move their startup objects out of every later collection, and
    collect their young objects less often (:data:`GC_THRESHOLDS`).

    A full collection of the ~110,000 objects imports leave took 50-70 ms with the worker
    stopped: the PostgreSQL choice p99 of bench/bench_collect.py (bench/RESULTS-collect.md).
    """
    from hhrlhf.collect.db import Storage

    db = f"sqlite:///{tmp_path / 'c.db'}"
    storage = Storage(db)
    storage.upgrade()
    storage.dispose()
    code = (
        "import gc\n"
        "from hhrlhf.collect.serve.factory import create_app_from_env\n"
        "create_app_from_env()\n"
        "passes = []\n"
        "gc.callbacks.append(lambda phase, info: phase == 'stop' and passes.append(info))\n"
        "kept = [{} for _ in range(5000)]  # what requests in flight hold\n"
        "print(gc.get_freeze_count(), len(gc.get_objects()), len(passes))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HH_COLLECT_DB": db}
    env.pop("HH_COLLECT_CONFIG", None)
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout
    frozen, tracked, passes = map(int, out.split())
    assert frozen > 20_000  # the imports' objects and the app
    assert tracked < frozen / 10 + 5000  # what a full collection still walks
    # 5,000 new objects alive: Python's thresholds would have run 7 young passes
    assert passes == 0
