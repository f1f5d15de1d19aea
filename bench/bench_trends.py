"""Benchmark: the annotator trends (``/admin/annotators``, ``GET /api/v1/admin/trends``,
``hh collect trends``) over a campaign's worth of picks.

Usage::

    python bench/bench_trends.py [--annotators 50] [--weeks 8] [--turns 100] [--repeats 5]
                                 [--db URL]

Writes ``annotators`` x ``weeks`` x ``turns`` picks (one conversation per annotator and week,
responses of about 60 words each), a tenth of them reviewed by two others, five gold reviews per
annotator and week, into a new SQLite file (or ``--db``: an empty, migrated database of your
own, e.g. PostgreSQL), then times :func:`annotator_trends` over the same weeks (median of
``--repeats``; wall time and this process's CPU time, which a busy machine sways less) and
counts its statements. Prints a Markdown report.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

from sqlalchemy import insert, select

from hhrlhf.collect.db import Storage
from hhrlhf.collect.db.engine import count_statements
from hhrlhf.collect.db.models import Comparison, Conversation, GoldItem, Review, Turn
from hhrlhf.collect.services import annotators
from hhrlhf.collect.services.trends import annotator_trends

WORDS = "water the basil in the morning and keep the soil moist but never wet".split()


def _text(rng: random.Random, n: int = 60) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def populate(storage: Storage, people: int, weeks: int, turns: int, now: datetime) -> int:
    """The campaign's rows; returns how many picks were written."""
    rng = random.Random(0)
    ids = [annotators.add_annotator(storage, f"annotator-{k:02d}")[0].id for k in range(people)]
    monday = (now - timedelta(days=now.weekday())).replace(hour=0, minute=0, second=0)
    picks = 0
    for w in range(weeks):
        start = monday - timedelta(weeks=weeks - 1 - w)
        for k, aid in enumerate(ids):
            with storage.write() as s:
                conv = s.execute(
                    insert(Conversation).returning(Conversation.id),
                    [
                        {
                            "uid": uuid.uuid4().hex,
                            "annotator_id": aid,
                            "mode": "helpful",
                            "task_description": "Garden questions",
                            "status": "finished",
                            "created_at": start,
                        }
                    ],
                ).scalar_one()
                at = [start + timedelta(minutes=3 * i + k) for i in range(turns)]
                tids = s.execute(
                    insert(Turn).returning(Turn.id, sort_by_parameter_order=True),
                    [
                        {
                            "conversation_id": conv,
                            "index": i,
                            "human": "Q?",
                            "prefix": "\n\nHuman: Q?\n\nAssistant:",
                            "status": "ready",
                            "created_at": at[i] - timedelta(seconds=40),
                            "ready_at": at[i] - timedelta(seconds=rng.uniform(5, 40)),
                        }
                        for i in range(turns)
                    ],
                ).scalars()
                rows = []
                for i, tid in enumerate(tids):
                    pick = rng.choice("ab")
                    rows.append(
                        {
                            "turn_id": tid,
                            "annotator_id": aid,
                            "kind": "pick",
                            "chosen_slot": pick,
                            "rejected_slot": "b" if pick == "a" else "a",
                            "chosen_text": _text(rng),
                            "rejected_text": _text(rng),
                            "pick": pick,
                            "strength": 3,
                            "shown_at": at[i] - timedelta(seconds=rng.uniform(5, 40)),
                            "decided_at": at[i],
                        }
                    )
                cids = s.execute(
                    insert(Comparison).returning(Comparison.id, sort_by_parameter_order=True),
                    rows,
                ).scalars()
                reviews = []
                for cid, row in zip(cids, rows, strict=True):
                    if rng.random() < 0.1:
                        for other in rng.sample([x for x in ids if x != aid], 2):
                            pick = row["pick"] if rng.random() < 0.8 else rng.choice("ab")
                            reviews.append(_review(cid, None, other, pick, row["decided_at"]))
                for g in range(5):
                    gid = s.execute(
                        insert(GoldItem).returning(GoldItem.id),
                        [
                            {
                                "prefix": "\n\nHuman: G?\n\nAssistant:",
                                "chosen": "yes",
                                "rejected": "no",
                                "mode": "helpful",
                                "digest": uuid.uuid4().hex * 2,
                                "created_at": start,
                            }
                        ],
                    ).scalar_one()
                    reviews.append(_review(None, gid, aid, rng.choice("aab"), at[g]))
                s.execute(insert(Review), reviews)
                picks += turns
    return picks


def _review(cid: int | None, gid: int | None, who: int, pick: str, at: datetime) -> dict:
    return {
        "comparison_id": cid,
        "gold_id": gid,
        "reviewer_id": who,
        "swapped": False,
        "status": "done",
        "pick": pick,
        "strength": 3,
        "assigned_at": at,
        "decided_at": at,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--annotators", type=int, default=50)
    ap.add_argument("--weeks", type=int, default=8)
    ap.add_argument("--turns", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--db", default=None, help="an empty database URL (default: a new SQLite)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = args.db or f"sqlite:///{Path(tmp) / 'trends.db'}"
        storage = Storage(url)
        storage.upgrade()
        now = datetime.now(timezone.utc)
        t0 = time.perf_counter()
        picks = populate(storage, args.annotators, args.weeks, args.turns, now)
        built = time.perf_counter() - t0
        with storage.read() as s:
            n_reviews = len(s.execute(select(Review.id)).all())
        times, cpu = [], []
        for _ in range(args.repeats):
            t0, c0 = time.perf_counter(), time.process_time()
            with count_statements() as counted:
                trends = annotator_trends(storage, weeks=args.weeks, now=now)
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        flags = sum(len(a.flags) for a in trends.annotators)
        storage.dispose()
    print(f"## Annotator trends (bench/bench_trends.py), {url.split(':')[0]}\n")
    print(f"- {args.annotators} annotators x {args.weeks} weeks x {args.turns} picks = {picks:,}")
    print(f"  picks, {n_reviews:,} done reviews (blind and gold); built in {built:.1f} s")
    print(f"- annotator_trends: median {statistics.median(times) * 1000:.0f} ms")
    print(f"  (min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f}) over {args.repeats} runs,")
    print(f"  this process's CPU: median {statistics.median(cpu) * 1000:.0f} ms,")
    print(f"  {counted[0]} statements; {flags} drift flags")


if __name__ == "__main__":
    main()
