"""The robustness search: a fragile leader falls to exactly the votes reported, a clear
leader needs many (or none is found within the limit), and every reported set is verified."""

from __future__ import annotations

import json

from sim import simulate

from hhrlhf.ranking import Vote, rank, read_battles


def _top(votes) -> str:
    return rank(votes, resamples=0)["models"][0]["name"]


def test_a_one_vote_lead_falls_to_the_two_wins_reported():
    # x leads y 11 to 10: removing one of x's wins ties them (not a change of leader),
    # removing two puts y first
    votes = [Vote("x", "y", "model_a")] * 11 + [Vote("x", "y", "model_b")] * 10
    flip = rank(votes, resamples=0, robustness=True, prior=0)["robustness"]["flip_top"]
    assert flip["votes"] == 2 and flip["new_top"] == "y"
    assert all(votes[k].winner == "model_a" for k in flip["lines"])
    kept = [v for k, v in enumerate(votes) if k not in set(flip["lines"])]
    assert _top(kept) == "y"


def test_fragile_simulated_leader_flipped_by_exactly_the_reported_lines(tmp_path):
    truth = {"north": 1010.0, "south": 1000.0, "east": 960.0, "west": 900.0}
    path = tmp_path / "votes.jsonl"
    lines = [json.dumps(v) for v in simulate(truth, 3000, seed=4, ties=0.1)]
    path.write_text("\n".join(lines) + "\n")
    board = rank(read_battles(path), resamples=0, robustness=True, robustness_limit=300)
    before = board["models"][0]["name"]
    flip = board["robustness"]["flip_top"]
    assert flip is not None and 1 <= flip["votes"] <= 100, board["robustness"]
    assert len(set(flip["lines"])) == flip["votes"]
    removed = set(flip["lines"])
    reduced = tmp_path / "reduced.jsonl"
    reduced.write_text("\n".join(x for k, x in enumerate(lines) if k not in removed) + "\n")
    after = rank(read_battles(reduced), resamples=0)["models"]
    assert after[0]["name"] == flip["new_top"] != before


def test_a_clear_leader_holds_within_the_limit_and_needs_many_beyond_it():
    truth = {"ace": 1400.0, "b": 1000.0, "c": 1000.0, "d": 950.0}
    votes = simulate(truth, 1000, seed=6)
    board = rank(votes, resamples=0, robustness=True)
    assert board["robustness"] == {"flip_top": None, "limit": 10}
    wide = rank(votes, resamples=0, robustness=True, robustness_limit=1000)
    flip = wide["robustness"]["flip_top"]
    assert flip is not None and flip["votes"] >= 60, flip
    kept = [v for k, v in enumerate(votes) if k not in set(flip["lines"])]
    assert _top(kept) == flip["new_top"] != "ace"


def test_robustness_reports_references_of_grouped_votes():
    votes = [
        Vote("x", "y", "model_a", group=1, ref={"conversation": 1, "turn": t}) for t in range(3)
    ] + [Vote("x", "y", "model_b", group=2, ref={"conversation": 2, "turn": 9})] * 2
    flip = rank(votes, resamples=0, robustness=True)["robustness"]["flip_top"]
    assert flip["votes"] == 2 and flip["new_top"] == "y"
    assert all(r["conversation"] == 1 for r in flip["refs"])
