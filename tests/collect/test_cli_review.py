"""`hh collect stats`, `hh collect leaderboard`, `hh collect annotator set` and `export --agreed-only`."""

from __future__ import annotations

import orjson
from click.testing import CliRunner
from test_review import conversation

from hhrlhf.cli import cli
from hhrlhf.collect.services import annotators
from hhrlhf.collect.services.review import next_review, submit_review


def run(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def reviewed_db(storage):
    """alice: one helpful conversation of two turns between m1 and m2; bob reviewed both,
    agreeing on the first turn only."""
    alice, _ = annotators.add_annotator(storage, "alice")
    bob, _ = annotators.add_annotator(storage, "bob")
    conversation(storage, alice, [("a", 3), ("b", 3)])
    while (task := next_review(storage, bob, 1.0)) is not None:
        # bob always prefers the original A (mapped through the shown order)
        shown_a = next(c.slot for c in task.candidates if c.text.startswith("Answer A"))
        submit_review(storage, bob, task.id, shown_a, 2, 4)


def test_stats_json_and_table(storage, db_url):
    reviewed_db(storage)
    r = run("collect", "stats", "--db", db_url, "--json", "--resamples", "20")
    assert r.exit_code == 0, r.output
    out = orjson.loads(r.stdout)
    assert out["agreement"]["units"] == 2
    assert out["agreement"]["percent_agreement"] == 0.5
    per = {row["name"]: row for row in out["annotators"]}
    assert per["alice"]["share_a"] == 0.5 and per["alice"]["strengths"] == {"3": 2}
    r = run("collect", "stats", "--db", db_url, "--resamples", "20")
    assert r.exit_code == 0
    assert "Fleiss' kappa" in r.stdout and "alice" in r.stdout and "50%" in r.stdout


def test_stats_without_reviews(storage, db_url):
    annotators.add_annotator(storage, "alice")
    r = run("collect", "stats", "--db", db_url)
    assert r.exit_code == 0 and "no reviewed comparisons yet" in r.stdout


def test_leaderboard_json_and_table(storage, db_url):
    reviewed_db(storage)
    r = run("collect", "leaderboard", "--db", db_url, "--json", "--resamples", "20")
    assert r.exit_code == 0, r.output
    models = orjson.loads(r.stdout)["models"]
    assert {m["name"] for m in models} == {"m1", "m2"}
    assert all(m["comparisons"] == 2 and m["win_rate"] == 0.5 for m in models)
    assert models[0]["rating"] == models[1]["rating"] == 1000.0
    r = run("collect", "leaderboard", "--db", db_url, "--resamples", "20")
    assert "m1" in r.stdout and "2 comparisons in 1 conversations" in r.stdout


def test_annotator_set(storage, db_url):
    annotators.add_annotator(storage, "alice")
    r = run(
        "collect",
        "annotator",
        "set",
        "alice",
        "--role",
        "admin",
        "--attr",
        "is_upworker=true",
        "--attr",
        "team=north",
        "--db",
        db_url,
    )
    assert r.exit_code == 0, r.output
    who = annotators.annotator_by_name(storage, "alice")
    assert who.role == "admin" and who.attributes == {"is_upworker": True, "team": "north"}
    r = run("collect", "annotator", "set", "alice", "--attr", "team=", "--db", db_url)
    assert annotators.annotator_by_name(storage, "alice").attributes == {"is_upworker": True}
    r = run("collect", "annotator", "set", "alice", "--db", db_url)
    assert r.exit_code != 0 and "nothing to change" in r.output
    r = run("collect", "annotator", "set", "alice", "--attr", "oops", "--db", db_url)
    assert r.exit_code != 0 and "KEY=VALUE" in r.output
    r = run("collect", "annotator", "set", "nobody", "--role", "admin", "--db", db_url)
    assert r.exit_code != 0 and "nobody" in r.output


def test_export_agreed_only(storage, db_url, tmp_path):
    reviewed_db(storage)
    conversation(
        storage, annotators.annotator_by_name(storage, "alice"), [("a", 2)]
    )  # never reviewed
    out = tmp_path / "all"
    r = run("collect", "export", "--db", db_url, "--out", str(out), "--json")
    assert r.exit_code == 0, r.output
    assert orjson.loads(r.stdout)["rows"] == 3
    out = tmp_path / "agreed"
    r = run("collect", "export", "--db", db_url, "--out", str(out), "--agreed-only", "--json")
    assert r.exit_code == 0, r.output
    manifest = orjson.loads(r.stdout)
    assert manifest["rows"] == 1 and manifest["agreed_only"] is True
    assert manifest["left_out"]["not_agreed"] == 1 and manifest["left_out"]["unreviewed"] == 1
    assert "not_agreed" in manifest["left_out_reasons"]
