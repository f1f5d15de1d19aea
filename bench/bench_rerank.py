"""A ``rerank`` turn with k=16 on the demo backend: how long the preference model adds per turn.

The PM is a linear one trained here on the bundled sample (what ``hh pm train --data sample``
fits); the base is the demo backend sampling with a temperature (no model, no network: each
sample is one of the six responses of the three most similar sample prompts), so the sampling
time is the backend's own bookkeeping and the PM's share is what is measured. Writes a Markdown table to
stdout (paste into bench/RESULTS-collect.md). Target: the PM adds under 100 ms per turn.

    PYTHONPATH=src python bench/bench_rerank.py --turns 50 --k 16
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time

from hhrlhf import load_dataset
from hhrlhf.collect.config import BackendConfig
from hhrlhf.collect.domain import Prompt
from hhrlhf.collect.generation.kinds import make_backend
from hhrlhf.collect.generation.rerank import RerankBackend
from hhrlhf.reward import train_pm


def pct(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))]


async def run(turns: int, k: int, pm_dir: str) -> dict:
    # a temperature: the demo base draws among six sample responses, so the k texts differ
    base = make_backend(BackendConfig("demo-a", "demo", model="sample", temperature=1.0))
    rerank = RerankBackend(BackendConfig("best", "rerank", base="demo-a", k=k, pm=pm_dir))
    rerank.bind({"demo-a": base, "best": rerank}, 20_000)
    rerank.model()  # loading the PM happens once per process, not per turn
    prompts = [
        pair.prompt
        for split in ("test", "train")
        for pair in load_dataset("helpful-base", split=split, data="sample")
    ][:turns]
    walls, pm = [], []
    for prefix in prompts:
        human = prefix.rsplit("\n\nHuman:", 1)[1].rsplit("\n\nAssistant:", 1)[0].strip()
        prompt = Prompt((), human, prefix, "helpful")
        t0 = time.perf_counter()
        async for _ in rerank.stream(prompt, "a"):
            pass
        async for _ in rerank.stream(prompt, "b"):
            pass
        walls.append((time.perf_counter() - t0) * 1000)
        pm.append(rerank.record(prompt, "a")["rerank"]["pm_ms"])
    return {"turns": len(walls), "walls": walls, "pm": pm}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=50)
    ap.add_argument("--k", type=int, default=16)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    pairs = list(load_dataset("helpful-base", split="train", data="sample"))
    pm = train_pm(pairs)
    train_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        pm_dir = str(pm.save(os.path.join(tmp, "pm")))
        r = asyncio.run(run(args.turns, args.k, pm_dir))
    print(
        f"rerank, k={args.k}, demo base, linear PM trained on {len(pairs)} sample pairs "
        f"({train_s:.1f} s), {r['turns']} turns, {os.cpu_count()} CPUs\n"
    )
    print("| per turn | median ms | p95 ms | max ms |")
    print("|---|---|---|---|")
    for name, values in (("PM scoring (k samples)", r["pm"]), ("whole turn", r["walls"])):
        print(
            f"| {name} | {statistics.median(values):.1f} | {pct(values, 0.95):.1f} | "
            f"{max(values):.1f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
