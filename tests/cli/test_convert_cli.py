"""`hh export`, `hh import`, `hh check`, `hh clean` through click's runner: exit codes, output."""

from __future__ import annotations

import gzip
import importlib.util
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from hhrlhf.cli import cli


def run(*args, code=0):
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == code, result.output + (result.stderr or "")
    return result


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    from hhrlhf.testing.synth import write_corpus

    root = tmp_path_factory.mktemp("sample")
    write_corpus(root, scale="sample")
    return root


def t(*turns):
    roles = ("Human", "Assistant")
    return "".join(f"\n\n{roles[i % 2]}: {x}" for i, x in enumerate(turns))


@pytest.fixture
def dupes(tmp_path) -> Path:
    p = {"chosen": t("Hi", "Hello"), "rejected": t("Hi", "Go away")}
    q = {"chosen": t("Bye", "Bye now"), "rejected": t("Bye", "Whatever")}
    for split, rows in (("train", [p, p, q]), ("test", [q])):
        path = tmp_path / "d" / "helpful-base" / f"{split}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path / "d"


def test_export_dpo_then_import_gives_upstream_bytes(sample, tmp_path):
    out = tmp_path / "t.dpo.jsonl.gz"
    r = run(
        "export",
        "harmless-base",
        "--split",
        "test",
        "--format",
        "dpo",
        "--out",
        out,
        "--data",
        sample,
    )
    assert "wrote 20 rows in format dpo" in r.stderr
    rows = [json.loads(x) for x in gzip.decompress(out.read_bytes()).splitlines()]
    assert rows[3]["index"] == 3 and rows[3]["subset"] == "harmless-base"
    back = tmp_path / "back.jsonl"
    run("import", out, "--format", "dpo", "--out", back)
    original = gzip.decompress((sample / "harmless-base" / "test.jsonl.gz").read_bytes())
    assert back.read_bytes() == original


def test_export_no_source_and_both_splits(sample, tmp_path):
    out = tmp_path / "x.jsonl"
    r = run(
        "export",
        "helpful-base",
        "--format",
        "messages",
        "--no-source",
        "--out",
        out,
        "--data",
        sample,
    )
    # two splits never share a file: one per split, named from --out, and stderr says so
    assert not out.exists()
    assert "2 splits selected (train, test): one file per split" in r.stderr
    train = [json.loads(x) for x in (tmp_path / "x.train.jsonl").read_text().splitlines()]
    test = [json.loads(x) for x in (tmp_path / "x.test.jsonl").read_text().splitlines()]
    assert (len(train), len(test)) == (60, 20) and set(train[0]) == {"chosen", "rejected"}
    assert f"wrote 60 train rows in format messages to {tmp_path / 'x.train.jsonl'}" in r.stderr


@pytest.mark.parametrize("fmt", ["dpo", "raw", "trl-conversational", "sft", "openai"])
@pytest.mark.parametrize("name", ["p.jsonl", "p.jsonl.gz", "p.parquet"])
def test_export_one_file_per_split_for_every_format_and_container(sample, tmp_path, fmt, name):
    if name.endswith(".parquet"):
        pytest.importorskip("pyarrow", reason="parquet needs hhrlhf[hf]")
    from hhrlhf.convert.files import read_rows

    run("export", "--format", fmt, "--out", tmp_path / name, "--data", sample)
    stem, ending = name.split(".", 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f"{stem}.test.{ending}",
        f"{stem}.train.{ending}",
    ]
    for split, n in (("train", 240), ("test", 80)):
        rows = [r for _, r in read_rows(tmp_path / f"{stem}.{split}.{ending}")]
        assert len(rows) == n and {r["split"] for r in rows} == {split}
        # subsets share a split's file (as upstream's default configuration does), told apart
        # by the subset key
        assert len({r["subset"] for r in rows}) == 4


def test_export_split_files_are_checked_before_any_is_written(sample, tmp_path):
    (tmp_path / "p.test.jsonl").write_text("mine\n")
    r = run("export", "--format", "dpo", "--out", tmp_path / "p.jsonl", "--data", sample, code=1)
    assert r.stderr.startswith("error:") and "p.test.jsonl" in r.stderr and "--force" in r.stderr
    assert not (tmp_path / "p.train.jsonl").exists()
    assert (tmp_path / "p.test.jsonl").read_text() == "mine\n"
    run("export", "--format", "dpo", "--out", tmp_path / "p.jsonl", "--data", sample, "--force")
    assert len((tmp_path / "p.test.jsonl").read_text().splitlines()) == 80


def test_export_one_split_keeps_the_out_name(sample, tmp_path):
    r = run(
        "export", "--split", "train", "--format", "dpo", "--out", tmp_path / "t.jsonl",
        "--data", sample,
    )  # fmt: skip
    assert len((tmp_path / "t.jsonl").read_text().splitlines()) == 240
    assert "splits selected" not in r.stderr


def test_export_to_stdout_one_split_only(sample, tmp_path):
    r = run("export", "helpful-base", "--split", "test", "--format", "dpo", "--out", "-",
            "--data", sample)  # fmt: skip
    rows = [json.loads(x) for x in r.stdout.splitlines()]
    assert len(rows) == 20 and {x["split"] for x in rows} == {"test"}
    assert "wrote 20 rows in format dpo to stdout" in r.stderr
    r = run("export", "--format", "dpo", "--out", "-", "--data", sample, code=1)
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "--split" in lines[0]
    assert not (Path.cwd() / "-").exists()


def test_export_hf(sample, tmp_path):
    pytest.importorskip("datasets", reason="--hf needs hhrlhf[hf]")
    run(
        "export",
        "helpful-base",
        "--format",
        "trl-standard",
        "--hf",
        tmp_path / "hf",
        "--data",
        sample,
    )
    from hhrlhf.convert import hf_splits

    back = hf_splits(tmp_path / "hf")
    assert {k: len(v) for k, v in back.items()} == {"train": 60, "test": 20}


def test_export_redteam_and_import_to_stdout(sample, tmp_path):
    out = tmp_path / "rt.jsonl"
    run("export", "red-team-attempts", "--format", "redteam", "--out", out, "--data", sample)
    r = run("import", out, "--format", "redteam")
    first = json.loads(r.stdout.splitlines()[0])
    assert "task_descripton_harmlessness_score" in first and len(r.stdout.splitlines()) == 300


def test_export_usage_errors(sample, tmp_path):
    r = run("export", "--format", "dpo", "--data", sample, code=2)
    assert "exactly one of --out FILE or --hf DIR" in r.stderr
    r = run(
        "export",
        "red-team-attempts",
        "--format",
        "dpo",
        "--out",
        tmp_path / "x.jsonl",
        "--data",
        sample,
        code=2,
    )
    assert "--format redteam" in r.stderr
    r = run("export", "--format", "dpo", "--out", tmp_path / "x.csv", "--data", sample, code=1)
    assert r.stderr.startswith("error:") and ".jsonl.gz" in r.stderr


def test_import_bad_row_names_line(tmp_path):
    f = tmp_path / "bad.jsonl"
    f.write_text('{"prompt": "p", "chosen": " a", "rejected": " b"}\n{"prompt": 3}\n')
    r = run("import", f, "--format", "dpo", code=1)
    assert "bad.jsonl, line 2" in r.stderr
    r = run("import", f, "--format", "dpo", "--lenient")
    assert r.stdout == '{"chosen": "p a", "rejected": "p b"}\n'
    assert r.stderr.splitlines()[-1] == "read 1 of 2 rows (1 skipped)"


def test_import_lenient_that_skips_every_row_fails(tmp_path):
    f = tmp_path / "bad.jsonl"
    f.write_text('{"prompt": 3}\nnot json\n')
    r = run("import", f, "--format", "dpo", "--lenient", code=1)
    assert r.stdout == ""
    assert "line 1" in r.stderr and "line 2" in r.stderr
    assert "read 0 of 2 rows (2 skipped)" in r.stderr
    assert r.stderr.splitlines()[-1] == f"error: {f}: every row was skipped (2 of 2)"
    out = tmp_path / "o.jsonl"
    r = run("import", f, "--format", "dpo", "--lenient", "--out", out, code=1)
    assert r.stderr.splitlines()[-1].endswith(f"removed what this run wrote: {out}")
    assert not out.exists()  # no empty file for the next step to read, or to need --force


def test_check_json_counts(dupes):
    r = run("check", "helpful-base", "--json", "--data", dupes, code=1)
    out = json.loads(r.stdout)
    assert out["rows"] == 4
    assert out["counts"]["duplicate_pair"] == 1 and out["counts"]["train_test_leak"] == 1
    assert out["counts"]["bad_json"] == 0
    assert out["files"]["helpful-base/train"]["rows"] == 3


def test_check_table_and_report(dupes, tmp_path):
    report = tmp_path / "flagged.jsonl"
    r = run("check", "helpful-base", "--report", report, "--data", dupes, code=1)
    assert "4 rows in 2 file(s); 2 flagged" in r.stdout
    assert "duplicate_pair" in r.stdout
    rows = [json.loads(x) for x in report.read_text().splitlines()]
    assert [(x["source"]["split"], x["source"]["index"]) for x in rows] == [
        ("train", 1),
        ("test", 0),
    ]
    assert rows[1]["classes"] == ["train_test_leak"] and rows[1]["excerpt"].startswith("Human: Bye")


def test_check_fail_on(dupes):
    r = run("check", "helpful-base", "--fail-on", "duplicate_pair", "--data", dupes, code=1)
    assert "failing: duplicate_pair (1)" in r.stderr
    run("check", "helpful-base", "--fail-on", "bad_json,empty_response", "--data", dupes)


def test_check_fails_on_error_classes_by_default(dupes, tmp_path):
    # duplicate_pair is an error class, train_test_leak a warning: like a linter, exit 1
    r = run("check", "helpful-base", "--data", dupes, code=1)
    assert "failing: duplicate_pair (1) (error classes; --fail-on none exits 0)" in r.stderr
    assert "duplicate_pair" in r.stdout  # the table is still printed
    r = run("check", "helpful-base", "--fail-on", "none", "--data", dupes)
    assert "failing" not in r.stderr
    r = run("check", "helpful-base", "--fail-on", "warning", "--data", dupes, code=1)
    assert "failing: duplicate_pair (1), train_test_leak (1)" in r.stderr
    run("check", "helpful-base", "--fail-on", "none,duplicate_pair", "--data", dupes, code=2)
    clean = tmp_path / "clean"
    (clean / "helpful-base").mkdir(parents=True)
    for split in ("train", "test"):
        with gzip.open(clean / "helpful-base" / f"{split}.jsonl.gz", "wt") as f:
            f.write(json.dumps({"chosen": t(split, "yes"), "rejected": t(split, "no")}) + "\n")
    run("check", "helpful-base", "--data", clean)
    broken = tmp_path / "broken" / "helpful-base"
    broken.mkdir(parents=True)
    (broken / "test.jsonl").write_text(
        json.dumps({"chosen": t("a", "b"), "rejected": t("a", "c")}) + "\nnot json\n"
    )
    r = run("check", "helpful-base", "--data", broken.parent, code=1)
    assert "failing: bad_json (1)" in r.stderr


def test_unknown_class_is_a_usage_error(dupes, tmp_path):
    r = run("check", "--fail-on", "dupes", "--data", dupes, code=2)
    assert "unknown class 'dupes'" in r.stderr and "duplicate_pair" in r.stderr
    r = run("clean", "--out", tmp_path / "o", "--drop", "nope", "--data", dupes, code=2)
    assert "valid classes:" in r.stderr


def test_clean_command(dupes, tmp_path):
    out = tmp_path / "clean"
    r = run(
        "clean",
        "helpful-base",
        "--out",
        out,
        "--drop",
        "duplicate_pair,train_test_leak",
        "--data",
        dupes,
    )
    assert "4 rows in, 2 kept, 2 dropped" in r.stdout
    m = json.loads((out / "manifest.json").read_text())
    assert m["dropped_by_reason"] == {"duplicate_pair": 1, "train_test_leak": 1}
    r = run("clean", "helpful-base", "--out", out, "--data", dupes, code=1)
    assert "folder exists (written by hh clean); pass --force" in r.stderr


def test_commands_have_examples():
    for name in ("export", "import", "check", "clean"):
        r = run(name, "--help")
        assert "Example" in r.stdout, name


def test_demo_step(tmp_path, sample, capsys):
    from hhrlhf.cli.convert import demo_step

    demo_step(str(sample), tmp_path)
    out = capsys.readouterr().out
    assert "clean: 620 rows in" in out
    assert (tmp_path / "convert" / "clean" / "manifest.json").exists()
    assert (tmp_path / "convert" / "harmless-base-test.dpo.jsonl").exists()


@pytest.mark.parametrize("fmt", ["dpo", "raw"])
@pytest.mark.parametrize("no_source", [False, True])
def test_export_parquet_and_hf_through_load_arrow_equal_the_rows(sample, tmp_path, fmt, no_source):
    """dpo and raw go from the files straight into Arrow: the same rows, in the same order,
    as the row path gives (checked here against format_rows over iter_pairs)."""
    pq = pytest.importorskip("pyarrow.parquet", reason="parquet needs hhrlhf[hf]")
    pytest.importorskip("datasets", reason="--hf needs hhrlhf[hf]")
    import hhrlhf
    from hhrlhf.convert import format_rows, hf_splits

    extra = ["--no-source"] if no_source else []
    out = tmp_path / "x.parquet"
    run("export", "--format", fmt, "--out", out, "--data", sample, *extra)
    expected = {
        s: list(format_rows(hhrlhf.iter_pairs(split=s, data=sample), fmt, source=not no_source))
        for s in ("train", "test")
    }
    for s in ("train", "test"):
        assert pq.read_table(tmp_path / f"x.{s}.parquet").to_pylist() == expected[s]
    run(
        "export", "helpful-base", "--format", fmt, "--hf", tmp_path / "hf", "--data", sample, *extra
    )
    back = hf_splits(tmp_path / "hf")
    for s in ("train", "test"):
        rows = list(
            format_rows(
                hhrlhf.iter_pairs("helpful-base", split=s, data=sample), fmt, source=not no_source
            )
        )
        assert back[s] == rows


def test_export_parquet_bad_file_is_one_error_line(tmp_path):
    pytest.importorskip("pyarrow", reason="parquet needs hhrlhf[hf]")
    bad = tmp_path / "harmless-base" / "test.jsonl"
    bad.parent.mkdir()
    bad.write_text('{"chosen": "a", "rejected": "b"}\n{"chosen": 1, "rejected": "b"}\n')
    result = CliRunner().invoke(
        cli, ["export", "--format", "dpo", "--out", str(tmp_path / "o.parquet"), "--data", str(bad)]
    )
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "line 2" in result.output and "'chosen' must be a string" in result.output
    assert not (tmp_path / "o.parquet").exists()


@pytest.fixture
def non_alternating(tmp_path) -> Path:
    """Two Human turns in a row (row 0), two Assistant turns in a row (row 1), a plain row."""
    rows = [
        (t("Hi", "Hello") + "\n\nHuman: Are you there?\n\nHuman: Hello?\n\nAssistant:", " Yes.", " No."),
        (t("Hi", "Hello") + "\n\nAssistant: Still here.\n\nHuman: Good\n\nAssistant:", " Ok", " Bye"),
        (t("Tea?") + "\n\nAssistant:", " Green tea.", " Coffee."),
    ]  # fmt: skip
    path = tmp_path / "na" / "helpful-base" / "test.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(
        "".join(json.dumps({"chosen": p + c, "rejected": p + r}) + "\n" for p, c, r in rows)
    )
    return tmp_path / "na"


def _conversations(fmt: str, row: dict) -> list[list[dict]]:
    if fmt == "trl-conversational":
        return [row["prompt"] + row["chosen"], row["prompt"] + row["rejected"]]
    if fmt == "openai":
        msgs = row["input"]["messages"]
        return [msgs + row["preferred_output"], msgs + row["non_preferred_output"]]
    if fmt == "sft":
        return [row["messages"]]
    return [row["chosen"], row["rejected"]]


def _alternates(messages) -> bool:
    roles = [m["role"] for m in messages]
    return all(r == ("user" if i % 2 == 0 else "assistant") for i, r in enumerate(roles))


@pytest.mark.parametrize("fmt", ["trl-conversational", "messages", "sft", "openai"])
def test_merge_consecutive_makes_roles_alternate(non_alternating, tmp_path, fmt):
    plain = run("export", "--format", fmt, "--out", "-", "--data", non_alternating)
    rows = [json.loads(x) for x in plain.stdout.splitlines()]
    assert not all(_alternates(c) for r in rows for c in _conversations(fmt, r))
    r = run(
        "export", "--format", fmt, "--out", "-", "--data", non_alternating, "--merge-consecutive"
    )
    rows = [json.loads(x) for x in r.stdout.splitlines()]
    assert all(_alternates(c) for row in rows for c in _conversations(fmt, row))
    first = _conversations(fmt, rows[0])[0]
    assert first[2] == {"role": "user", "content": "Are you there?\n\nHello?"}
    second = _conversations(fmt, rows[1])[0]
    assert second[1] == {"role": "assistant", "content": "Hello\n\nStill here."}
    assert _conversations(fmt, rows[2])[0][0] == {"role": "user", "content": "Tea?"}
    assert (
        "--merge-consecutive: joined same-role turns in 2 row(s): "
        "helpful-base/test/0, helpful-base/test/1" in r.stderr
    )


def test_merge_consecutive_is_refused_for_text_formats(non_alternating):
    r = run("export", "--format", "dpo", "--out", "-", "--data", non_alternating,
            "--merge-consecutive", code=2)  # fmt: skip
    assert "--merge-consecutive" in r.stderr and "trl-conversational" in r.stderr


def test_merge_consecutive_library_function():
    from hhrlhf.convert.base import merge_consecutive, merge_row

    msgs = [
        {"role": "user", "content": "a"},
        {"role": "user", "content": ""},
        {"role": "user", "content": "b"},
        {"role": "assistant", "content": "c"},
    ]
    assert merge_consecutive(msgs) == [
        {"role": "user", "content": "a\n\nb"},
        {"role": "assistant", "content": "c"},
    ]
    assert msgs[0] == {"role": "user", "content": "a"}  # not changed in place
    row, changed = merge_row({"input": {"messages": msgs}, "index": 3})
    assert changed and len(row["input"]["messages"]) == 2 and row["index"] == 3


def test_check_names_the_non_alternating_rows(non_alternating):
    r = run("check", "--data", non_alternating, "--no-near-dups")
    line = [x for x in r.stdout.splitlines() if x.startswith("non_alternating rows")]
    assert line and line[0].endswith("helpful-base/test/0, helpful-base/test/1")
    assert "--merge-consecutive" in line[0]
    got = json.loads(run("check", "--data", non_alternating, "--no-near-dups", "--json").stdout)
    assert got["non_alternating_rows"] == ["helpful-base/test/0", "helpful-base/test/1"]


def _damaged(tmp_path, lines) -> Path:
    path = tmp_path / "d" / "harmless-base" / "test.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(line + "\n" for line in lines))
    return tmp_path / "d"


GOOD = json.dumps({"chosen": t("Hi", "Hello"), "rejected": t("Hi", "Go away")})


@pytest.mark.parametrize("out", ["x.jsonl", "x.parquet", "-"])
def test_export_lenient_skips_bad_rows_and_says_read_n_of_m(tmp_path, out):
    data = _damaged(tmp_path, [GOOD, "{not json", '{"chosen": 1}', GOOD])
    target = out if out == "-" else tmp_path / out
    r = run("export", "--format", "dpo", "--out", target, "--data", data, code=1)
    assert "test.jsonl, line 2" in r.stderr
    r = run("export", "--format", "dpo", "--out", target, "--data", data, "--lenient")
    assert "test.jsonl, line 2: invalid JSON" in r.stderr and "line 3" in r.stderr
    assert r.stderr.splitlines()[-1] == "read 2 of 4 rows (2 skipped)"
    if out == "-":
        assert [json.loads(x)["index"] for x in r.stdout.splitlines()] == [0, 3]


def test_export_lenient_to_a_dataset_dict(tmp_path):
    pytest.importorskip("datasets")
    data = _damaged(tmp_path, [GOOD, "{not json", GOOD])
    for fmt in ("dpo", "trl-conversational"):
        r = run("export", "--format", fmt, "--hf", tmp_path / fmt, "--data", data, "--lenient")
        assert "(test: 2)" in r.stderr
        assert r.stderr.splitlines()[-1] == "read 2 of 3 rows (1 skipped)"


def test_export_lenient_that_skips_every_row_fails(tmp_path):
    data = _damaged(tmp_path, ['{"chosen": 1}', '{"x": 2}'])
    run("export", "--format", "dpo", "--out", tmp_path / "o.jsonl", "--data", data, code=1)
    r = run("export", "--format", "dpo", "--out", "-", "--data", data, "--lenient", code=1)
    assert "read 0 of 2 rows (2 skipped)" in r.stderr
    assert r.stderr.splitlines()[-1].endswith("every row was skipped (2 of 2)")


def test_an_export_that_skipped_every_row_leaves_no_output(tmp_path):
    """An empty file or DatasetDict would be read as data by the next step (and a rerun would
    need --force): a lenient export that kept no row removes what it wrote, and says so."""
    data = _damaged(tmp_path, ['{"chosen": 1}', '{"x": 2}'])
    out = tmp_path / "o.jsonl"
    args = ("export", "--format", "dpo", "--data", data, "--lenient")
    r = run(*args, "--out", out, code=1)
    assert r.stderr.splitlines()[-1].endswith(
        f"every row was skipped (2 of 2); removed what this run wrote: {out}"
    )
    assert not out.exists()
    out.write_text("an earlier export\n")  # with --force the old file is replaced, then removed
    run(*args, "--out", out, "--force", code=1)
    assert not out.exists()
    if importlib.util.find_spec("datasets") is not None:
        hf = tmp_path / "hf"
        r = run(*args, "--hf", hf, code=1)
        assert r.stderr.splitlines()[-1].endswith(f"removed what this run wrote: {hf}")
        assert not hf.exists()
        mine = tmp_path / "mine"  # a folder that was there before is never removed
        mine.mkdir()
        r = run(*args, "--hf", mine, code=1)
        assert mine.is_dir() and "removed" not in r.stderr.splitlines()[-1]


def test_check_counts_invisible_characters_and_its_report_escapes_them(tmp_path):
    hidden = {"chosen": t("Hi \u202ethere", "Hello\u200b!"), "rejected": t("Hi \u202ethere", "Go.")}
    plain = {"chosen": t("A", "B"), "rejected": t("A", "C")}
    data = _damaged(tmp_path, [json.dumps(hidden), json.dumps(plain)])
    report = tmp_path / "flagged.jsonl"
    r = run("check", "--no-near-dups", "--report", report, "--data", data)
    assert re.search(r"^invisible_characters +1 +warning", r.stdout, re.M)
    raw = report.read_text(encoding="utf-8")
    assert "\u202e" not in raw and "\u200b" not in raw and "\\u202e" in raw
    (row,) = [json.loads(x) for x in raw.splitlines()]
    assert row["details"]["invisible_characters"] == "3 character(s): U+200B, U+202E x2"
    assert "\u202ethere" in row["excerpt"]  # the same string, escaped only in the file
