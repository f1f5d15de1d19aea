"""Every command on data of any shape: one split, custom subset names, one file, empty files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from hhrlhf.cli import cli

LAYOUTS = Path(__file__).parents[1] / "data" / "layouts"
ONE = str(LAYOUTS / "one-split")
ONE_FILE = str(LAYOUTS / "one-split" / "harmless-base" / "test.jsonl.gz")
CUSTOM = str(LAYOUTS / "custom")
ODD = str(LAYOUTS / "odd" / "dialogues-2024.jsonl")
EMPTY = str(LAYOUTS / "empty")


def run(*args, ok=True):
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    if ok:
        assert result.exit_code == 0, result.output + (result.stderr or "")
    return result


def commands(tmp_path, data):
    """Every command that reads pairs, writing under tmp_path."""
    return [
        ["check", "--no-near-dups"],
        ["clean", "--out", tmp_path / "clean"],
        ["stats"],
        ["show"],
        ["export", "--format", "dpo", "--out", tmp_path / "x.jsonl"],
        ["pm", "train", "--out", tmp_path / "pm", "--max-iter", "5"],
    ]


@pytest.mark.parametrize("split", [[], ["--split", "test"]])
@pytest.mark.parametrize("data", [ONE, ONE_FILE])
def test_one_split_every_command(tmp_path, data, split):
    for cmd in commands(tmp_path, data):
        result = run(*cmd, *split, "--data", data)
        assert "Traceback" not in result.output
    assert (tmp_path / "clean" / "harmless-base" / "test.jsonl.gz").exists()
    assert len((tmp_path / "x.jsonl").read_text().splitlines()) == 5
    ev = run("pm", "eval", *split, "--model", tmp_path / "pm", "--data", data, "--json")
    assert json.loads(ev.stdout)["overall"]["n"] == 5


def test_pm_train_without_a_train_split_says_what_it_uses(tmp_path):
    result = run("pm", "train", "--out", tmp_path / "pm", "--max-iter", "5", "--data", ONE)
    assert f"no train split in {ONE}: using test" in result.stderr


def test_check_skips_the_leak_check_in_one_line(tmp_path):
    result = run("check", "--data", ONE, "--json")
    lines = [x for x in result.stderr.splitlines() if x.startswith("skipped")]
    assert lines == [
        f"skipped train_test_leak, near_duplicate_leak: no train split in {ONE} "
        "to compare the test prompts with"
    ]
    out = json.loads(result.stdout)
    assert set(out["skipped"]) == {"train_test_leak", "near_duplicate_leak"}
    assert out["counts"]["empty_response"] == 1 and out["rows"] == 5
    # with a train split there, nothing is skipped
    assert (
        json.loads(run("check", "--data", "sample", "--json", "--fail-on", "none").stdout)[
            "skipped"
        ]
        == {}
    )


@pytest.mark.parametrize(
    "cmd",
    [
        ["check"],
        ["clean", "--out", "{tmp}/c"],
        ["stats"],
        ["show", "harmless-base"],
        ["export", "--format", "dpo", "--out", "{tmp}/x.jsonl"],
        ["pm", "train", "--out", "{tmp}/pm"],
        ["pm", "eval", "--scores", "{tmp}/none.jsonl"],
    ],
)
@pytest.mark.parametrize("data", ["sample", ONE])
def test_unknown_split_is_an_error_naming_the_splits(tmp_path, cmd, data):
    args = [a.replace("{tmp}", str(tmp_path)) for a in cmd]
    result = run(*args, "--split", "validation", "--data", data, ok=False)
    assert result.exit_code != 0
    there = "train, test" if data == "sample" else "test"
    assert f"no split 'validation'; splits there: {there}" in result.output
    assert "Traceback" not in result.output


def test_custom_subset_name_in_every_command(tmp_path):
    stats = json.loads(run("stats", "my-campaign", "--data", CUSTOM, "--json").stdout)
    assert {k: v["rows"] for k, v in stats.items()} == {
        "my-campaign/train": 3,
        "my-campaign/test": 2,
    }
    shown = json.loads(
        run("show", "my-campaign", "--index", "2", "--data", CUSTOM, "--json").stdout
    )
    assert shown["subset"] == "my-campaign" and shown["split"] == "train"
    run("export", "my-campaign", "--format", "dpo", "--out", tmp_path / "x.jsonl", "--data", CUSTOM)
    assert len((tmp_path / "x.train.jsonl").read_text().splitlines()) == 3
    assert len((tmp_path / "x.test.jsonl").read_text().splitlines()) == 2
    check = json.loads(run("check", "my-campaign", "--data", CUSTOM, "--json").stdout)
    assert list(check["files"]) == ["my-campaign/train", "my-campaign/test"]
    run("clean", "my-campaign", "--out", tmp_path / "clean", "--data", CUSTOM)
    assert (tmp_path / "clean" / "my-campaign" / "test.jsonl.gz").exists()
    run("pm", "train", "my-campaign", "--out", tmp_path / "pm", "--max-iter", "5", "--data", CUSTOM)
    meta = json.loads((tmp_path / "pm" / "model.json").read_text())
    assert "my-campaign/train.jsonl.gz" in json.dumps(meta)
    # no subset named: every subset folder there, registry names first
    every = json.loads(run("stats", "--data", CUSTOM, "--json").stdout)
    assert list(every) == [
        "harmless-base/test",
        "another-campaign/train",
        "my-campaign/train",
        "my-campaign/test",
    ]
    info = json.loads(run("info", "--data", CUSTOM, "--json").stdout)
    assert ("my-campaign", "test", 2) in {
        (f["subset"], f["split"], f["rows"]) for f in info["files"]
    }


def test_absent_subset_is_an_error_naming_what_exists():
    result = run("stats", "helpful-base", "--data", ONE, ok=False)
    assert result.exit_code != 0
    assert "no subset 'helpful-base'; subsets there: harmless-base" in result.output


def test_single_file_is_what_its_path_says_never_a_guess(tmp_path):
    result = run("show", "helpful-base", "--data", ONE_FILE, ok=False)
    assert result.exit_code != 0
    assert "this file is harmless-base/test, not helpful-base" in result.output
    odd = run("stats", "--data", ODD, ok=False)
    assert odd.exit_code != 0 and "does not say which split it is; pass the split" in odd.output
    got = json.loads(
        run("stats", "my-campaign", "--split", "train", "--data", ODD, "--json").stdout
    )
    assert list(got) == ["my-campaign/train"] and got["my-campaign/train"]["rows"] == 3


def test_empty_splits_are_read_by_every_command(tmp_path):
    stats = json.loads(run("stats", "--data", EMPTY, "--json").stdout)
    assert {k: v["rows"] for k, v in stats.items()} == {
        "my-campaign/train": 0,
        "my-campaign/test": 0,
    }
    check = json.loads(run("check", "--data", EMPTY, "--json", "--no-near-dups").stdout)
    assert check["rows"] == 0
    manifest = json.loads(run("clean", "--out", tmp_path / "c", "--data", EMPTY, "--json").stdout)
    assert manifest["rows"] == 0 and len(manifest["files"]) == 2
    run("export", "--format", "dpo", "--out", tmp_path / "x.jsonl", "--data", EMPTY)
    assert (tmp_path / "x.train.jsonl").read_text() == (tmp_path / "x.test.jsonl").read_text() == ""
    info = json.loads(run("info", "--data", EMPTY, "--json").stdout)
    assert [f["rows"] for f in info["files"]] == [0, 0]


def test_demo_labels_its_steps_with_the_data_it_uses(tmp_path):
    out = run("demo", "--data", ONE, "--out", tmp_path / "demo").stdout
    assert f"hh info --data {ONE}" in out and "hh info --data sample" not in out
    assert "export: 5 harmless-base/test pairs" in out
    assert f"skipped: no red-team attempts in {ONE}" in out
    assert f"skipped: no train split in {ONE}" in out
    assert "check: skipped train_test_leak" in out


def test_demo_without_pairs_is_one_clear_error(tmp_path):
    result = run("demo", "--data", EMPTY, "--out", tmp_path / "demo", ok=False)
    assert result.exit_code == 1
    assert f"error: {EMPTY}: no preference pairs to walk through" in result.stderr
    assert "Traceback" not in result.output


def test_subset_option_names_a_single_files_subset(tmp_path):
    args = ["--subset", "my-campaign", "--split", "train", "--data", ODD]
    got = json.loads(run("stats", *args, "--json").stdout)
    assert list(got) == ["my-campaign/train"]
    shown = json.loads(run("show", *args, "--json").stdout)
    assert (shown["subset"], shown["split"], shown["index"]) == ("my-campaign", "train", 0)
    check = json.loads(run("check", *args, "--json").stdout)
    assert list(check["files"]) == ["my-campaign/train"]
    run("clean", *args, "--out", tmp_path / "c")
    assert (tmp_path / "c" / "my-campaign" / "train.jsonl.gz").exists()
    run("export", *args, "--format", "dpo", "--out", tmp_path / "x.jsonl")
    run("pm", "train", *args, "--out", tmp_path / "pm", "--max-iter", "5")
    ev = run("pm", "eval", *args, "--model", tmp_path / "pm", "--json")
    assert json.loads(ev.stdout)["overall"]["n"] == 3
    # the path says harmless-base: a different --subset is an error, not a relabelling
    wrong = run("stats", "--subset", "helpful-base", "--data", ONE_FILE, ok=False)
    assert (
        wrong.exit_code != 0 and "this file is harmless-base/test, not helpful-base" in wrong.output
    )
    # --subset is for a single file; a directory's subsets are arguments
    bad = run("stats", "--subset", "harmless-base", "--data", ONE, ok=False)
    assert bad.exit_code == 2 and "--subset names the subset of a single --data FILE" in bad.output


def test_a_stray_data_file_is_ignored_and_named(tmp_path):
    import shutil

    root = tmp_path / "data"
    shutil.copytree(ONE, root)
    (root / "harmless-base" / "notes.jsonl").write_text("my notes, not data\n")
    stats = run("stats", "--data", root, "--json")
    assert json.loads(stats.stdout)["harmless-base/test"]["rows"] == 5
    warning = [x for x in stats.stderr.splitlines() if x.startswith("warning:")]
    assert len(warning) == 1 and warning[0].endswith(": harmless-base/notes.jsonl")
    info = run("info", "--data", root, "--json")
    assert json.loads(info.stdout)["ignored"] == ["harmless-base/notes.jsonl"]
    assert "warning:" in info.stderr
    export = run("export", "--format", "dpo", "--out", tmp_path / "x.parquet", "--data", root)
    assert export.stderr.count("notes.jsonl") == 1
