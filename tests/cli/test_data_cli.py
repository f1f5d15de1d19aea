"""`hh info`, `hh show`, `hh stats`, `hh demo` and error handling, through click's runner."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from hhrlhf.cli import cli

GOOD = Path(__file__).parents[1] / "data" / "good"
BAD = Path(__file__).parents[1] / "data" / "bad"


def run(*args, ok=True):
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    if ok:
        assert result.exit_code == 0, result.output + (result.stderr or "")
    return result


def test_info_sample_counts_rows():
    out = json.loads(run("info", "--data", "sample", "--json").stdout)
    assert out["data"] == "sample"
    rows = {(f["subset"], f["split"]): f["rows"] for f in out["files"]}
    assert len(rows) == 9 and all(n > 0 for n in rows.values())


def test_info_cache_reports_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("HH_RLHF_CACHE", str(tmp_path))
    out = json.loads(run("info", "--json").stdout)
    assert {f["checksum"] for f in out["files"]} == {"missing"}
    assert not any(f["cached"] for f in out["files"])
    table = run("info").stdout
    assert "harmless-base" in table and "missing" in table


def test_info_single_file():
    out = json.loads(run("info", "--data", str(GOOD / "red_team.json"), "--json").stdout)
    assert out["files"] == [{"file": str(GOOD / "red_team.json"), "container": "array", "rows": 2}]


def test_show_marks_prompt_and_responses():
    result = run("show", "helpful-base", "--split", "test", "--index", "1", "--data", "sample")
    assert "CHOSEN response" in result.stdout and "REJECTED response" in result.stdout
    assert "classes:" in result.stdout and "index 1" in result.stdout
    data = json.loads(
        run(
            "show", "helpful-base", "--split", "test", "--index", "1", "--data", "sample", "--json"
        ).stdout
    )
    assert data["prompt"] + data["chosen_response"] == data["chosen"]
    assert data["index"] == 1


def test_show_sample_is_seeded():
    a = run(
        "show", "harmless-base", "--sample", "2", "--seed", "3", "--data", "sample", "--json"
    ).stdout
    b = run(
        "show", "harmless-base", "--sample", "2", "--seed", "3", "--data", "sample", "--json"
    ).stdout
    assert a == b and len(json.loads(a)) == 2


def test_show_errors():
    result = run("show", "helpful-base", "--index", "99999", "--data", "sample", ok=False)
    assert result.exit_code == 1 and "has no pair with index 99999" in result.stderr
    result = run("show", "helpful-base", "--index", "1", "--sample", "2", ok=False)
    assert result.exit_code == 2


def test_stats_numbers_match_the_library():
    from hhrlhf import iter_pairs
    from hhrlhf.stats import pair_stats

    out = json.loads(
        run("stats", "harmless-base", "--split", "test", "--data", "sample", "--json").stdout
    )
    expected = pair_stats(iter_pairs("harmless-base", split="test", data="sample"))
    assert out == {"harmless-base/test": json.loads(json.dumps(expected))}
    table = run("stats", "--data", "sample").stdout
    assert "helpful-rejection-sampled/train" in table and "human turns per prompt" in table


def test_bad_file_is_one_clear_line_and_exit_1():
    result = run("stats", "--split", "train", "--data", str(BAD / "missing_key.jsonl"), ok=False)
    assert result.exit_code == 1
    assert result.stderr.startswith(
        f"error: {BAD / 'missing_key.jsonl'}, line 3: missing key 'rejected'"
    )
    assert "Traceback" not in result.output


def test_lenient_stats_reports_skips():
    result = run(
        "stats", "--split", "train", "--data", str(BAD / "missing_key.jsonl"), "--lenient", "--json"
    )
    assert json.loads(result.stdout) == {
        "missing_key.jsonl/train": json.loads(result.stdout)["missing_key.jsonl/train"]
    }
    assert json.loads(result.stdout)["missing_key.jsonl/train"]["rows"] == 2
    assert (
        "skipped: " in result.stderr
        and "line 3" in result.stderr
        and "read 2 of 3 rows (1 skipped)" in result.stderr
    )


def test_demo_runs_on_the_sample_and_replaces_its_own_earlier_output(tmp_path):
    from hhrlhf.demo import DEMO_MARKER, finish_demo_output, start_demo_output

    # an earlier run's folder (marked by the demo), with a file this run does not write
    start_demo_output(tmp_path / "demo")
    (tmp_path / "demo" / "stale.txt").write_text("from an earlier run")
    finish_demo_output(tmp_path / "demo")
    result = run("demo", "--out", str(tmp_path / "demo"))
    assert "outputs are in" in result.stdout
    assert "replacing" in result.stderr and "an earlier hh demo's output" in result.stderr
    assert (tmp_path / "demo" / "stats.json").is_file()
    assert (tmp_path / "demo" / DEMO_MARKER).is_file()
    assert not (tmp_path / "demo" / "stale.txt").exists()
    assert "prompt + chosen_response == chosen: True" in result.stdout
    # off a terminal, the quick export and check steps say what they did once, in their own
    # summary lines, without a progress line per file before them
    assert "export: 20 harmless-base/test pairs as dpo" in result.stdout
    assert "check harmless-base/train" not in result.stderr, result.stderr


def test_demo_never_removes_a_folder_it_did_not_make(tmp_path):
    mine = tmp_path / "hh-demo-out"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    result = run("demo", "--out", str(mine), ok=False)
    assert result.exit_code == 1
    assert result.stderr.startswith(
        f"error: {mine}: --out: holds 1 item hhrlhf did not write (notes.txt)"
    )
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
    # nor with --force, nor when the user's file sits in a folder an earlier demo made
    assert run("demo", "--out", str(mine), "--force", ok=False).exit_code == 1
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
    demo = tmp_path / "demo"
    run("demo", "--out", str(demo))
    (demo / "thesis.tex").write_text("mine")
    result = run("demo", "--out", str(demo), "--force", ok=False)
    assert "holds 1 item hhrlhf did not write (thesis.tex)" in result.stderr
    assert (demo / "thesis.tex").read_text() == "mine" and (demo / "stats.json").is_file()


def test_python_m_and_version():
    from hhrlhf.fastload import NATIVE

    proc = subprocess.run(
        [sys.executable, "-m", "hhrlhf", "--version"], capture_output=True, text=True
    )
    assert proc.returncode == 0 and proc.stdout.startswith("hh, version")
    assert ("loader: native" in proc.stdout) is NATIVE
    off = subprocess.run(
        [sys.executable, "-m", "hhrlhf", "--version"],
        capture_output=True,
        text=True,
        env={**os.environ, "HH_RLHF_NATIVE": "0"},
    )
    assert "loader: pure Python" in off.stdout


@pytest.mark.parametrize("command", ["info", "show", "stats", "download", "demo"])
def test_every_command_has_help_with_an_example(command):
    out = run(command, "--help").stdout
    assert "Example" in out


def test_print_table_right_aligns_numbers_including_negative(capsys):
    from hhrlhf.cli.options import print_table

    print_table([{"name": "a", "score": "-1.5"}, {"name": "bbb", "score": "12.25"}])
    lines = capsys.readouterr().out.splitlines()
    assert lines[2] == "a      -1.5"
    assert lines[3] == "bbb   12.25"


CONTROL = Path(__file__).parents[1] / "data" / "control"


def test_show_escapes_terminal_control_characters():
    out = run("show", "harmless-base", "--data", str(CONTROL), "--index", "0").stdout
    assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out and "\x7f" not in out
    assert "\\x1b]0;title\\x07" in out and "\\x1b[2J" in out and "\\x7f" in out


def test_show_json_keeps_the_data_exact_and_escaped_by_json():
    out = run("show", "harmless-base", "--data", str(CONTROL), "--index", "0", "--json").stdout
    assert "\x1b" not in out and "\x07" not in out and "\\u001b]0;title\\u0007" in out
    assert "\x1b[2J" in json.loads(out)["chosen_response"]


@pytest.fixture
def hidden_text(tmp_path) -> Path:
    """One pair whose chosen response holds a bidi override, a zero-width space and a C1
    control: it displays differently than it reads."""
    folder = tmp_path / "harmless-base"
    folder.mkdir()
    prompt = "\n\nHuman: Name the file.\n\nAssistant:"
    row = {
        "chosen": prompt + " report\u202eexe.txt, pass\u200bword\x85 done",
        "rejected": prompt + " report.txt",
    }
    (folder / "test.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    return tmp_path


HIDDEN = ("\u202e", "\u200b", "\x85")


def test_show_escapes_bidi_zero_width_and_c1_characters(hidden_text):
    out = run("show", "harmless-base", "--data", str(hidden_text), "--index", "0").stdout
    assert not any(c in out for c in HIDDEN)
    assert "report\\u202eexe.txt, pass\\u200bword\\x85 done" in out


def test_show_json_escapes_them_as_json_escapes_of_the_same_text(hidden_text):
    out = run("show", "harmless-base", "--data", str(hidden_text), "--index", "0", "--json").stdout
    assert not any(c in out for c in HIDDEN)
    assert "report\\u202eexe.txt, pass\\u200bword\\u0085 done" in out
    assert json.loads(out)["chosen_response"] == " report\u202eexe.txt, pass\u200bword\x85 done"


def test_stats_of_an_empty_split_print_n_a_not_zeros(tmp_path):
    folder = tmp_path / "helpful-base"
    folder.mkdir()
    (folder / "train.jsonl").write_text((GOOD / "pairs.jsonl").read_text(encoding="utf-8"))
    (folder / "test.jsonl").write_text("")
    lines = run("stats", "--data", str(tmp_path)).stdout.splitlines()
    train = next(line for line in lines if line.startswith("helpful-base/train"))
    test = next(line for line in lines if line.startswith("helpful-base/test"))
    assert "n/a" not in train and "%" in train
    assert test.split()[1:5] == ["0", "n/a", "n/a", "n/a"]
    # --json: null, never zeros that read as lengths and shares
    got = json.loads(run("stats", "--data", str(tmp_path), "--json").stdout)["helpful-base/test"]
    assert got["chosen_longer_share"] is None
    assert set(got["chosen_response_chars"].values()) == {None}
    assert got["rejected_response_chars"]["median"] is None
    empty_only = run("stats", "helpful-base", "--split", "test", "--data", str(tmp_path))
    assert "human turns per prompt: n/a (no rows)" in empty_only.stdout
    plots = run("stats", "--data", str(tmp_path), "--plots", str(tmp_path / "p"))
    assert (tmp_path / "p" / "helpful-base-test-lengths.png").is_file(), plots.stderr


def test_demo_on_a_folder_with_an_empty_split_says_so(tmp_path):
    folder = tmp_path / "data" / "helpful-base"
    folder.mkdir(parents=True)
    (folder / "train.jsonl").write_text((GOOD / "pairs.jsonl").read_text(encoding="utf-8"))
    (folder / "test.jsonl").write_text("")
    r = run("demo", "--data", str(tmp_path / "data"), "--out", str(tmp_path / "demo"))
    assert "test: 0 pairs (an empty split: no statistics)" in r.stdout
    assert "skipped: the test split in " in r.stdout and "is empty" in r.stdout


def test_info_never_prints_none_for_a_missing_file(tmp_path):
    (tmp_path / "harmless-base").mkdir()
    (tmp_path / "harmless-base" / "test.jsonl").write_text(
        (GOOD / "pairs.jsonl").read_text(encoding="utf-8"), encoding="utf-8"
    )
    out = run("info", "--data", str(tmp_path)).stdout
    assert "None" not in out
    # a folder lists what is there: the one file, with its rows, and no row for absent files
    assert "harmless-base/test.jsonl" in out and "helpful-base" not in out
    files = json.loads(run("info", "--data", str(tmp_path), "--json").stdout)["files"]
    assert [(f["subset"], f["split"], f["rows"]) for f in files] == [("harmless-base", "test", 3)]
    assert all(v is not None for f in files for v in f.values())


def test_tables_show_missing_values_as_a_dash(capsys):
    from hhrlhf.cli.options import print_table

    print_table([{"a": None, "b": "x\ty"}])
    out = capsys.readouterr().out
    assert "None" not in out and "-" in out.splitlines()[2] and "x\\x09y" in out


def _damaged(tmp_path, lines) -> str:
    path = tmp_path / "d" / "harmless-base" / "test.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(line + "\n" for line in lines))
    return str(tmp_path / "d")


def _pair(text: str) -> str:
    return json.dumps(
        {
            "chosen": f"\n\nHuman: {text}\n\nAssistant: Sure.",
            "rejected": f"\n\nHuman: {text}\n\nAssistant: No.",
        }
    )


def test_show_lenient_skips_bad_rows_and_says_read_n_of_m(tmp_path):
    data = _damaged(tmp_path, [_pair("first"), "{not json", _pair("third")])
    r = run("show", "--index", "2", "--data", data, ok=False)
    assert r.exit_code == 1 and "test.jsonl, line 2" in r.stderr
    r = run("show", "--index", "2", "--data", data, "--lenient")
    assert "third" in r.stdout
    assert "test.jsonl, line 2: invalid JSON" in r.stderr
    assert r.stderr.splitlines()[-1] == "read 2 of 3 rows (1 skipped)"
    r = run("show", "--sample", "5", "--json", "--data", data, "--lenient")
    assert len(json.loads(r.stdout)) == 2
    assert r.stderr.splitlines()[-1] == "read 2 of 3 rows (1 skipped)"


def test_show_lenient_that_skips_every_row_fails(tmp_path):
    data = _damaged(tmp_path, ['{"chosen": 1}', '{"x": 2}'])
    r = run("show", "--sample", "1", "--data", data, "--lenient", ok=False)
    assert r.exit_code == 1 and r.stdout == ""
    assert "read 0 of 2 rows (2 skipped)" in r.stderr
    assert r.stderr.splitlines()[-1].startswith("error: ")
