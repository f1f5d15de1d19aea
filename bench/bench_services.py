"""The annotation loop's hot services, one at a time: CPU and SQL statements per call.

    python bench/bench_services.py [--turns 500] [--sqlite] [--rounds 2]

One scripted annotator drives the services directly (no HTTP, no backend), each call through
``Storage.call`` from an event loop as the app's routes make them: a conversation started
every 5 turns and finished after them; per turn a message, its owner and state
(what the stream route reads), its lease, its generation's finish and a choice. On a throwaway
PostgreSQL server (Debian's initdb/pg_ctl, as the tests use), or with ``--sqlite`` a fresh
SQLite file. Prints a markdown table: the process's CPU per call (only this process: the
database server's own CPU is not counted) and statements per call, then their sum per turn.
A regression in one service (an ORM object's lazy load, a second read) shows in its row.
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE.parent / "src"))

#: conversations are this many turns long (as bench_collect.py's default annotators' are)
TURNS_PER_CONVERSATION = 5


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--turns", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=2, help="runs, each on a fresh database")
    ap.add_argument("--sqlite", action="store_true", help="a SQLite file instead of PostgreSQL")
    args = ap.parse_args(argv)

    import uvloop

    from hhrlhf.collect.db import Storage

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.sqlite:
            urls = [f"sqlite:///{tmp}/bench-{i}.db" for i in range(args.rounds)]
            server = None
        else:
            from pgserver import PostgresServer

            server = PostgresServer()
            server.start()
            urls = [server.new_database(f"services{i}") for i in range(args.rounds)]
        try:
            for url in urls:
                storage = Storage(url, connections=20)
                storage.upgrade()
                rows.append(uvloop.run(_measure(storage, args.turns)))
                storage.dispose()
        finally:
            if server is not None:
                server.stop()
    kind = "SQLite" if args.sqlite else "PostgreSQL"
    print(f"{kind}, {args.turns} turns per round, {args.rounds} rounds\n")
    print("| service | calls per turn | CPU per call (ms), each round | statements per call |")
    print("|---|---:|---|---:|")
    for name in rows[0]:
        per_turn, cpu, sent = rows[0][name]
        each = ", ".join(f"{r[name][1]:.2f}" for r in rows)
        print(f"| {name} | {per_turn:.2g} | {each} | {sent:g} |")
    totals = [sum(per * cpu for per, cpu, _ in r.values()) for r in rows]
    sent = sum(per * n for per, _, n in rows[0].values())
    each = ", ".join(f"{t:.2f}" for t in totals)
    print(f"| **a turn** | | **{each}** | {sent:.1f} |")
    return 0


async def _measure(storage, turns: int) -> dict[str, tuple[float, float, float]]:
    """{service: (calls per turn, CPU ms per call, statements per call)}."""
    from hhrlhf.collect.db.engine import count_statements
    from hhrlhf.collect.services import annotators, choices, conversations, leases

    cpu: dict[str, float] = collections.defaultdict(float)
    calls: dict[str, int] = collections.defaultdict(int)
    sent: dict[str, int] = collections.defaultdict(int)

    async def call(name, fn, *args, **kwargs):
        with count_statements() as n:
            t0 = time.process_time()
            out = await storage.call(fn, *args, **kwargs)
            cpu[name] += time.process_time() - t0
        calls[name] += 1
        sent[name] += n[0]
        return out

    who = (await storage.call(annotators.add_annotator, "bench"))[0]
    cid = None
    for i in range(turns):
        if i % TURNS_PER_CONVERSATION == 0:
            if cid is not None:
                await call("finish_conversation", conversations.finish_conversation, who, cid)
            started = await call(
                "create_conversation", conversations.create_conversation, who, "helpful", "t"
            )
            cid = started.id
        turn = await call(
            "create_turn", conversations.create_turn, who, cid, f"hello {i}", ("m1", "m2")
        )
        tid = turn.id
        # the stream route's one transaction: the state, the lease and the prompt
        await call("open_turn", leases.open_turn, tid, who, "w1", 60.0)
        results = {s: {"text": f"answer {s} {i}", "raw_text": f" answer {s} {i}"} for s in "ab"}
        await call("finish_generation", leases.finish_generation, tid, "w1", results)
        await call(
            "record_choice",
            choices.record_choice,
            who,
            tid,
            pick="ab"[i % 2],
            strength=1 + i % 4,
            strength_points=4,
        )
    await call("finish_conversation", conversations.finish_conversation, who, cid)
    if storage.url.startswith("postgresql"):
        await storage.close_loop()
    return {
        name: (calls[name] / turns, cpu[name] / calls[name] * 1000, sent[name] / calls[name])
        for name in calls
    }


if __name__ == "__main__":
    raise SystemExit(main())
