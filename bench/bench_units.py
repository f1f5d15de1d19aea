"""A unit of work on PostgreSQL from an event loop: a thread per call against the loop's own
async connection (what ``Storage.call`` does), CPU and latency per transaction.

    python bench/bench_units.py [--users 100] [--per-user 20] [--pause 0.6] [--rounds 2]

Each of ``--users`` coroutines runs ``--per-user`` transactions (a read, an insert, an update,
each connection checked as the pool lends it, as the app's units of work are), pausing up to ``--pause`` seconds
between them; the two ways alternate ``--rounds`` times on one throwaway PostgreSQL server
(Debian's initdb/pg_ctl, as the tests use). Prints a markdown table: the process's CPU per
transaction, context switches per transaction (a thread waiting for the GIL is one), and the
latency of a transaction as its caller sees it.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import resource
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE.parent / "src"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", type=int, default=100)
    ap.add_argument("--per-user", type=int, default=20)
    ap.add_argument("--pause", type=float, default=0.6, help="most seconds between transactions")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args(argv)

    import uvloop
    from sqlalchemy import Column, Integer, MetaData, String, Table, create_engine, insert

    from hhrlhf.collect.db import Storage
    from pgserver import PostgresServer

    metadata = MetaData()
    table = Table("t", metadata, Column("id", Integer, primary_key=True), Column("a", String))
    print(f"{args.users} users x {args.per_user} transactions, pauses up to {args.pause:g} s\n")
    print("| way | CPU per transaction | context switches per transaction | p50 / p99 (ms) |")
    print("|---|---:|---:|---|")
    with PostgresServer() as pg:
        url = pg.new_database("units")
        engine = create_engine(url)
        metadata.create_all(engine)
        with engine.begin() as c:
            c.execute(insert(table), [{"a": "x"} for _ in range(100)])
        engine.dispose()
        for _ in range(args.rounds):
            for way in ("thread", "loop"):
                storage = Storage(url, connections=40)
                row = uvloop.run(_measure(storage, table, way, args))
                print(row)
                storage.dispose()
    return 0


def _unit(storage, table, i: int) -> None:
    from sqlalchemy import insert, select, update

    with storage.write() as s:
        s.execute(select(table).where(table.c.id == i % 100 + 1)).first()
        s.execute(insert(table), [{"a": "y" * 50}])
        s.execute(update(table).where(table.c.id == i % 100 + 1).values(a=str(i)))


async def _measure(storage, table, way: str, args) -> str:
    import anyio.to_thread

    async def call(i: int) -> None:
        if way == "thread":
            await anyio.to_thread.run_sync(_unit, storage, table, i)
        else:
            await storage.call(_unit, table, i)

    for i in range(20):  # warm: connections, statement caches
        await call(i)
    latencies: list[float] = []

    async def user(u: int) -> None:
        rng = random.Random(u)
        for k in range(args.per_user):
            await asyncio.sleep(rng.uniform(0, args.pause))
            t0 = time.perf_counter()
            await call(u * 1000 + k)
            latencies.append(time.perf_counter() - t0)

    r0 = resource.getrusage(resource.RUSAGE_SELF)
    await asyncio.gather(*(user(u) for u in range(args.users)))
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    await storage.close_loop()
    n = len(latencies)
    cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
    switches = r1.ru_nvcsw - r0.ru_nvcsw + r1.ru_nivcsw - r0.ru_nivcsw
    latencies.sort()
    name = "a thread per call" if way == "thread" else "on the loop (Storage.call)"
    return (
        f"| {name} | {cpu / n * 1000:.2f} ms | {switches / n:.1f} | "
        f"{latencies[n // 2] * 1000:.1f} / {latencies[int(n * 0.99)] * 1000:.1f} |"
    )


if __name__ == "__main__":
    raise SystemExit(main())
