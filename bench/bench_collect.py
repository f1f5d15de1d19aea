"""Benchmark the collection app: concurrent scripted annotators against a real ``hh serve``.

Usage::

    python bench/bench_collect.py [--annotators 50] [--turns 10] [--workers 2] [--think 1]
                                  [--db URL | --postgres [--no-fsync] [--prepare-threshold N|none]]
                                  [--demo-delay 0] [--append] [--client loopback|httpx] [--stream [post|get]]
                                  [--timeline FILE.csv] [--attacker [N]] [--out bench/RESULTS-collect.md]

Starts ``hh serve --demo --workers N`` in a subprocess on a free loopback port (SQLite by
default; ``--postgres`` starts a throwaway PostgreSQL server with fsync on, from Debian's
binaries, as the tests do), adds one annotator per client, and runs every client at once (a
small keep-alive HTTP/1.1 client on one connection each, or ``--client httpx``): start a
conversation, then per turn send a message (``"wait": true``: the answer holds both
responses; ``--stream``: as the page sends it, ``"stream": true``, the answer is the turn's
event stream; ``--stream get``: ``"wait": false``, then the turn's own stream, a request
more) and choose one (with a ``request_id``), then finish. It reports p50/p99 of

* the choice (``POST /turns/{id}/choice``, acknowledged after its commit), as the client saw
  it and as the server timed itself (its ``Server-Timing: app;dur=`` header: the rest is the
  client's event loop and the loopback connection);
* the turn minus backend time (the request's wall time less the slower candidate's
  generation time, as the server recorded it: what the app adds to a model's latency).

and per turn: the server's CPU time (its process group's, from /proc), the requests sent and
the SQL statements the server says they cost (``Server-Timing: sql;desc="N"``), so a
regression shows as a number; and the run's slowest half-seconds (a stall of the server shows
there; ``--timeline`` writes every request's latency by when it ended).

``--attacker N``: one more annotator, with a conversation of 60 hostile 20,000-character
edits (bench/collect_attacker.py), reads it in N loops (2 alone) during the run; compare the
turn's p95 with a run without it (issue 39: within 2x).

Target (issue 13): 50 annotators, choice p99 under 100 ms on two cores, on SQLite and on
PostgreSQL. After the run every acknowledged choice is checked to be stored exactly once.
tests/collect/test_load.py runs the same clients, smaller, in the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import orjson

from hhrlhf.collect.serve.workers import free_port
from hhrlhf.collect.services import annotators

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
PROMPTS = [
    "How do I keep my tomato plants healthy?",
    "What is a good way to start running?",
    "Can you help me plan a small vegetable garden?",
    "How long should I boil an egg?",
    "What should I pack for a weekend hike?",
    "How do I fix a squeaky door?",
    "Any tips for learning to cook rice?",
    "How can I sleep better?",
    "What is a simple bread recipe?",
    "How often should I water a cactus?",
]


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    if not values:
        return float("nan")
    k = max(0, min(len(values) - 1, round(q / 100 * (len(values) - 1))))
    return values[k]


def server_time_ms(header: str) -> float | None:
    """The ``app`` duration of a ``Server-Timing`` header (``app;dur=12.3``), or None."""
    for metric in header.split(","):
        name, _, params = metric.strip().partition(";")
        if name == "app" and params.startswith("dur="):
            return float(params[4:])
    return None


def server_statements(header: str) -> int | None:
    """The ``sql`` count of a ``Server-Timing`` header (``sql;desc="7"``), or None."""
    for metric in header.split(","):
        name, _, params = metric.strip().partition(";")
        if name == "sql" and params.startswith("desc="):
            return int(params[5:].strip('"'))
    return None


def _note(out: dict, r: httpx.Response) -> None:
    """Count a request and the SQL statements the server says it sent."""
    out["requests"] = out.get("requests", 0) + 1
    n = server_statements(r.headers.get("server-timing", ""))
    if n is not None:
        out["statements"] = out.get("statements", 0) + n


def server_env(db: str) -> dict[str, str]:
    """The environment for ``hh serve`` on database ``db``: this checkout's src first on
    PYTHONPATH (what is already there kept after it)."""
    path = os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, "HH_COLLECT_DB": db}


def group_cpu_seconds(pgid: int) -> float:
    """User + system CPU time of every live process in a process group (Linux /proc)."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # pgrp
            total += int(fields[11]) + int(fields[12])  # utime + stime
    return total / os.sysconf("SC_CLK_TCK")


def machine_cpu_seconds() -> tuple[float, float]:
    """``(busy, all)`` CPU seconds of every core since boot (Linux /proc/stat): busy is all
    but idle and iowait."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    tick = os.sysconf("SC_CLK_TCK")
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    return (sum(values) - idle) / tick, sum(values) / tick


class Reply:
    """A response as :class:`LoopbackClient` read it (the part of httpx's Response we use)."""

    def __init__(self, status_code: int, headers: dict[str, str], content: bytes):
        self.status_code, self.headers, self.content = status_code, headers, content

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self):
        return orjson.loads(self.content)

    def raise_for_status(self) -> None:
        if self.status_code >= 400:
            raise httpx.HTTPStatusError(
                f"{self.status_code}: {self.text[:200]}", request=None, response=None
            )


class LoopbackClient:
    """A small HTTP/1.1 keep-alive client: one connection per annotator, as a browser keeps.

    The 200 clients share the server's cores here (browsers would not), so the client should
    cost as little CPU as it can: httpx spent ~3.5 ms of CPU per request in this process (36%
    of the machine's busy time in a 200-annotator run), this ~0.3 ms. Reads a response by its
    Content-Length, chunked, or to the end of the connection; reconnects after a
    ``Connection: close``. ``client="httpx"`` in :func:`annotator` keeps the httpx client.
    """

    def __init__(self, base_url: str, headers: dict[str, str], timeout: float):
        url = httpx.URL(base_url)
        self.host, self.port = url.host, url.port or 80
        self.head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self.timeout = timeout
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def __aenter__(self) -> LoopbackClient:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.reader = self.writer = None

    async def post(self, path: str, json=None) -> Reply:
        return await self._send("POST", path, json)

    async def get(self, path: str) -> Reply:
        return await self._send("GET", path, None)

    async def _send(self, method: str, path: str, body) -> Reply:
        """One request; a failed connection is closed (the next request opens another) and
        raised as httpx's error for it, as the httpx client would."""
        try:
            return await asyncio.wait_for(self._request(method, path, body), self.timeout)
        except BaseException as exc:
            await self.close()
            if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
                raise httpx.ReadTimeout(f"{method} {path}: no answer in {self.timeout} s") from exc
            if isinstance(exc, ConnectionRefusedError):
                raise httpx.ConnectError(f"{method} {path}: {exc}") from exc
            if isinstance(exc, (asyncio.IncompleteReadError, OSError)):
                raise httpx.ReadError(f"{method} {path}: the connection was cut ({exc})") from exc
            raise

    async def _request(self, method: str, path: str, body) -> Reply:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        data = b"" if body is None else orjson.dumps(body)
        self.writer.write(
            f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n{self.head}"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n".encode()
            + data
        )
        reader = self.reader
        assert reader is not None
        status_line, *lines = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        headers = {}
        for line in lines:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        if "content-length" in headers:
            content = await reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
                parts.append(await reader.readexactly(size))
                await reader.readexactly(2)
            await reader.readuntil(b"\r\n")  # the empty trailer
            content = b"".join(parts)
        else:
            content = await reader.read()
            headers["connection"] = "close"
        if headers.get("connection", "").lower() == "close":
            await self.close()
        return Reply(int(status_line.split(" ", 2)[1]), headers, content)


def _client(kind: str, base: str, headers: dict[str, str], timeout: float):
    if kind == "httpx":
        return httpx.AsyncClient(base_url=base, headers=headers, timeout=timeout)
    return LoopbackClient(base, headers, timeout)


#: the end of a turn's event stream when both responses are ready (api.py's ``_sse``)
STREAM_READY = 'event: end\ndata: {"status":"ready"}'


async def annotator(
    base: str,
    token: str,
    turns: int,
    i: int,
    out: dict,
    think: float,
    client: str = "loopback",
    stream: str | None = None,
) -> None:
    """One scripted annotator: a conversation of ``turns`` turns, each a message and a choice.
    ``stream``: each message's responses read as events: ``"post"`` from the message's own
    answer (``"stream": true``, as the page sends it), ``"get"`` from the turn's stream after
    a ``"wait": false`` message; None: ``"wait": true`` (the responses in the answer)."""
    rng = random.Random(i)
    headers = {"Authorization": f"Bearer {token}"}
    async with _client(client, base, headers, 60) as c:
        r = await c.post(
            "/api/v1/conversations", json={"mode": "helpful", "task_description": f"bench {i}"}
        )
        _note(out, r)
        r.raise_for_status()
        cid = r.json()["id"]
        for t in range(turns):
            t0 = time.perf_counter()
            text = PROMPTS[(i + t) % len(PROMPTS)] + f" ({i}.{t})"
            body = {"text": text, "stream": True} if stream == "post" else {"text": text}
            if stream == "get":
                body["wait"] = False
            r = await c.post(f"/api/v1/conversations/{cid}/turns", json=body)
            _note(out, r)
            if stream == "post":
                head = r.text.split("\n\n", 1)[0] if r.status_code == 201 else ""
                if not head.startswith("event: turn\n") or STREAM_READY not in r.text:
                    out["errors"].append(f"turn: {r.status_code} {r.text[-200:]}")
                    return
                turn = orjson.loads(head.split("data: ", 1)[1])
            elif r.status_code != 201 or r.json().get("status") != (
                "pending" if stream else "ready"
            ):
                out["errors"].append(f"turn: {r.status_code} {r.text[:200]}")
                return
            else:
                turn = r.json()
            if stream == "get":
                r = await c.get(f"/api/v1/turns/{turn['id']}/stream")
                _note(out, r)
                if r.status_code != 200 or STREAM_READY not in r.text:
                    out["errors"].append(f"stream: {r.status_code} {r.text[-200:]}")
                    return
            wall = time.perf_counter() - t0
            out["turns"].append((turn["id"], wall))
            out["timeline"].append((time.perf_counter(), "turn", wall))
            if think:  # reading the two responses
                await asyncio.sleep(think * rng.uniform(0.5, 1.5))
            body = {
                "pick": "ab"[(i + t) % 2],
                "strength": 1 + (i + t) % 4,
                "request_id": uuid.uuid4().hex,
            }
            t0 = time.perf_counter()
            r = await c.post(f"/api/v1/turns/{turn['id']}/choice", json=body)
            out["choice"].append(time.perf_counter() - t0)
            out["timeline"].append((time.perf_counter(), "choice", out["choice"][-1]))
            if t > 0:  # after every annotator's first turn: the start-up burst is over
                out["choice_later"].append(out["choice"][-1])
            _note(out, r)
            server_ms = server_time_ms(r.headers.get("server-timing", ""))
            if server_ms is not None:
                out["choice_server"].append(server_ms / 1000)
            if r.status_code != 200:
                out["errors"].append(f"choice: {r.status_code} {r.text[:200]}")
                return
            out["acked"].append((turn["id"], body["pick"], body["strength"]))
            if think:  # writing the next message
                await asyncio.sleep(think * rng.uniform(0.5, 1.5))
        r = await c.post(f"/api/v1/conversations/{cid}/finish", json={})
        _note(out, r)
        if r.status_code != 200:
            out["errors"].append(f"finish: {r.status_code}")


def new_tally() -> dict:
    """What :func:`annotator` fills in: latencies, errors, acknowledged choices, counts."""
    return {
        "turns": [],
        "choice": [],
        "choice_later": [],
        "choice_server": [],
        "errors": [],
        "acked": [],
        "requests": 0,
        "statements": 0,
        "timeline": [],  # (when it ended: seconds from the start, "turn"|"choice", seconds)
    }


async def run_clients(
    base: str,
    tokens: list[str],
    turns: int,
    think: float = 0.0,
    client: str = "loopback",
    stream: str | None = None,
    attack: tuple[str, int, int] | None = None,
) -> dict:
    """The annotators' run; ``attack``: (token, conversation, loops) of an attacker reading
    its hostile conversation meanwhile (its answers in ``out["attacker"]``)."""
    out = new_tally()
    stop = asyncio.Event()
    attackers = []
    if attack is not None:
        from collect_attacker import hammer

        token, cid, loops = attack
        out["attacker"] = {}
        attackers = [
            asyncio.create_task(hammer(base, token, cid, stop, out["attacker"]))
            for _ in range(loops)
        ]
    t0 = time.perf_counter()
    await asyncio.gather(
        *(
            annotator(base, tok, turns, i, out, think, client, stream)
            for i, tok in enumerate(tokens)
        )
    )
    out["elapsed"] = time.perf_counter() - t0
    stop.set()
    await asyncio.gather(*attackers)
    out["timeline"] = [(end - t0, kind, took) for end, kind, took in out["timeline"]]
    return out


def slowest_windows(
    timeline: list[tuple[float, str, float]], kind: str = "choice", width: float = 0.5, top: int = 3
) -> list[tuple[float, int, float]]:
    """The ``top`` windows of ``width`` seconds whose slowest ``kind`` request was slowest:
    (window start, requests ending in it, the slowest's seconds), slowest first. A stall
    of the server shows as a window or two far above the others."""
    windows: dict[int, list[float]] = {}
    for end, k, took in timeline:
        if k == kind:
            windows.setdefault(int(end / width), []).append(took)
    ranked = sorted(windows.items(), key=lambda kv: max(kv[1]), reverse=True)[:top]
    return [(i * width, len(v), max(v)) for i, v in ranked]


async def backend_times(base: str, admin_token: str) -> dict[int, tuple[float, dict]]:
    """turn id -> (slower candidate's generation time in s, stored pick) from the admin view."""
    headers = {"Authorization": f"Bearer {admin_token}"}
    out = {}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as c:
        convs = (await c.get("/api/v1/conversations")).json()["conversations"]
        for conv in convs:
            full = (await c.get(f"/api/v1/conversations/{conv['id']}")).json()
            for t in full["turns"]:
                slow = max((x.get("latency_ms") or 0) for x in t["candidates"]) / 1000
                out[t["id"]] = (slow, {"pick": t["pick"], "strength": t["strength"]})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--annotators", type=int, default=50)
    ap.add_argument("--turns", type=int, default=10)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument(
        "--demo-delay", type=float, default=0.0, help="seconds per word of the demo backend"
    )
    ap.add_argument(
        "--think",
        type=float,
        default=1.0,
        help="seconds an annotator spends reading before a choice and writing before a message "
        "(each drawn from 0.5x-1.5x); 0: a closed loop with no pause (saturation)",
    )
    ap.add_argument(
        "--client",
        choices=["loopback", "httpx"],
        default="loopback",
        help="the clients' HTTP library: a small keep-alive client (default; least CPU taken "
        "from the server's cores) or httpx",
    )
    ap.add_argument(
        "--stream",
        nargs="?",
        const="post",
        choices=["post", "get"],
        default=None,
        help="read the responses as events: 'post' (alone: --stream), as the page does, from "
        "the message's own answer; 'get', from the turn's stream after a message sent without "
        "waiting (default: the message's answer holds both responses)",
    )
    ap.add_argument("--append", action="store_true", help="append to --out instead of replacing it")
    ap.add_argument(
        "--timeline",
        type=Path,
        default=None,
        help="also write every turn's and choice's latency, by when it ended, as CSV "
        "(seconds from the start, kind, ms)",
    )
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--db", default=None, help="database URL (default: a fresh SQLite file)")
    where.add_argument(
        "--postgres",
        action="store_true",
        help="a throwaway PostgreSQL server (Debian's initdb/pg_ctl; fsync on)",
    )
    ap.add_argument(
        "--no-fsync",
        action="store_true",
        help="with --postgres: the server without fsync (a commit then waits for no disk "
        "flush: separates a slow disk's flush time from the app's own)",
    )
    ap.add_argument(
        "--prepare-threshold",
        default=None,
        metavar="N|none",
        help="with --postgres: the URL's ?prepare_threshold= (psycopg's server-side prepared "
        "statements; default: the app's, prepared from a statement's fifth run on a connection)",
    )
    ap.add_argument(
        "--attacker",
        type=int,
        nargs="?",
        const=2,
        default=0,
        metavar="N",
        help="one more annotator reading a conversation of hostile markdown in N loops (2 "
        "alone) during the run (bench/collect_attacker.py)",
    )
    ap.add_argument("--out", type=Path, default=HERE / "RESULTS-collect.md")
    args = ap.parse_args(argv)
    if args.prepare_threshold is not None and not args.postgres:
        ap.error("--prepare-threshold needs --postgres")

    load_before = os.getloadavg()
    tmp = Path(tempfile.mkdtemp(prefix="hh-bench-collect-"))
    pg = None
    if args.postgres:
        sys.path.insert(0, str(HERE.parent / "tests"))
        from pgserver import PostgresServer

        pg = PostgresServer(durable=not args.no_fsync).start()
    try:
        return _run(args, tmp, pg, load_before)
    finally:
        if pg is not None:
            pg.stop()
        shutil.rmtree(tmp, ignore_errors=True)  # the SQLite file and the server's log


def _describe(db: str, pg) -> str:
    if db.startswith("sqlite"):
        return (
            "SQLite (WAL; synchronous=FULL for choices, messages and finishes, NORMAL for "
            "generation bookkeeping)"
        )
    if pg is not None:
        version = subprocess.run(
            [str(pg.bindir / "postgres"), "--version"], capture_output=True, text=True
        ).stdout.strip()
        fsync = "on" if pg.durable else "OFF (--no-fsync)"
        return f"{version}, a throwaway server on a Unix socket, fsync {fsync}, shared_buffers 32MB"
    return db.split(":")[0]


def _run(args, tmp: Path, pg, load_before) -> int:
    db = args.db or (pg.new_database("bench") if pg else f"sqlite:///{tmp / 'bench.db'}")
    if pg is not None and args.prepare_threshold is not None:
        db += f"&prepare_threshold={args.prepare_threshold}"
    env = server_env(db)
    sys.path.insert(0, str(SRC))
    from hhrlhf.collect.db import Storage

    storage = Storage(db)
    storage.upgrade()
    run = uuid.uuid4().hex[:6]  # a --db given twice gets new annotators each run
    tokens = [
        annotators.add_annotator(storage, f"bench-{run}-{i}")[1] for i in range(args.annotators)
    ]
    admin = annotators.add_annotator(storage, f"bench-{run}-admin", role="admin")[1]
    attacker = annotators.add_annotator(storage, f"bench-{run}-attacker")[1]
    storage.dispose()
    port = free_port("127.0.0.1")
    # the server's output goes to a file: a pipe nobody reads would stall a server that logs
    server_log = tmp / "server.log"
    with server_log.open("w") as log_file:
        server = subprocess.Popen(
            [sys.executable, "-m", "hhrlhf", "serve", "--demo", "--port", str(port),
             "--workers", str(args.workers), "--demo-delay", str(args.demo_delay)],
            env=env, stdout=log_file, stderr=subprocess.STDOUT, text=True, start_new_session=True,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(base + "/api/v1/health").status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit("server did not start: " + server_log.read_text()[-4000:])
            time.sleep(0.1)
        # warm-up: one conversation (imports, the demo index, the first connections)
        asyncio.run(run_clients(base, tokens[:1], 1))
        attack = None
        if args.attacker:
            sys.path.insert(0, str(HERE))
            from collect_attacker import prepare

            attack = (attacker, asyncio.run(prepare(base, attacker)), args.attacker)
        cpu0, mine0, (busy0, all0) = (
            group_cpu_seconds(server.pid),
            time.process_time(),
            machine_cpu_seconds(),
        )
        res = asyncio.run(
            run_clients(base, tokens, args.turns, args.think, args.client, args.stream, attack)
        )
        cpu, mine = group_cpu_seconds(server.pid) - cpu0, time.process_time() - mine0
        busy, every = (b - a for a, b in zip((busy0, all0), machine_cpu_seconds(), strict=True))
        load_after = os.getloadavg()
        stored = asyncio.run(backend_times(base, admin))
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()

    overhead = [max(0.0, wall - stored[tid][0]) for tid, wall in res["turns"] if tid in stored]
    walls = [wall for _, wall in res["turns"]]
    lost = [
        a for a in res["acked"] if stored.get(a[0], (0, {}))[1] != {"pick": a[1], "strength": a[2]}
    ]
    ms = lambda v: f"{1000 * v:.1f}"  # noqa: E731
    rows = [
        ("choice (POST .../choice)", res["choice"]),
        ("choice, server's own time (Server-Timing)", res["choice_server"]),
        ("choice, second turn on (after the start-up burst)", res["choice_later"]),
        ("turn, minus backend time", overhead),
        ("turn, wall (demo backend)", walls),
    ]
    lines = [
        f"## {'SQLite' if db.startswith('sqlite') else 'PostgreSQL'}, "
        + (
            "saturation: no pause between requests"
            if not args.think
            else f"annotators pausing ~{args.think:g} s"
        ),
        "",
        f"`python bench/bench_collect.py --annotators {args.annotators} --turns {args.turns} "
        f"--workers {args.workers} --demo-delay {args.demo_delay:g} --think {args.think:g}"
        + (" --postgres" if pg else "" if args.db is None else " --db (given)")
        + (" --no-fsync" if pg and not pg.durable else "")
        + (f" --prepare-threshold {args.prepare_threshold}" if args.prepare_threshold else "")
        + ("" if args.client == "loopback" else f" --client {args.client}")
        + (f" --stream {args.stream}" if args.stream else "")
        + (f" --attacker {args.attacker}" if args.attacker else "")
        + "`",
        "",
        f"Machine: {platform.platform()}, {os.cpu_count()} CPUs (shared), Python {platform.python_version()}, "
        f"load average (1/5/15 min) {'/'.join(f'{x:.1f}' for x in load_before)} before the run and "
        f"{'/'.join(f'{x:.1f}' for x in load_after)} after it (other work on the same cores). "
        f"Database: {_describe(db, pg)}. "
        f"Server: `hh serve --demo`, {args.workers} uvicorn worker(s), on loopback; clients: {args.client}, "
        f"{args.annotators} concurrent annotators x {args.turns} turns, all at once.",
        "",
        "| what | n | p50 ms | p95 ms | p99 ms | max ms |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, values in rows:
        if not values:  # every such request failed: the errors below say why
            lines.append(f"| {name} | 0 | - | - | - | - |")
            continue
        lines.append(
            f"| {name} | {len(values)} | {ms(statistics.median(values))} | {ms(pct(values, 95))} "
            f"| {ms(pct(values, 99))} | {ms(max(values))} |"
        )
    lines += [
        "",
        f"Elapsed {res['elapsed']:.1f} s ({len(res['turns']) / res['elapsed']:.1f} turns a second); "
        f"{len(res['acked'])} choices acknowledged, "
        f"{len(res['acked']) - len(lost)} found stored as acknowledged, {len(lost)} missing or different; "
        f"{len(res['errors'])} errors. Server CPU time: {cpu:.2f} s in all, "
        f"{1000 * cpu / max(1, len(res['turns'])):.1f} ms per turn (message, both demo responses, "
        "choice, and each request's authentication): the cost that does not depend on the "
        "machine's other load. Per turn: "
        f"{res['requests'] / max(1, len(res['turns'])):.2f} requests and "
        f"{res['statements'] / max(1, len(res['turns'])):.1f} SQL statements (the server's "
        "`Server-Timing: sql` count; a conversation's start and finish spread over its turns).",
        "",
        f"The machine's cores during the run: {busy / res['elapsed']:.2f} of "
        f"{every / res['elapsed']:.2f} busy ({100 * busy / max(every, 1e-9):.0f}%); of the busy "
        f"time the app {100 * cpu / max(busy, 1e-9):.0f}%, the clients (this process) "
        f"{100 * mine / max(busy, 1e-9):.0f}%, the rest (the database server and other work) "
        f"{100 * max(0.0, busy - cpu - mine) / max(busy, 1e-9):.0f}%. A machine near 100% busy "
        "queues requests for a core: its tail is the machine's, not the app's.",
        "",
        "\"Server's own time\": the app's `Server-Timing` header, from the request reaching the "
        "app to its response headers; the client's time less this is the client process and "
        "the loopback connection (all on the same cores). "
        "\"Minus backend time\": the request's wall time less the slower candidate's generation time "
        "as the server recorded it (`latency_ms`), i.e. what the app itself adds to a turn. "
        "Target (issue 28): 200 annotators x 5 turns on 2 workers, 1 s pauses, choice p99 "
        "under 100 ms and no error, on two cores.",
    ]
    if args.attacker:
        from collect_attacker import summary

        lines += [
            "",
            f"The attacker ({args.attacker} loops reading its conversation of 60 hostile "
            f"20,000-character edits during the run): {summary(res['attacker'])}.",
        ]
    slow = slowest_windows(res["timeline"])
    if slow:
        lines += [
            "",
            "Slowest half-seconds of the run, by their slowest choice: "
            + "; ".join(f"{at:.1f} s in, {n} choices, up to {ms(took)} ms" for at, n, took in slow)
            + ".",
        ]
    if args.timeline is not None:
        args.timeline.write_text(
            "seconds,kind,ms\n"
            + "".join(
                f"{end:.3f},{kind},{1000 * took:.1f}\n" for end, kind, took in res["timeline"]
            )
        )
    if res["errors"]:
        lines += ["", "Errors (first 5):", *[f"- {e}" for e in res["errors"][:5]]]
        logged = server_log.read_text(errors="replace").splitlines()
        if logged:
            lines += ["", "The server's last log lines:", *[f"    {x}" for x in logged[-5:]]]
    text = "\n".join(lines) + "\n"
    if args.append and args.out.exists():
        text = args.out.read_text() + "\n" + text
    args.out.write_text(text)
    print(text)
    return 1 if res["errors"] or lost else 0


if __name__ == "__main__":
    sys.exit(main())
