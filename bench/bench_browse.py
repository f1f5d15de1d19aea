"""The data browser's speed: index a corpus at start, then time filtered list pages.

Usage: ``python bench/bench_browse.py [--data bench/corpus]`` (the full-scale synthetic
corpus from ``bench/make_corpus.py``). Prints the index time and, for each filter, the
median time of the query plus the page render through the app (TestClient, logged in).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

QUERIES = [
    "",
    "class=empty_response",
    "subset=helpful-base&split=test&class=response_contains_turns",
    "turns=3&chosen=longer",
    "q=recipe&where=prompt",
    "q=flour",
    "offset=150000",
]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", default="bench/corpus", help="corpus folder (default bench/corpus)"
    )
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    from fastapi.testclient import TestClient

    from hhrlhf.collect.app import create_app
    from hhrlhf.collect.browse import DataIndex
    from hhrlhf.collect.config import demo_settings
    from hhrlhf.collect.storage import Storage

    with tempfile.TemporaryDirectory() as tmp:
        db = f"sqlite:///{Path(tmp) / 'bench.db'}"
        storage = Storage(db)
        storage.upgrade()
        _, token = storage.add_annotator("bench")
        start = time.perf_counter()
        app = create_app(replace(demo_settings(db), data=args.data), storage=storage)
        index: DataIndex = app.state.data_index
        print(
            f"indexed {len(index.pairs)} pairs and {len(index.attempts)} attempts "
            f"in {index.seconds:.1f} s (app ready in {time.perf_counter() - start:.1f} s)"
        )
        with TestClient(app) as client:
            client.get(f"/login?token={token}")
            print(f"| filter | matches | page (median of {args.repeat}) |")
            print("|---|---|---|")
            for q in QUERIES:
                times = []
                for _ in range(args.repeat):
                    t = time.perf_counter()
                    r = client.get(f"/data?{q}")
                    times.append(time.perf_counter() - t)
                    assert r.status_code == 200, r.text[:200]
                total = client.get(f"/api/v1/data/pairs?{q}&limit=1").json()["total"]
                print(f"| `{q or '(none)'}` | {total} | {statistics.median(times) * 1000:.0f} ms |")
        storage.dispose()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
