"""Load and kill tests against a real ``hh serve --workers 2`` on loopback (SQLite and PostgreSQL).

Load: 50 scripted annotators at once (the demo backend with a per-word delay), each doing
``TURNS`` turns: zero errors, every acknowledged choice stored exactly once, p50/p99 reported
(in the test summary). Kill: SIGKILL the whole server process group during that load, restart it,
and find every choice acknowledged before the kill in the database and in ``hh collect export``,
the database intact, and every turn that was generating generated again (or failed), never stuck.

The clients are bench/bench_collect.py's; the benchmark is the same script at 50 x 10. Here the
turns per annotator are fewer (CI shares two cores): the concurrency (50 annotators, two worker
processes, one database) is the same, only the run is shorter.
"""

from __future__ import annotations

import asyncio
import gzip
import importlib.util
import os
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import httpx
import orjson
import pytest
from serving import wait_until_serving
from sqlalchemy import text

from hhrlhf.collect.serve.workers import free_port
from hhrlhf.collect.services import annotators

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("bench_collect", ROOT / "bench" / "bench_collect.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

pytestmark = pytest.mark.load

ANNOTATORS, TURNS = 50, 4
KILL_ANNOTATORS, KILL_AFTER = 20, 30  # SIGKILL once this many choices are acknowledged
LEASE = 2.0  # seconds: how soon a dead worker's turn is taken over after the restart


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src")}


@contextmanager
def serve(db_url: str, tmp_path: Path, config: Path, *, workers: int = 2):
    """``hh serve --workers N`` in its own process group; yields the Popen with ``.base`` set."""
    port = free_port("127.0.0.1")
    cmd = [sys.executable, "-m", "hhrlhf", "serve", "--config", str(config), "--db", db_url,
           "--port", str(port), "--workers", str(workers)]  # fmt: skip
    log_path = tmp_path / f"serve-{port}.log"
    log = open(log_path, "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(cmd, env=_env(), stdout=log, stderr=log, start_new_session=True)
    proc.base = f"http://127.0.0.1:{port}"
    try:
        proc.started_in = wait_until_serving(proc, proc.base, log=log_path.read_text)
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        log.close()


def _config(tmp_path: Path, delay: float) -> Path:
    """Two demo backends answering at ``delay`` seconds per word; a short lease."""
    path = tmp_path / "collect.toml"
    path.write_text(
        f"[collect]\nlease_seconds = {LEASE}\nrate_writes_per_minute = 100000\n"
        + "".join(
            f'[[backend]]\nname = "demo-{v}"\nkind = "demo"\nmodel = "sample"\n'
            f"token_delay = {delay}\nvariant = {i}\n"
            for i, v in enumerate("ab")
        )
    )
    return path


def _stored_picks(storage) -> dict[int, list[tuple[str, int]]]:
    out: dict[int, list] = {}
    with storage.engine.connect() as c:
        rows = c.execute(
            text("SELECT turn_id, pick, strength FROM comparisons WHERE kind = 'pick'")
        )
        for tid, pick, strength in rows:
            out.setdefault(tid, []).append((pick, strength))
    return out


def _tokens(storage, n: int, prefix: str) -> list[str]:
    return [annotators.add_annotator(storage, f"{prefix}-{i}")[1] for i in range(n)]


def test_fifty_annotators_on_two_workers(storage, db_url, tmp_path, report):
    tokens = _tokens(storage, ANNOTATORS, "load")
    with serve(db_url, tmp_path, _config(tmp_path, 0.002)) as server:
        res = asyncio.run(bench.run_clients(server.base, tokens, TURNS))
        racing = asyncio.run(_twenty_choices_at_once(server.base, tokens[0]))
    assert res["errors"] == []
    assert len(res["acked"]) == ANNOTATORS * TURNS
    stored = _stored_picks(storage)
    for tid, pick, strength in res["acked"]:
        assert stored[tid] == [(pick, strength)]  # exactly once, as acknowledged
    assert sum(len(v) for t, v in stored.items() if t != racing[0]) == ANNOTATORS * TURNS
    # 20 choices for one turn at once, spread over both workers: one comparison stored
    tid, answers = racing
    assert len(stored_after := _stored_picks(storage)[tid]) == 1
    assert {code for code, _ in answers} <= {200, 409}
    assert {got for code, got in answers if code == 200} == {stored_after[0]}
    # every choice's answer said how long the server took (Server-Timing), within what the client saw
    assert len(res["choice_server"]) == len(res["choice"])
    assert 0 < max(res["choice_server"]) and sum(res["choice_server"]) < sum(res["choice"])
    ms = lambda q: 1000 * bench.pct(res["choice"], q)  # noqa: E731
    report(
        f"load ({db_url.split(':')[0]}): {ANNOTATORS} annotators x {TURNS} turns on 2 workers "
        f"in {res['elapsed']:.1f} s (server start {server.started_in:.1f} s), 0 errors, {len(res['acked'])} choices stored once; "
        f"choice p50 {ms(50):.0f} ms, p99 {ms(99):.0f} ms (load average {os.getloadavg()[0]:.1f})"
    )


@pytest.mark.parametrize(("way", "per_turn"), [("post", 2), ("get", 3)])
def test_annotators_streaming_as_the_page_does(storage, db_url, tmp_path, way, per_turn):
    """The bench's ``--stream`` annotators: each message's responses read as events, from the
    message's own answer (``post``: the page's way) or from the turn's stream after a message
    sent without waiting (``get``), then the choice; every choice stored once."""
    n, turns = 10, 3
    tokens = _tokens(storage, n, "stream")
    with serve(db_url, tmp_path, _config(tmp_path, 0.002)) as server:
        res = asyncio.run(bench.run_clients(server.base, tokens, turns, stream=way))
    assert res["errors"] == []
    assert len(res["acked"]) == len(res["turns"]) == n * turns
    stored = _stored_picks(storage)
    assert {tid: stored[tid] for tid, _, _ in res["acked"]} == {
        tid: [(pick, strength)] for tid, pick, strength in res["acked"]
    }
    # a start, per turn a message (its stream too with get) and a choice, and a finish
    assert res["requests"] == n * (1 + per_turn * turns + 1)


async def _twenty_choices_at_once(base: str, token: str):
    """A new turn, then 20 different choices for it sent at once (separate connections)."""
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as c:
        cid = (
            await c.post(
                "/api/v1/conversations", json={"mode": "helpful", "task_description": "race"}
            )
        ).json()["id"]
        turn = (await c.post(f"/api/v1/conversations/{cid}/turns", json={"text": "hi"})).json()
    assert turn["status"] == "ready"

    async def choose(i):
        body = {"pick": "ab"[i % 2], "strength": 1 + i % 4}
        async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as c:
            r = await c.post(f"/api/v1/turns/{turn['id']}/choice", json=body)
        turn_now = r.json()["turn"] if r.status_code == 200 else None
        got = (turn_now["pick"], turn_now["strength"]) if turn_now else None
        return r.status_code, got

    return turn["id"], await asyncio.gather(*(choose(i) for i in range(20)))


async def _until_killed(base: str, tokens: list[str], out: dict) -> None:
    async def one(i, tok):
        try:
            await bench.annotator(base, tok, 1000, i, out, 0.0)
        except (httpx.HTTPError, OSError) as exc:
            out["errors"].append(repr(exc))

    await asyncio.gather(*(one(i, t) for i, t in enumerate(tokens)))


async def _generate_again(base: str, headers: dict, turn_ids: list[int]) -> None:
    """Listen to each open turn (as its page would) until it is ready; a failed one is retried."""
    deadline = time.monotonic() + 30

    async def one(c, tid):
        while True:
            r = await c.get(f"/api/v1/turns/{tid}/stream")
            assert r.status_code == 200, r.text
            end = r.text.rsplit("event: end", 1)[-1]
            if '"ready"' in end:
                return
            assert '"failed"' in end, r.text[-300:]  # it ended: not stuck
            assert (await c.post(f"/api/v1/turns/{tid}/retry")).status_code == 200
            assert time.monotonic() < deadline, f"turn {tid} keeps failing: {r.text[-300:]}"

    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=30) as c:
        await asyncio.gather(*(one(c, tid) for tid in turn_ids))


def _export(db_url: str, out: Path) -> list[dict]:
    p = subprocess.run(
        [sys.executable, "-m", "hhrlhf", "collect", "export", "--db", db_url, "--out", str(out),
         "--include-unfinished", "--min-strength", "1", "--test-fraction", "0"],
        env=_env(), capture_output=True, text=True,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    return [
        orjson.loads(line)
        for f in sorted(out.rglob("*.jsonl.gz"))
        for line in gzip.open(f).read().splitlines()
    ]


def test_kill_during_load_loses_no_acknowledged_choice(storage, db_url, tmp_path, report):
    tokens = _tokens(storage, KILL_ANNOTATORS, "kill")
    config = _config(tmp_path, 0.005)
    out = bench.new_tally()
    t0 = time.monotonic()
    with serve(db_url, tmp_path, config) as server:

        async def load_then_kill():
            clients = asyncio.create_task(_until_killed(server.base, tokens, out))
            while len(out["acked"]) < KILL_AFTER:
                assert not clients.done(), out["errors"][:3]
                await asyncio.sleep(0.02)
            os.killpg(server.pid, signal.SIGKILL)  # the whole group: the master and its workers
            await clients

        asyncio.run(load_then_kill())
        server.wait()
        starts = [server.started_in]
    acked = list(out["acked"])
    assert len(acked) >= KILL_AFTER and out["errors"]  # the kill cut requests off
    with storage.engine.connect() as c:
        cut = c.execute(text("SELECT count(*) FROM turns WHERE status <> 'ready'")).scalar()

    # before any restart: every acknowledged choice is in the database, exactly once
    stored = _stored_picks(storage)
    for tid, pick, strength in acked:
        assert stored[tid] == [(pick, strength)]
    if db_url.startswith("sqlite"):
        with storage.engine.connect() as c:
            assert c.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
            assert c.exec_driver_sql("PRAGMA foreign_key_check").all() == []

    # restart: a turn left pending or generating is generated again (or fails), never stuck
    with serve(db_url, tmp_path, config) as server:
        with storage.engine.connect() as c:
            open_turns = [
                r[0] for r in c.execute(text("SELECT id FROM turns WHERE status <> 'ready'"))
            ]
        admin = {
            "Authorization": f"Bearer {annotators.add_annotator(storage, 'kill-admin', role='admin')[1]}"
        }
        t_restart = time.monotonic()
        asyncio.run(_generate_again(server.base, admin, open_turns))
        restart_s = time.monotonic() - t_restart
        starts.append(server.started_in)
    with storage.engine.connect() as c:
        assert c.execute(text("SELECT count(*) FROM turns WHERE status <> 'ready'")).scalar() == 0
        assert (
            c.execute(text("SELECT count(*) FROM turns WHERE lease_owner IS NOT NULL")).scalar()
            == 0
        )
        cands = {
            (tid, slot): (txt, cut)
            for tid, slot, txt, cut in c.execute(
                text("SELECT turn_id, slot, text, cut FROM candidates")
            )
        }
        prefix = dict(c.execute(text("SELECT id, prefix FROM turns")).all())

    # every acknowledged choice is in the export, the picked response chosen over the other
    exported = _export(db_url, tmp_path / "export")
    manifest = orjson.loads((tmp_path / "export" / "manifest.json").read_bytes())
    rows = {(r["chosen"], r["rejected"]) for r in exported}
    left_out = {"cut": 0, "identical": 0}
    for tid, pick, _ in acked:
        (better, cut_a), (worse, cut_b) = cands[tid, pick], cands[tid, "b" if pick == "a" else "a"]
        if cut_a or cut_b or better == worse:  # left out by design, and counted
            left_out["cut" if cut_a or cut_b else "identical"] += 1
            continue
        row = (f"{prefix[tid]} {better}", f"{prefix[tid]} {worse}")
        assert row in rows, f"turn {tid}'s acknowledged choice is missing from the export"
    for reason, n in left_out.items():
        assert manifest["left_out"][reason] >= n
    report(
        f"kill ({db_url.split(':')[0]}): SIGKILL after {len(acked)} acknowledged choices "
        f"({len(out['errors'])} requests cut, {cut} turns left unfinished); after the restart "
        f"all {len(acked)} stored once and exported, {len(open_turns)} open turns generated in "
        f"{restart_s:.1f} s; {time.monotonic() - t0:.1f} s in all, of which "
        f"{sum(starts):.1f} s starting the server twice (load average {os.getloadavg()[0]:.1f})"
    )


def test_the_bench_writes_its_report_and_leaves_no_temporary_folder(tmp_path, monkeypatch):
    """``bench_collect.py`` end to end, smallest: the report, and nothing left in the temporary
    folder (each run's SQLite file and server log were left behind, ~7 MB a run)."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    out = tmp_path / "report.md"
    args = ["--annotators", "2", "--turns", "1", "--workers", "1", "--think", "0"]
    assert bench.main([*args, "--stream", "--out", str(out)]) == 0
    report = out.read_text()
    assert "2 choices acknowledged, 2 found stored as acknowledged" in report
    assert "--stream post" in report and "0 errors" in report
    assert list(scratch.iterdir()) == []
