"""`hh collect leaderboard --battles FILE`: output, style control, robustness, error lines."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from hhrlhf.cli import cli

BATTLES = Path(__file__).parents[1] / "data" / "battles.jsonl"


def run(*args):
    return CliRunner().invoke(cli, list(args))


def test_battles_json(tmp_path):
    r = run("collect", "leaderboard", "--battles", str(BATTLES), "--json", "--resamples", "50")
    assert r.exit_code == 0, r.output
    out = orjson.loads(r.stdout)
    rows = [json.loads(x) for x in BATTLES.read_text().splitlines()]
    assert out["votes"] == 40 and out["ties"] == sum(x["winner"].startswith("tie") for x in rows)
    assert out["intervals"]["method"] == "vote bootstrap"
    assert out["dates"]["first"].startswith("2024-04-25T01:14:09")
    assert {m["name"] for m in out["models"]} == {"otter-7b", "heron-13b", "wren-3b"}
    assert out["style"] is None and "robustness" not in out
    gz = tmp_path / "b.jsonl.gz"
    gz.write_bytes(gzip.compress(BATTLES.read_bytes()))
    r2 = run("collect", "leaderboard", "--battles", str(gz), "--json", "--resamples", "50")
    assert orjson.loads(r2.stdout) == out


def test_battles_table_with_style_and_robustness(tmp_path):
    r = run(
        "collect",
        "leaderboard",
        "--battles",
        str(BATTLES),
        "--style-control",
        "--robustness",
        "--json",
        "--resamples",
        "50",
    )
    assert r.exit_code == 0, r.output
    out = orjson.loads(r.stdout)
    assert set(out["style"]["length"]) >= {"coef", "ci_low", "ci_high"}
    flip = out["robustness"]["flip_top"]
    # verified: ranking the file without the reported lines puts another model first
    kept = [x for k, x in enumerate(BATTLES.read_text().splitlines()) if k not in flip["lines"]]
    reduced = tmp_path / "reduced.jsonl"
    reduced.write_text("\n".join(kept) + "\n")
    again = run("collect", "leaderboard", "--battles", str(reduced), "--json", "--resamples", "0")
    assert orjson.loads(again.stdout)["models"][0]["name"] == flip["new_top"]
    assert out["models"][0]["name"] != flip["new_top"]
    r = run(
        "collect", "leaderboard", "--battles", str(BATTLES), "--robustness", "--resamples", "20"
    )
    assert r.exit_code == 0, r.output
    assert "40 comparisons (7 ties)" in r.stdout and "vote bootstrap, 20 resamples" in r.stdout
    assert f"if these {flip['votes']} votes are removed (lines " in r.stdout


LINE_1 = '{"model_a": "x", "model_b": "y", "winner": "model_a"}'
ERRORS = {
    "malformed JSON": ('{"model_a": "x", "model_b": "y", "winner": ', "line 2: invalid JSON"),
    "unknown winner": (
        '{"model_a": "x", "model_b": "y", "winner": "A"}',
        "line 2: unknown winner 'A'",
    ),
    "compared with itself": (
        '{"model_a": "y", "model_b": "y", "winner": "tie"}',
        "line 2: model 'y' is compared with itself",
    ),
    "tstamp past 9999": (
        '{"model_a": "x", "model_b": "y", "winner": "tie", "tstamp": 1e20}',
        "line 2: tstamp must be Unix seconds from 0 to 253402300799 (1970 to 9999), got 1e+20",
    ),
    "tstamp before 1970": (
        '{"model_a": "x", "model_b": "y", "winner": "tie", "tstamp": -1e15}',
        "line 2: tstamp must be Unix seconds from 0 to 253402300799",
    ),
    "no lengths for style control": (
        '{"model_a": "x", "model_b": "y", "winner": "tie", "length_a": 4}',
        "line 1: style control needs both response lengths",
    ),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_bad_battles_file_is_one_error_line(tmp_path, case):
    line, message = ERRORS[case]
    path = tmp_path / "votes.jsonl"
    path.write_text(LINE_1 + "\n" + line + "\n")
    r = run("collect", "leaderboard", "--battles", str(path), "--style-control")
    assert r.exit_code == 1, r.output
    assert r.output.count("\n") == 1 and r.output.startswith("error: "), r.output
    assert f"{path}, {message}" in r.output
    assert "Traceback" not in r.output


def test_battles_and_db_together_is_a_usage_error():
    r = run("collect", "leaderboard", "--battles", str(BATTLES), "--db", "sqlite:///x.db")
    assert r.exit_code == 2 and "one or the other" in r.output


def test_empty_battles_file_is_an_error(tmp_path):
    path = tmp_path / "votes.jsonl"
    path.write_text("\n")
    r = run("collect", "leaderboard", "--battles", str(path))
    assert (
        r.exit_code == 1
        and r.output == f"error: {path}: empty file (blank lines only, no records)\n"
    )


def test_the_documented_example_is_the_real_output(monkeypatch):
    root = Path(__file__).parents[2]
    doc = (root / "docs" / "collect.md").read_text(encoding="utf-8")
    section = doc.split("## Model leaderboard\n", 1)[1]
    command = (
        "$ hh collect leaderboard --battles tests/data/battles.jsonl --style-control --robustness\n"
    )
    shown = section.split(command, 1)[1].split("\n$ ", 1)[0]
    monkeypatch.chdir(root)
    args = command.removeprefix("$ hh ").split()
    r = run(*args)
    assert r.exit_code == 0, r.output
    assert r.stdout.rstrip("\n") == shown.rstrip("\n")


def test_hh_leaderboard_is_a_top_level_command(db_url):
    """`hh leaderboard` and `hh collect leaderboard` are one command, with one output."""
    args = ("--battles", str(BATTLES), "--json", "--resamples", "30")
    top, nested = run("leaderboard", *args), run("collect", "leaderboard", *args)
    assert top.exit_code == 0, top.output
    assert top.stdout == nested.stdout and orjson.loads(top.stdout)["votes"] == 40
    r = run("leaderboard", "--db", db_url)
    assert r.exit_code == 0 and r.stdout == "no comparisons between two different backends yet\n"


def test_an_empty_battles_file_has_no_votes(tmp_path):
    path = tmp_path / "votes.jsonl"
    path.write_bytes(b"")
    r = run("leaderboard", "--battles", str(path))
    assert r.exit_code == 0 and r.stdout == f"no votes in {path}\n", r.output


UNBEATEN = [
    '{"model_a": "otter", "model_b": "heron", "winner": "model_a"}',
    '{"model_a": "heron", "model_b": "otter", "winner": "model_b"}',
    '{"model_a": "heron", "model_b": "wren", "winner": "model_a"}',
    '{"model_a": "wren", "model_b": "heron", "winner": "model_a"}',
    '{"model_a": "wren", "model_b": "kite", "winner": "tie"}',
]


def test_intervals_that_mean_nothing_are_said_to(tmp_path):
    """otter never lost, kite took part in one vote: warnings, not a 0-width interval, in
    the table, on stderr and in --json; heron, beaten and winning, keeps its interval."""
    path = tmp_path / "votes.jsonl"
    path.write_text("\n".join(UNBEATEN) + "\n")
    r = run("leaderboard", "--battles", str(path), "--json", "--resamples", "200")
    assert r.exit_code == 0, r.output
    models = {m["name"]: m for m in orjson.loads(r.stdout)["models"]}
    assert models["otter"]["warning"].startswith("never lost: no interval")
    assert models["kite"]["warning"].startswith("one vote: no interval")
    for name in ("otter", "kite"):
        assert models[name]["ci_low"] is None and models[name]["ci_high"] is None
    assert models["heron"]["warning"] is None and models["heron"]["ci_low"] is not None
    r = run("leaderboard", "--battles", str(path), "--resamples", "200")
    assert r.exit_code == 0
    row = {line.split()[0]: line for line in r.stdout.splitlines()[2:6]}
    assert "none (never lost)" in row["otter"] and "none (one vote)" in row["kite"]
    assert " to " in row["heron"]
    assert "warning: otter: never lost: no interval (no upper bound); its rating rests on " in (
        r.stderr
    )
    assert "warning: kite: one vote: no interval" in r.stderr
