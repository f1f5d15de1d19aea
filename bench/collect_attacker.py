"""The attacker of ``bench/bench_collect.py --attacker``: one annotator whose conversation holds
60 edits of 20,000 characters of markdown that costs markdown-it quadratic time (``*[*[...``,
each edit different so no cache serves another), then reads that conversation over and over
(``GET /api/v1/conversations/{id}``) while the other annotators work. Before the render
budget, the read limit and the markdown step budget, two such loops took 150 annotators'
turn p95 from 80 ms to 8.4 s."""

from __future__ import annotations

import asyncio
import time

import httpx

#: the edits of the attacker's conversation, and each one's size
TURNS, CHARS = 60, 20_000


def hostile_edit(n: int) -> str:
    head = f"{n} "
    return head + ("*[" * CHARS)[: CHARS - len(head)]


async def prepare(base: str, token: str) -> int:
    """The attacker's conversation, written before the run (its writes are not measured)."""
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=120) as c:
        r = await c.post("/api/v1/conversations", json={"task_description": "markdown"})
        r.raise_for_status()
        cid = r.json()["id"]
        for n in range(TURNS):
            r = await c.post(f"/api/v1/conversations/{cid}/turns", json={"text": f"Say {n}"})
            r.raise_for_status()
            choice = {"pick": "a", "strength": 2, "edit": hostile_edit(n)}
            r = await c.post(f"/api/v1/turns/{r.json()['id']}/choice", json=choice)
            r.raise_for_status()
    return cid


async def hammer(base: str, token: str, cid: int, stop: asyncio.Event, out: dict) -> None:
    """Read the conversation until ``stop``; a refusal (429) waits 50 ms (not its Retry-After:
    an attacker does not), so the loop does not spin on the clients' cores."""
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=120) as c:
        while not stop.is_set():
            t0 = time.perf_counter()
            r = await c.get(f"/api/v1/conversations/{cid}")
            took = time.perf_counter() - t0
            out.setdefault(r.status_code, []).append(took)
            if r.status_code != 200:
                await asyncio.sleep(0.05)


def summary(out: dict) -> str:
    parts = []
    for status, took in sorted(out.items()):
        parts.append(
            f"{len(took)} answered {status} (median {1000 * sorted(took)[len(took) // 2]:.0f} ms)"
        )
    return "; ".join(parts) or "no request answered"
