"""The data browser's speed: index a corpus at start, then time filtered list pages.

Usage: ``python bench/bench_browse.py [--data bench/corpus]`` (the full-scale synthetic
corpus from ``bench/make_corpus.py``). Prints the index time (wall and CPU: the machine may
be shared; the load average is printed too), the memory the index adds to a worker (resident
set growth: each ``hh serve`` worker holds its own), and, for each filter, the median time of
the page through the app (TestClient, logged in): cold (the query's results not kept yet) and
warm (the next page of the same query).
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from hhrlhf.collect.services import annotators


def rss_mb() -> float:
    """This process's resident set (Linux), in MiB; 0 where /proc is not there."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024
    except (OSError, StopIteration):
        return 0.0


QUERIES = [
    "",
    "class=empty_response",
    "subset=helpful-base&split=test&class=response_contains_turns",
    "turns=3&chosen=longer",
    "q=recipe&where=prompt",
    "q=flour",
    "q=the",
    "q=water&where=responses&class=inline_speaker_label",
]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", default="bench/corpus", help="corpus folder (default bench/corpus)"
    )
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    from fastapi.testclient import TestClient

    from hhrlhf.collect.browse import DataIndex
    from hhrlhf.collect.config import demo_settings
    from hhrlhf.collect.db import Storage
    from hhrlhf.collect.web.app import create_app

    print(
        "load average before: {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()),
        f"({os.cpu_count()} cores)",
    )
    with tempfile.TemporaryDirectory() as tmp:
        db = f"sqlite:///{Path(tmp) / 'bench.db'}"
        storage = Storage(db)
        storage.upgrade()
        _, token = annotators.add_annotator(storage, "bench")
        gc.collect()
        before = rss_mb()
        start, cpu = time.perf_counter(), time.process_time()
        app = create_app(replace(demo_settings(db), data=args.data), storage=storage)
        index: DataIndex = app.state.context.data_index
        print(
            f"indexed {len(index.pairs)} pairs and {len(index.attempts)} attempts "
            f"in {index.seconds:.1f} s (app ready in {time.perf_counter() - start:.1f} s, "
            f"{time.process_time() - cpu:.1f} s CPU)"
        )
        gc.collect()
        print(
            f"memory: the app with its index holds {rss_mb() - before:.0f} MiB more than "
            f"before it (resident set; each hh serve worker holds its own), "
            f"{len(index._text.blob) / 2**20:.0f} MiB of it the search buffer"
        )
        with TestClient(app) as client:
            page = client.get(f"/login?token={token}").text
            form = page.split('name="form" value="', 1)[1].split('"', 1)[0]
            client.post("/login", data={"token": token, "form": form})
            print(
                f"| filter | matches | page cold / warm, wall (median of {args.repeat}) "
                "| cold, CPU |"
            )
            print("|---|---|---|---|")
            for q in QUERIES:
                cold, warm, cold_cpu = [], [], []
                for _ in range(args.repeat):
                    index._found.clear()  # the kept results: cold, then the next page warm
                    for times, url in ((cold, f"/data?{q}"), (warm, f"/data?{q}&offset=50")):
                        t, c = time.perf_counter(), time.process_time()
                        r = client.get(url)
                        times.append(time.perf_counter() - t)
                        if times is cold:
                            cold_cpu.append(time.process_time() - c)
                        assert r.status_code == 200, r.text[:200]
                total = client.get(f"/api/v1/data/pairs?{q}&limit=1").json()["total"]
                print(
                    f"| `{q or '(none)'}` | {total} | {statistics.median(cold) * 1000:.0f} ms"
                    f" / {statistics.median(warm) * 1000:.0f} ms"
                    f" | {statistics.median(cold_cpu) * 1000:.0f} ms |"
                )
        storage.dispose()
    print("load average after: {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
