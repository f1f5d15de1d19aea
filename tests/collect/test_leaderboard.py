"""The collected picks as votes: conversation bootstrap, lengths, dates and turn references."""

import random
from collections import Counter
from datetime import datetime, timezone

import pytest
from test_review import conversation

from hhrlhf.collect.leaderboard import leaderboard
from hhrlhf.collect.services import annotators
from hhrlhf.collect.services.stats import leaderboard_games, model_leaderboard
from hhrlhf.ranking import Vote


def test_known_answer_recovered_with_covering_intervals():
    truth = {"strong": 1200.0, "middle": 1000.0, "weak": 800.0}
    rng = random.Random(12)
    names = list(truth)
    games = []
    for conv in range(120):
        for _ in range(3):  # 360 comparisons, three turns per conversation
            x, y = rng.sample(names, 2)
            p_x = 1 / (1 + 10 ** ((truth[y] - truth[x]) / 400))
            games.append((conv, x, y) if rng.random() < p_x else (conv, y, x))
    board = leaderboard(games, resamples=300, seed=3)
    rows = board["models"]
    assert [r["name"] for r in rows] == ["strong", "middle", "weak"]
    for r in rows:
        assert r["ci_low"] <= truth[r["name"]] <= r["ci_high"], r
        assert r["ci_low"] <= r["rating"] <= r["ci_high"]
    assert sum(r["comparisons"] for r in rows) == 2 * len(games)
    assert board["conversations"] == 120
    assert board["intervals"]["method"] == "conversation bootstrap"
    wins = Counter(w for _, w, _ in games)
    strong = rows[0]
    assert strong["win_rate"] == pytest.approx(wins["strong"] / strong["comparisons"], abs=1e-4)


def test_bootstrap_resamples_conversations_not_turns():
    # one conversation of many identical turns: resampling conversations cannot vary it,
    # so the interval collapses onto the estimate (resampling turns would not)
    games = [(1, "x", "y")] * 20 + [(1, "y", "x")] * 10
    row = {r["name"]: r for r in leaderboard(games, resamples=50)["models"]}["x"]
    assert row["ci_low"] == row["ci_high"] == row["rating"]
    votes = [Vote(w, lo, "model_a") for _, w, lo in games]  # the same votes, ungrouped
    row = {r["name"]: r for r in leaderboard(votes, resamples=50)["models"]}["x"]
    assert row["ci_low"] < row["rating"] < row["ci_high"]


def test_empty():
    assert leaderboard([])["models"] == []


def test_database_votes_carry_lengths_dates_and_turns(storage):
    alice, _ = annotators.add_annotator(storage, "alice")
    h = conversation(storage, alice, [("a", 2), ("b", 3)], backends=("m1", "m2"))
    r = conversation(storage, alice, [("a", 2)], mode="red-team", backends=("m1", "m2"))
    votes = leaderboard_games(storage, detail=True)
    assert [(v.group, v.model_a, v.model_b, v.winner) for v in votes] == [
        (h, "m1", "m2", "model_a"),
        (h, "m2", "m1", "model_a"),
        (r, "m2", "m1", "model_a"),
    ]
    with storage.read() as s:
        from sqlalchemy import select

        from hhrlhf.collect.db.models import Comparison

        picks = s.execute(
            select(Comparison.turn_id, Comparison.chosen_text, Comparison.rejected_text)
            .where(Comparison.kind == "pick")
            .order_by(Comparison.id)
        ).all()
    for v, (turn, chosen, rejected) in zip(votes, picks, strict=True):
        assert v.ref == {"conversation": v.group, "turn": turn}
        # the winner is model A: in red-team mode the response NOT picked
        expected = (len(rejected), len(chosen)) if v.group == r else (len(chosen), len(rejected))
        assert (v.length_a, v.length_b) == expected
        assert abs(v.tstamp - datetime.now(timezone.utc).timestamp()) < 600
    board = model_leaderboard(storage, resamples=20, robustness=True)
    assert board["votes"] == 3 and board["ties"] == 0 and board["conversations"] == 2
    assert board["dates"]["first"] <= board["dates"]["last"]
    # m2 leads 2 to 1: one removal ties them, both of m2's wins make m1 first
    flip = board["robustness"]["flip_top"]
    assert flip["votes"] == 2 and flip["new_top"] == "m1"
    assert sorted(t["turn"] for t in flip["turns"]) == sorted(
        v.ref["turn"] for v in votes if v.model_a == "m2"
    )
    assert model_leaderboard(storage, resamples=0, style_control=True)["style"] is not None
