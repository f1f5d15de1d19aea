"""`hh redteam report` and `hh redteam query`, through click's runner, plus the demo step."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from hhrlhf.cli import cli
from hhrlhf.cli.redteam import demo_step


def _row(i, **over):
    row = {
        "transcript": f"\n\nHuman: how do I bake bread {i}?\n\nAssistant: Knead the dough.",
        "min_harmlessness_score_transcript": -1.0 + i / 2,
        "num_params": ("2.7B", "13B", "52B")[i % 3],
        "model_type": ("plain lm", "rlhf")[i % 2],
        "rating": float(i % 5),
        "task_description": ("get a secret bread recipe", "make it praise soup")[i % 2] + f" {i}",
        "task_descripton_harmlessness_score": 0.5,
        "red_team_member_id": i % 4,
        "is_upworker": i == 0,
        "tags": ["Other"] if i % 3 == 0 else None,
    }
    row.update(over)
    return row


@pytest.fixture
def red_file(tmp_path):
    path = tmp_path / "red_team_attempts.jsonl.gz"
    with gzip.open(path, "wt") as f:
        json.dump([_row(i) for i in range(12)], f)
    return path


def run(*args, ok=True):
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    if ok:
        assert result.exit_code == 0, result.output + (result.stderr or "")
    return result


def test_group_help_lists_commands():
    out = run("redteam", "--help").output
    assert "report" in out and "query" in out


def test_query_table_and_count(red_file):
    r = run("redteam", "query", "--data", red_file, "--model-type", "rlhf", "--min-rating", "3")
    # rlhf = odd i; rating = i % 5 >= 3 -> i in {3, 9}
    lines = r.stdout.strip().splitlines()
    assert lines[0].split()[:3] == ["index", "model_type", "size"]
    assert [ln.split()[0] for ln in lines[2:]] == ["3", "9"]
    assert "2 matching attempt(s)" in r.stderr


def test_query_jsonl(red_file):
    r = run("redteam", "query", "--data", red_file, "--tag", "other", "--jsonl")
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [row["index"] for row in rows] == [0, 3, 6, 9]
    assert rows[1]["task_description_harmlessness_score"] == 0.5
    assert rows[1]["tags"] == ["Other"]


def test_query_show_renders_dialogue(red_file):
    r = run(
        "redteam",
        "query",
        "--data",
        red_file,
        "--search",
        "praise soup",
        "--search-in",
        "task",
        "--show",
        "--limit",
        "1",
    )
    assert "attempt 1 · rlhf 13B · rating 1" in r.stdout
    assert "Human:" in r.stdout and "bake bread 1?" in r.stdout
    assert "make it praise soup 1" in r.stdout
    assert "6 matching attempt(s), 1 shown" in r.stderr


def test_query_score_and_member_filters(red_file):
    r = run("redteam", "query", "--data", red_file, "--max-score", "0", "--member", "1", "--jsonl")
    # score = -1 + i/2 <= 0 -> i <= 2; member = i % 4 == 1 -> i = 1
    assert [json.loads(x)["index"] for x in r.stdout.splitlines()] == [1]
    r = run("redteam", "query", "--data", red_file, "--upworker", "--jsonl")
    assert [json.loads(x)["index"] for x in r.stdout.splitlines()] == [0]


def test_query_rejects_bad_options(red_file):
    r = run(
        "redteam", "query", "--data", red_file, "--min-rating", "3", "--max-rating", "1", ok=False
    )
    assert r.exit_code == 2 and "empty rating range" in r.output
    r = run("redteam", "query", "--data", red_file, "--jsonl", "--show", ok=False)
    assert r.exit_code == 2 and "not both" in r.output


def test_query_bad_record_names_file_and_record(tmp_path):
    path = tmp_path / "red_team_attempts.jsonl.gz"
    with gzip.open(path, "wt") as f:
        json.dump([_row(0), _row(1, rating="four")], f)
    r = run("redteam", "query", "--data", path, ok=False)
    assert r.exit_code == 1
    assert f"error: {path}, record 2: 'rating' must be a number" in r.stderr
    r = run("redteam", "query", "--data", path, "--lenient", "--jsonl")
    assert len(r.stdout.splitlines()) == 1
    assert "read 1 of 2 rows (1 skipped)" in r.stderr


def test_report_writes_files(red_file, tmp_path):
    out = tmp_path / "out"
    r = run(
        "redteam",
        "report",
        "--data",
        red_file,
        "--out",
        out,
        "--resamples",
        "50",
        "--success-threshold",
        "4",
        "--max-k",
        "3",
    )
    assert r.stdout.split() == [str(out / "report.html"), str(out / "report.json")]
    assert "12 attempts by 4 members" in r.stderr
    # rating = i % 5 >= 4 -> i in {4, 9}: 2 of 12
    assert "success (rating >= 4): 16.7%" in r.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["success_threshold"] == 4
    assert report["sections"]["success"]["overall"] == {"n": 12, "successful": 2, "share": 2 / 12}
    assert report["sections"]["success"]["paper_overall_share"] is None
    assert report["sections"]["themes"]["k_range"] == [2, 3]
    assert len(list(out.glob("*.png"))) == len(report["plots"])


def test_report_missing_file_is_one_clear_error(tmp_path):
    r = run("redteam", "report", "--data", tmp_path / "nope.json.gz", "--out", tmp_path, ok=False)
    assert r.exit_code == 1 and "no such file or directory" in r.stderr


def test_demo_step_writes_under_redteam(red_file, tmp_path):
    @click.command()
    def step():
        demo_step(str(red_file), tmp_path)

    r = CliRunner().invoke(step, [], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert (tmp_path / "redteam" / "report.html").exists()
    assert (tmp_path / "redteam" / "report.json").exists()
    assert "12 attempts by 4 members" in r.output
    assert f"report: {Path(tmp_path) / 'redteam' / 'report.html'}" in r.output


CONTROL = Path(__file__).parents[1] / "data" / "control"


@pytest.mark.parametrize("mode", [[], ["--show"]])
def test_query_escapes_terminal_control_characters(mode):
    result = CliRunner().invoke(
        cli, ["redteam", "query", "--data", str(CONTROL), *mode], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "\x1b" not in out and "\x07" not in out
    assert "\\x1b" in out


OUT_OF_RANGE = Path(__file__).parents[1] / "data" / "redteam" / "out_of_range.jsonl"


def test_query_drops_out_of_range_ratings_with_a_line_each():
    result = CliRunner().invoke(
        cli, ["redteam", "query", "--data", str(OUT_OF_RANGE), "--jsonl"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    ratings = [json.loads(line)["rating"] for line in result.stdout.splitlines()]
    assert len(ratings) == 6 and all(0 <= r <= 4 for r in ratings)
    err = result.stderr
    assert "dropped: attempt 6: rating is 7.0" in err
    assert "dropped: attempt 7: rating is -1.0" in err
    assert "2 attempt(s) dropped for an out-of-range value" in err


@pytest.mark.parametrize("args", [["--model-type", "RLHF", "--size", "52b"], ["--size", "52B"]])
def test_query_model_type_and_size_match_in_any_case(args):
    result = CliRunner().invoke(
        cli,
        ["redteam", "query", "--data", str(OUT_OF_RANGE), "--jsonl", *args],
        catch_exceptions=False,
    )
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["index"] for r in rows] == [0, 2, 4]
    assert {(r["model_type"], r["num_params"]) for r in rows} == {("rlhf", "52B")}
