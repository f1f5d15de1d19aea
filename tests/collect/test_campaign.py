"""The scripted campaign of docs/collect.md ("A scripted campaign") runs as written, on SQLite
and PostgreSQL: twelve annotators, guidelines, imported tasks and gold, a failed and a missing
qualification, quotas and the campaign's total, a backend paused halfway, reviewers' verdicts,
and an export of exactly the accepted, qualified, non-gold data (the script asserts the
export itself). Here the database is read afterwards for what the script cannot see."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from sqlalchemy import select

from hhrlhf.collect.db import Storage
from hhrlhf.collect.db.models import (
    Annotator,
    BackendEvent,
    Candidate,
    Conversation,
    GoldItem,
    Review,
    Task,
    Turn,
)
from hhrlhf.collect.services.stats import leaderboard_games

DOC = Path(__file__).resolve().parents[2] / "docs" / "collect.md"


def _script() -> str:
    section = DOC.read_text(encoding="utf-8").split("### A scripted campaign\n", 1)[1]
    found = re.search(r"```python\n(.*?)```", section.split("\n## ", 1)[0], re.S)
    assert found, "docs/collect.md's scripted campaign has no Python block"
    return found.group(1)


def test_the_scripted_campaign_runs_and_keeps_every_rule(db_url, tmp_path):
    (tmp_path / "campaign.py").write_text(_script(), encoding="utf-8")
    env = {**os.environ, "HH_COLLECT_DB": db_url}
    done = subprocess.run(
        [sys.executable, "campaign.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "14 lines; left out: {'rejected': 2, 'not_qualified': 4}" in done.stdout

    storage = Storage(db_url)
    try:
        with storage.read() as s:
            by_name = {a.name: a for a in s.scalars(select(Annotator))}
            convs = list(s.scalars(select(Conversation)))
            # the qualification round: a03 failed, a09 never took it, the others passed
            assert by_name["a03"].qualification == "failed"
            assert by_name["a09"].qualification is None
            passed = {n for n, a in by_name.items() if a.qualification == "passed"}
            assert passed == {f"a{i:02}" for i in range(1, 13)} - {"a03", "a09"}
            # every conversation was handed a task, under guidelines version 1; two each
            assert len(convs) == 20 and all(c.task_id is not None for c in convs)
            assert {c.guidelines_version for c in convs} == {1}
            per_annotator: dict[int, int] = {}
            for c in convs:
                per_annotator[c.annotator_id] = per_annotator.get(c.annotator_id, 0) + 1
            assert sorted(per_annotator.values()) == [2] * 10
            # never the same task twice to one annotator; every task served its repeat
            assert len({(c.annotator_id, c.task_id) for c in convs}) == 20
            assert {(t.served, t.repeat) for t in s.scalars(select(Task))} == {(2, 2)}
            # the red-team task never went to a02, who may not red-team
            red = [c for c in convs if c.mode == "red-team"]
            assert len(red) == 2 and by_name["a02"].id not in {c.annotator_id for c in red}
            # no turn started after the pause drew the paused backend
            paused = s.scalars(select(BackendEvent).where(BackendEvent.action == "pause")).one()
            assert (paused.backend, paused.by) == ("demo-c", "root")
            after = s.execute(
                select(Candidate.backend)
                .join(Turn, Candidate.turn_id == Turn.id)
                .where(Turn.created_at > paused.at)
            ).scalars()
            drawn_after = set(after)
            assert drawn_after and "demo-c" not in drawn_after
            # gold: 4 items, reviewed only as reviews (never a comparison), 3 by each but a09
            assert s.scalar(select(GoldItem.id).order_by(GoldItem.id.desc())) == 4
            gold_reviews = list(s.scalars(select(Review).where(Review.gold_id.is_not(None))))
            assert len(gold_reviews) == 3 * 11
            assert all(r.comparison_id is None for r in gold_reviews)
        # the leaderboard counts only the picks of annotators who passed
        uncounted = {
            c.id for c in convs if c.annotator_id in {by_name["a03"].id, by_name["a09"].id}
        }
        games = leaderboard_games(storage)
        assert games and not {conv_id for conv_id, _, _ in games} & uncounted
    finally:
        storage.dispose()
    manifest = json.loads((tmp_path / "campaign-export" / "manifest.json").read_text())
    assert manifest["accepted_only"] is True
    assert manifest["guidelines"]["conversations"] == {"1": 20}
    assert manifest["left_out"]["no_verdict"] == 0
