"""Where a turn's server CPU goes: ``hh serve --demo`` (one worker) sampled with py-spy.

Usage::

    python bench/profile_collect.py [--annotators 1] [--turns 40] [--think 0] [--py-spy PATH]
                                    [--postgres] [--frames 60] [--stream [post|get]]

Starts the server as bench_collect.py does (SQLite, or a throwaway PostgreSQL server with
``--postgres``; one worker, so the sampled process is the whole server), runs the scripted
annotators, samples the worker with ``py-spy record
--format raw --gil`` (only the thread holding the GIL: Python's own CPU; py-spy's idle
detection counted threads waiting on a condition as busy in this container) and prints the frames holding the most samples,
inclusive, in ms of CPU per turn. py-spy is not a dependency: install it anywhere
(``pip install py-spy --target DIR``) and name its binary with ``--py-spy``.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

from bench_collect import group_cpu_seconds, run_clients, server_env  # noqa: E402
from hhrlhf.collect.db import Storage  # noqa: E402
from hhrlhf.collect.serve.workers import free_port  # noqa: E402
from hhrlhf.collect.services import annotators  # noqa: E402

#: frames worth naming: (label, substring of "function (file)")
GROUPS = [
    ("auth: token lookup", "annotator_by_token"),
    ("message: create_turn", "create_turn ("),
    ("generation: Generator.events/run", "runner.py"),
    ("event stream (api.py _event_stream)", "_event_stream"),
    ("choice: record_choice", "record_choice"),
    ("finish / start conversation", "conversations.py"),
    ("SQLAlchemy ORM (all)", "sqlalchemy/orm"),
    ("SQLAlchemy engine + compile (all)", "sqlalchemy/engine"),
    ("SQLAlchemy sql compiler (all)", "sqlalchemy/sql/compiler"),
    ("sqlite3 execute/commit", "sqlite3"),
    ("psycopg (all)", "psycopg/"),
    ("pydantic validation / serialisation", "pydantic"),
    ("FastAPI routing + dependencies", "fastapi/"),
    ("Starlette (middleware, responses)", "starlette/"),
    ("uvicorn + httptools/h11", "uvicorn/"),
    ("asyncio event loop", "asyncio/"),
    ("anyio thread pool", "anyio/"),
    ("json / orjson", "json"),
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--annotators", type=int, default=1)
    ap.add_argument("--turns", type=int, default=40)
    ap.add_argument("--think", type=float, default=0.0)
    ap.add_argument("--py-spy", default=shutil.which("py-spy") or "py-spy")
    ap.add_argument("--rate", type=int, default=500, help="py-spy samples per second")
    ap.add_argument("--postgres", action="store_true", help="a throwaway PostgreSQL server")
    ap.add_argument("--frames", type=int, default=60, help="inclusive frames to print")
    ap.add_argument(
        "--stream",
        nargs="?",
        const="post",
        choices=["post", "get"],
        default=None,
        help="each message's responses read as events: 'post' (alone: --stream), as the page "
        "sends it, in its own answer; 'get', from the turn's stream after the message",
    )
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="hh-profile-collect-"))
    pg = None
    if args.postgres:
        sys.path.insert(0, str(HERE.parent / "tests"))
        from pgserver import PostgresServer

        pg = PostgresServer(durable=True).start()
    try:
        return _profile(args, tmp, pg.new_database("profile") if pg else None)
    finally:
        if pg is not None:
            pg.stop()
        shutil.rmtree(tmp, ignore_errors=True)  # the SQLite file and py-spy's samples


def _profile(args, tmp: Path, db: str | None) -> int:
    db = db or f"sqlite:///{tmp / 'bench.db'}"
    storage = Storage(db)
    storage.upgrade()
    tokens = [annotators.add_annotator(storage, f"p-{i}")[1] for i in range(args.annotators)]
    storage.dispose()
    port = free_port("127.0.0.1")
    env = server_env(db)
    server = subprocess.Popen(
        [sys.executable, "-m", "hhrlhf", "serve", "--demo", "--port", str(port), "--workers", "1"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    raw = tmp / "profile.txt"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(base + "/api/v1/health").status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("server did not start")
            time.sleep(0.1)
        asyncio.run(run_clients(base, tokens[:1], 1))  # warm-up
        spy = subprocess.Popen(
            [args.py_spy, "record", "--pid", str(server.pid), "--subprocesses", "--format", "raw",
             "--rate", str(args.rate), "--output", str(raw), "--nonblocking", "--gil"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        time.sleep(1.0)
        cpu0 = group_cpu_seconds(server.pid)
        res = asyncio.run(run_clients(base, tokens, args.turns, args.think, stream=args.stream))
        cpu = group_cpu_seconds(server.pid) - cpu0
        spy.send_signal(signal.SIGINT)
        spy.wait(timeout=60)
    finally:
        server.terminate()
        server.wait(timeout=20)
    turns = len(res["turns"])
    counts: collections.Counter[str] = collections.Counter()
    frames: collections.Counter[str] = collections.Counter()
    leaves: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        k = int(n)
        total += k
        parts = stack.split(";")
        for label, needle in GROUPS:
            if any(needle in p for p in parts):
                counts[label] += k
        for p in set(parts):
            frames[p] += k
        leaves[parts[-1]] += k
    per_turn = 1000 * cpu / max(1, turns)
    print(
        f"{turns} turns, {args.annotators} annotator(s), server CPU {per_turn:.1f} ms per turn "
        f"(/proc), {total} samples, load average {os.getloadavg()[0]:.1f}; errors {len(res['errors'])}"
    )
    for e in res["errors"][:5]:
        print(f"error: {e}")
    print("\n| where (inclusive; groups overlap) | share of samples | ms per turn |")
    print("|---|---:|---:|")
    for label, n in counts.most_common():
        print(f"| {label} | {100 * n / total:.0f}% | {per_turn * n / total:.1f} |")
    print("\nTop frames (inclusive):")
    for frame, n in frames.most_common(args.frames):
        print(f"{100 * n / total:5.1f}%  {frame}")
    print("\nTop frames (self):")
    for frame, n in leaves.most_common(30):
        print(f"{100 * n / total:5.1f}%  {frame}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
