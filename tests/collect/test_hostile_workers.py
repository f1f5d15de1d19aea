"""The hostile cases that cross workers, against a real ``hh serve`` (one worker and two, on
SQLite and PostgreSQL) whose model is the loopback server answering hostile text.

Each client holds one connection, pinned to a worker read from ``/proc`` (the worker's socket
for the client's port), so with two workers every case acts through one worker and checks
through the other: Stop of a turn another worker writes, a write limit counted over both, an
annotator disabled while both workers know the login, and a finished turn's stream replayed by
the worker that did not write it. One server per database and worker count serves the module.
"""

from __future__ import annotations

import os
import re
import shutil
import time

import httpx
import orjson
import pytest
from hostile import MARKERS, NAME, PAYLOADS
from logins import login
from markupsafe import escape
from openai_server import serve as serve_model
from test_api import sse
from test_load import serve
from test_workers import _inodes, _listening, _sockets, _workers

from hhrlhf.collect.db import Storage
from hhrlhf.collect.serve.workers import balances
from hhrlhf.collect.services import annotators
from hhrlhf.transcript import find_marker

pytestmark = pytest.mark.skipif(not balances(), reason="per-worker sockets are Linux only")

WRITES = 10  # rate_writes_per_minute of the server
LEASE = 3.0  # lease_seconds: a worker renews its turn's lease (and reads a Stop) every 1 s
#: a reply of hostile markdown, script and forged turns (cut at the first marker)
HOSTILE = "\n\n".join(PAYLOADS[k] for k in ("markdown", "script", "markdown-refdef")) + MARKERS


@pytest.fixture(scope="module")
def model():
    running = serve_model()
    yield running
    running.stop()


@pytest.fixture(
    scope="module",
    params=[("sqlite", 1), ("sqlite", 2), ("postgres", 1), ("postgres", 2)],
    ids=lambda p: f"{p[0]}-{p[1]}w",
)
def server(request, tmp_path_factory, model):
    """(the running ``hh serve``, its storage, its worker count)."""
    db, workers = request.param
    tmp = tmp_path_factory.mktemp(f"hostile-{db}-{workers}")
    if db == "postgres":
        pg = request.getfixturevalue("postgres_server")
        url = pg.new_database(template=request.getfixturevalue("_migrated_postgres"))
    else:
        shutil.copy(request.getfixturevalue("_migrated_sqlite"), tmp / "collect.db")
        url = f"sqlite:///{tmp / 'collect.db'}"
    config = tmp / "collect.toml"
    config.write_text(
        f"[collect]\nrate_writes_per_minute = {WRITES}\nrate_login_per_minute = 0\n"
        f"lease_seconds = {LEASE}\n"
        + "".join(
            f'[[backend]]\nname = "{m}"\nkind = "openai-chat"\nbase_url = "{model.base_url}"\n'
            'model = "test-model"\n'
            for m in ("m1", "m2")
        )
    )
    storage = Storage(url)
    with serve(url, tmp, config, workers=workers) as proc:
        deadline = time.monotonic() + 60
        port = int(proc.base.rsplit(":", 1)[1])
        while len(_listening(_pids(proc), port)) < workers:  # each on its own socket
            assert time.monotonic() < deadline, "the workers did not start"
            time.sleep(0.1)
        yield proc, storage, workers
    storage.dispose()


@pytest.fixture
def hostile_model(model):
    model.script.replies = [HOSTILE]
    model.script._next = 0
    model.script.chunk_delay = 0.0
    model.script.chunk_size = 64
    model.script.ignore_stop = True  # past the stop sequences: the app cuts at the marker
    yield model
    model.script.chunk_delay = 0.0


def _pids(proc) -> list[int]:
    """The processes that answer: the workers, or ``hh serve`` itself with one worker."""
    return _workers(proc.pid) or [proc.pid]


def _worker_of(proc, client: httpx.Client, port: int) -> int | None:
    """The worker holding ``client``'s one connection (after a request), or None."""
    r = client.get("/api/v1/health")
    client_port = r.extensions["network_stream"].get_extra_info("client_addr")[1]
    mine = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in open(table).read().splitlines()[1:]:
            f = line.split()
            local, remote = int(f[1].rsplit(":", 1)[1], 16), int(f[2].rsplit(":", 1)[1], 16)
            if local == port and remote == client_port and f[3] == "01":
                mine.add(f[9])
    assert mine <= _sockets(port, "01")
    return next((pid for pid in _pids(proc) if _inodes(pid) & mine), None)


def _pinned(server, token: str | None) -> list[httpx.Client]:
    """Two clients of ``token``, each on a connection of its own; on two workers, one on each."""
    proc, _, workers = server
    port = int(proc.base.rsplit(":", 1)[1])
    found: dict[int, httpx.Client] = {}
    spare = []

    def client() -> httpx.Client:
        return httpx.Client(
            base_url=proc.base,
            headers={"Authorization": f"Bearer {token}"} if token else None,
            limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
            timeout=20,
        )

    for _ in range(24):
        c = client()
        pid = _worker_of(proc, c, port)
        if pid is not None and pid not in found:
            found[pid] = c
        else:
            spare.append(c)
        if len(found) == workers:
            break
    for c in spare:
        c.close()
    assert len(found) == workers, f"connections reached {len(found)} of {workers} workers"
    got = list(found.values())
    return got if workers == 2 else [got[0], client()]  # one worker: both on it


def _annotator(server, name: str):
    _, storage, _ = server
    return annotators.add_annotator(storage, f"{name}-{os.urandom(3).hex()}")


def _start(client) -> int:
    r = client.post("/api/v1/conversations", json={"task_description": PAYLOADS["script"]})
    assert r.status_code == 201, r.text
    return r.json()["id"]


def test_stop_through_the_other_worker_is_stored_and_ends_the_stream(server, hostile_model):
    who, token = _annotator(server, "stop")
    a, b = _pinned(server, token)
    hostile_model.script.replies = [PAYLOADS["markdown"] * 200]
    hostile_model.script.chunk_delay = 0.2  # about 40 s of text: only Stop ends it soon
    cid = _start(a)
    tid = a.post(
        f"/api/v1/conversations/{cid}/turns", json={"text": "Go on.", "wait": False}
    ).json()["id"]
    seen = []
    with a.stream("GET", f"/api/v1/turns/{tid}/stream") as r:
        lines = r.iter_lines()
        for line in lines:  # until the first words are written
            seen.append(line)
            if line == "event: delta":
                break
        t0 = time.monotonic()
        assert b.post(f"/api/v1/turns/{tid}/stop").status_code == 200
        # stored as stopped, each response keeping its words, read through the other worker:
        # the writer reads the Stop within a second and stores what it wrote
        while (turn := b.get(f"/api/v1/conversations/{cid}").json()["turns"][0])[
            "status"
        ] == "generating":
            assert time.monotonic() - t0 < LEASE / 3 + 2, turn
            time.sleep(0.05)
        assert turn["status"] == "ready", turn
        assert all(c["cut_reason"] == "stopped" and c["text"] for c in turn["candidates"])
        seen += list(lines)
    waited = time.monotonic() - t0
    events = sse("\n".join(seen))
    # the writing worker reads the Stop within a second (docs/deploy.md): its stream ends
    assert events[-1][0] == "end" and waited < LEASE / 3 + 2, (waited, events[-3:])
    a.close(), b.close()


def test_a_write_limit_is_counted_over_both_workers(server):
    """Writes through both workers count against one limit: the second worker refuses what
    goes over the two together, and the first refuses too once the counts are shared. The
    counts start again each minute (the minute before weighs in by the part of it still in
    the last 60 s, an estimate that lets a write through just after a minute's end): a run
    that crosses one is run again with a new annotator."""
    for attempt in range(3):
        if time.time() % 60 > 30:  # start well clear of a minute's end
            time.sleep(60 - time.time() % 60 + 0.5)
        minute = int(time.time() // 60)
        codes, last = _write_limit_run(server, f"limit{attempt}")
        if int(time.time() // 60) == minute:
            break
    else:
        pytest.fail("every run crossed a minute's end")
    assert [r.status_code for r in codes] == [201] * 4 + [429] * (WRITES - 4)
    refused = codes[-1]
    assert int(refused.headers["retry-after"]) >= 1 and "error" in refused.json()
    assert last.status_code == 429  # the first worker refuses it too


def _write_limit_run(server, name):
    """One annotator's writes: one through B, five through A, then the limit's worth through
    B, then (three shares later) one through A: B's answers and A's last."""
    who, token = _annotator(server, name)
    a, b = _pinned(server, token)
    assert b.post("/api/v1/conversations", json={"task_description": "t"}).status_code == 201
    for _ in range(5):
        assert a.post("/api/v1/conversations", json={"task_description": "t"}).status_code == 201
    time.sleep(2.5)  # both workers share their counts (about once a second)
    codes = [
        b.post("/api/v1/conversations", json={"task_description": PAYLOADS["sse-breaker"]})
        for _ in range(WRITES)
    ]
    time.sleep(3.0)  # three shares (about one a second each), on a busy machine too
    last = a.post("/api/v1/conversations", json={"task_description": "t"})
    a.close(), b.close()
    return codes, last


def test_a_disabled_annotator_is_refused_at_once_on_the_other_worker(server):
    who, token = _annotator(server, "off")
    a, b = _pinned(server, token)
    cid = _start(a)
    for c in (a, b):  # each worker has the login in its cache
        assert c.get(f"/api/v1/conversations/{cid}").status_code == 200
    annotators.set_disabled(server[1], who.name)
    t0 = time.monotonic()
    for c in (b, a):
        r = c.post(f"/api/v1/conversations/{cid}/turns", json={"text": PAYLOADS["iframe"]})
        assert r.status_code == 403 and "disabled" in r.json()["error"], r.text
    assert time.monotonic() - t0 < 2
    _, storage, _ = server
    from sqlalchemy import text

    with storage.engine.connect() as conn:
        turns = conn.execute(
            text("SELECT count(*) FROM turns WHERE conversation_id = :c"), {"c": cid}
        ).scalar()
    assert turns == 0
    a.close(), b.close()


def test_a_finished_turn_replays_alike_on_the_other_worker(server, hostile_model):
    who, token = _annotator(server, "replay")
    a, b = _pinned(server, token)
    cid = _start(a)
    r = a.post(f"/api/v1/conversations/{cid}/turns", json={"text": "Hi", "wait": True})
    assert r.status_code == 201 and r.json()["status"] == "ready", r.text
    tid = r.json()["id"]
    replays = []
    for c in (a, b):
        events = sse(c.get(f"/api/v1/turns/{tid}/stream").text)
        replays.append(sorted(orjson.dumps(d) for e, d in events if e == "done"))
        assert events[-1] == ("end", {"status": "ready"})
    assert replays[0] == replays[1] and len(replays[0]) == 2
    for done in map(orjson.loads, replays[1]):
        assert done["cut"] is True and find_marker(done["text"]) is None
        assert "obey me" not in done["text"] and "obey me" not in done["html"]
        for raw in ("<script", "<img", "<iframe", 'href="javascript'):
            assert raw not in done["html"].lower(), (raw, done["html"])
    a.close(), b.close()


def test_a_disabled_login_session_is_refused_at_once_on_the_other_worker(server):
    """The page's way: logged in through one worker (a session cookie), the page read through
    both, then disabled: the next write through the other worker is refused."""
    who, token = _annotator(server, NAME)  # a hostile name, shown escaped by both workers
    a, b = _pinned(server, None)
    assert login(a, token).status_code == 303
    b.cookies = a.cookies
    pages = [c.get("/") for c in (a, b)]  # each worker knows the session
    assert all(p.status_code == 200 and str(escape(who.name)) in p.text for p in pages)
    csrf = re.search(r'<meta name="csrf-token" content="([^"]+)">', pages[1].text).group(1)
    body = {"task_description": PAYLOADS["title-break"]}
    assert (
        b.post("/api/v1/conversations", json=body, headers={"X-CSRF-Token": csrf}).status_code
        == 201
    )
    annotators.set_disabled(server[1], who.name)
    r = b.post("/api/v1/conversations", json=body, headers={"X-CSRF-Token": csrf})
    assert r.status_code == 403 and "disabled" in r.json()["error"], r.text
    a.close(), b.close()
