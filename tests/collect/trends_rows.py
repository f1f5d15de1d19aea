"""Comparisons, reviews and gold reviews written straight into a collection database at chosen
times, for the annotator trends' tests and bench (the loop itself would stamp them now)."""

from __future__ import annotations

import itertools
import uuid
from datetime import datetime, timedelta, timezone

from hhrlhf.collect.db.models import Comparison, Conversation, GoldItem, Review, Turn

#: a Wednesday noon (UTC): its ISO week 2026-W48 starts on Monday 2026-11-23
NOW = datetime(2026, 11, 25, 12, 0, tzinfo=timezone.utc)
_GOLD = itertools.count()


def words(n: int) -> str:
    """A response of exactly ``n`` words."""
    return " ".join(["basil"] * n)


def week_start(weeks_back: int) -> datetime:
    """Monday 00:00 UTC of the ISO week ``weeks_back`` weeks before :data:`NOW`'s."""
    monday = NOW.replace(hour=0) - timedelta(days=NOW.weekday())
    return monday - timedelta(weeks=weeks_back)


def plant(
    storage,
    annotator_id: int,
    at: datetime,
    seconds: list[float | None],
    *,
    picks: str | None = None,
    read: list[float] | None = None,
    words_each: int = 10,
    identical: bool = False,
) -> list[int]:
    """One finished conversation of ``len(seconds)`` picks by the annotator, the i-th decided at
    ``at`` + i minutes, shown ``seconds[i]`` before (None: no ``shown_at``), its message sent
    ``read[i]`` seconds before the pick (default: 5 s before it was shown), picking
    ``picks[i]`` ("a" by default) between two responses of ``words_each`` words each;
    returns the comparison ids."""
    picks = picks or "a" * len(seconds)
    ids = []
    with storage.write() as s:
        conv = Conversation(
            uid=uuid.uuid4().hex,
            annotator_id=annotator_id,
            mode="helpful",
            task_description="Garden questions",
            status="finished",
            created_at=at,
            finished_at=at,
        )
        s.add(conv)
        s.flush()
        for i, (shown, pick) in enumerate(zip(seconds, picks, strict=True)):
            decided = at + timedelta(minutes=i)
            before = read[i] if read else (shown or 0) + 5
            turn = Turn(
                conversation_id=conv.id,
                index=i,
                human=f"Question {i}?",
                prefix=f"\n\nHuman: Question {i}?\n\nAssistant:",
                status="ready",
                created_at=decided - timedelta(seconds=before),
                ready_at=None if shown is None else decided - timedelta(seconds=shown),
            )
            s.add(turn)
            s.flush()
            a, b = words(words_each), words(words_each)
            if not identical:
                b = b.replace("basil", "thyme", 1)
            comp = Comparison(
                turn_id=turn.id,
                annotator_id=annotator_id,
                kind="pick",
                chosen_slot=pick,
                rejected_slot="b" if pick == "a" else "a",
                chosen_text=a if pick == "a" else b,
                rejected_text=b if pick == "a" else a,
                pick=pick,
                strength=3,
                shown_at=turn.ready_at,
                decided_at=decided,
            )
            s.add(comp)
            s.flush()
            ids.append(comp.id)
    return ids


def review(storage, comparison_ids: list[int], reviewer_id: int, pick: str, at: datetime) -> None:
    """A done blind review of each comparison by ``reviewer_id`` (``pick`` in the original order)."""
    with storage.write() as s:
        for cid in comparison_ids:
            s.add(
                Review(
                    comparison_id=cid,
                    reviewer_id=reviewer_id,
                    status="done",
                    pick=pick,
                    strength=3,
                    assigned_at=at,
                    decided_at=at,
                )
            )


def gold(storage, reviewer_id: int, picks: str, at: datetime) -> None:
    """A done gold review by ``reviewer_id`` for each pick ("a": the gold's chosen, correct)."""
    with storage.write() as s:
        for i, pick in enumerate(picks):
            n = next(_GOLD)
            item = GoldItem(
                prefix=f"\n\nHuman: Gold {n}?\n\nAssistant:",
                chosen="Water it.",
                rejected="Burn it.",
                digest=f"{n:064d}",
                created_at=at,
            )
            s.add(item)
            s.flush()
            s.add(
                Review(
                    gold_id=item.id,
                    reviewer_id=reviewer_id,
                    status="done",
                    pick=pick,
                    strength=3,
                    assigned_at=at,
                    decided_at=at + timedelta(minutes=i),
                )
            )
