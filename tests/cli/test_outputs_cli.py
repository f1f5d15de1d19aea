"""Every command that writes checks its outputs before the work: one error line, exit 1.

Found with ``grep -n "out" src/hhrlhf/cli/*.py``: export (--out, --hf), import (--out),
check (--report), clean (--out), stats (--plots), demo (--out), redteam report (--out),
pm train (--out), pm eval (--plot), pm score (--out). Tests may run as root, where a
chmod does not stop writes, so the unwritable targets are a path under a regular file and
a path in /proc, plus a read-only folder when not root.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from hhrlhf.cli import cli
from hhrlhf.layout import SAMPLE_DIR
from hhrlhf.outputs import replace_dir, written_by

ROOT = os.geteuid() == 0 if hasattr(os, "geteuid") else False

# (args with {out}, kind of output); every command reads the bundled sample
WRITERS = {
    "export --out": (["export", "harmless-base", "--format", "dpo", "--out", "{out}"], "file"),
    "export --hf": (["export", "harmless-base", "--format", "dpo", "--hf", "{out}"], "dir"),
    "import --out": (["import", "{dpo}", "--format", "dpo", "--out", "{out}"], "file"),
    "check --report": (["check", "harmless-base", "--report", "{out}"], "file"),
    "clean --out": (["clean", "harmless-base", "--out", "{out}"], "dir"),
    "stats --plots": (["stats", "harmless-base", "--plots", "{out}"], "dir"),
    "demo --out": (["demo", "--out", "{out}"], "dir"),
    "redteam report --out": (["redteam", "report", "--out", "{out}"], "dir"),
    "pm train --out": (["pm", "train", "harmless-base", "--out", "{out}"], "dir"),
    "pm eval --plot": (["pm", "eval", "--model", "{model}", "--plot", "{out}"], "file"),
    "pm score --out": (["pm", "score", "--model", "{model}", "--out", "{out}"], "file"),
}


def run(args, tmp_path, out):
    dpo = tmp_path / "in.dpo.jsonl"
    dpo.write_text(
        '{"prompt": "\\n\\nHuman: hi\\n\\nAssistant:", "chosen": " a", "rejected": " b"}\n'
    )
    filled = [a.format(out=out, dpo=dpo, model=tmp_path / "no-model") for a in args]
    if filled[0] != "import":
        filled += ["--data", "sample"]
    started = time.monotonic()
    result = CliRunner().invoke(cli, filled, catch_exceptions=False)
    return result, time.monotonic() - started


def _assert_one_error(result, needle):
    assert result.exit_code == 1, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and needle in errors[0], result.stderr
    assert "Traceback" not in result.output
    assert "training on" not in result.stderr and "checking" not in result.stderr


def _targets(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    targets = {"under a file": blocker / "out", "in /proc": Path("/proc/hh-no-such/out")}
    if not ROOT:
        ro = tmp_path / "read-only"
        ro.mkdir()
        ro.chmod(0o500)
        targets["read-only folder"] = ro / "out"
    return targets


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_unwritable_output_is_one_error_before_the_work(name, tmp_path):
    args, _ = WRITERS[name]
    for why, target in _targets(tmp_path).items():
        result, seconds = run(args, tmp_path, target)
        _assert_one_error(result, str(target))
        assert seconds < 10, f"{name} ({why}) took {seconds:.1f}s to refuse"


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_existing_output_needs_force(name, tmp_path):
    args, kind = WRITERS[name]
    out = tmp_path / "existing"
    if kind == "file":
        out.write_text("keep me\n")
    else:
        with replace_dir(out, command="hh earlier") as tmp:  # an earlier output of hhrlhf
            (tmp / "keep.txt").write_text("keep me\n")
    result, _ = run(args, tmp_path, out)
    _assert_one_error(result, "exists")
    _assert_one_error(result, "pass --force to replace it")
    kept = out if kind == "file" else out / "keep.txt"
    assert kept.read_text() == "keep me\n"


DIR_WRITERS = sorted(n for n, (_, kind) in WRITERS.items() if kind == "dir")


@pytest.mark.parametrize("name", DIR_WRITERS)
def test_force_never_replaces_a_folder_hhrlhf_did_not_write(name, tmp_path):
    """A user's thesis.tex in the --out folder survives, and the command is refused."""
    out = tmp_path / "existing"
    out.mkdir()
    (out / "thesis.tex").write_text("three years of work\n")
    for extra in ([], ["--force"]):
        result, _ = run(WRITERS[name][0] + extra, tmp_path, out)
        _assert_one_error(result, "holds 1 item hhrlhf did not write (thesis.tex)")
        assert (out / "thesis.tex").read_text() == "three years of work\n"
        assert [p.name for p in out.iterdir()] == ["thesis.tex"]
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


@pytest.mark.parametrize("name", DIR_WRITERS)
def test_the_current_folder_and_its_parents_are_refused(name, tmp_path, monkeypatch):
    """`hh clean --out . --force` was a traceback leaving ..new-* and ..old-* behind."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    for given in (".", "..", str(work), f"{work}/"):
        result, _ = run(WRITERS[name][0] + ["--force"], tmp_path, given)
        _assert_one_error(result, "current folder")
    assert list(work.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.dpo.jsonl", "work"]


@pytest.mark.parametrize(
    ("name", "made"),
    [
        ("pm train --out", "model.json"),
        ("clean --out", "manifest.json"),
        ("redteam report --out", "report.html"),
        ("stats --plots", "stats.json"),
        ("export --hf", "dataset_dict.json"),
    ],
)
def test_force_replaces_a_folder_output_whole(tmp_path, name, made):
    """--force over an old output never leaves its stray files, nor temporary folders; the
    new folder is marked as this command's."""
    if name == "export --hf":
        pytest.importorskip("datasets", reason="needs hhrlhf[hf]")
    out = tmp_path / "existing"
    with replace_dir(out, command="hh older") as tmp:
        (tmp / "stray.bin").write_text("from an older run")
    result, _ = run(WRITERS[name][0] + ["--force"], tmp_path, out)
    assert result.exit_code == 0, result.output
    assert (out / made).is_file() and not (out / "stray.bin").exists()
    assert written_by(out) == "hh " + name.rsplit(" ", 1)[0]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_an_output_folder_holding_the_data_is_refused(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(SAMPLE_DIR, data)
    for out in (data, tmp_path, data / ".." / "data"):
        result = CliRunner().invoke(
            cli, ["clean", "--out", str(out), "--force", "--data", str(data)]
        )
        _assert_one_error(result, "the data this command reads")
    f = data / "harmless-base" / "test.jsonl.gz"
    before = f.read_bytes()
    result = CliRunner().invoke(
        cli, ["export", "--format", "dpo", "--out", str(f), "--force", "--data", str(f)]
    )
    _assert_one_error(result, "is the data this command reads")
    assert f.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]


def test_a_run_that_kept_no_row_removes_only_what_it_wrote(tmp_path):
    """fail_if_all_skipped takes back the outputs this run wrote or created, and leaves an
    output it did not touch (a --force'd file the command never got to rewrite)."""
    import click

    from hhrlhf.cli.options import check_outputs, fail_if_all_skipped, note_rows_read
    from hhrlhf.errors import NoDataError
    from hhrlhf.reader import SkippedRow

    kept = tmp_path / "kept.txt"
    kept.write_text("an earlier run's output\n")
    written, made = tmp_path / "written.txt", tmp_path / "made"

    @click.command()
    def writer():
        check_outputs(True, kept=(kept, "file"), written=(written, "file"), made=(made, "dir"))
        written.write_text("")
        made.mkdir()
        note_rows_read(0)
        fail_if_all_skipped([SkippedRow(str(tmp_path / "in.jsonl"), 1, "not JSON")])

    r = CliRunner().invoke(writer, [])
    assert isinstance(r.exception, NoDataError)
    assert "every row was skipped (1 of 1); removed what this run wrote" in str(r.exception)
    assert str(written) in str(r.exception) and str(made) in str(r.exception)
    assert str(kept) not in str(r.exception)
    assert kept.read_text() == "an earlier run's output\n"
    assert not written.exists() and not made.exists()


def test_an_export_of_several_splits_writes_all_or_none(tmp_path):
    """A bad line in the second split: the first split's file is not left behind alone."""
    data = tmp_path / "data" / "harmless-base"
    data.mkdir(parents=True)
    row = '{"chosen": "\\n\\nHuman: hi\\n\\nAssistant: a", "rejected": "\\n\\nHuman: hi\\n\\nAssistant: b"}'
    (data / "train.jsonl").write_text(row + "\n")
    (data / "test.jsonl").write_text(row + "\nnot json\n")
    out = tmp_path / "pairs.jsonl"
    args = ["export", "--format", "dpo", "--out", str(out), "--data", str(tmp_path / "data")]
    result = CliRunner().invoke(cli, args)
    _assert_one_error(result, "test.jsonl")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]
    (data / "test.jsonl").write_text(row + "\n")
    assert CliRunner().invoke(cli, args).exit_code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "data",
        "pairs.test.jsonl",
        "pairs.train.jsonl",
    ]


def test_import_never_writes_over_the_file_it_reads(tmp_path):
    src = tmp_path / "in.dpo.jsonl"
    src.write_text(
        '{"prompt": "\\n\\nHuman: hi\\n\\nAssistant:", "chosen": " a", "rejected": " b"}\n'
    )
    before = src.read_bytes()
    args = ["import", str(src), "--format", "dpo", "--out", str(src), "--force"]
    _assert_one_error(CliRunner().invoke(cli, args), "is the file this command reads")
    assert src.read_bytes() == before


def test_a_linked_out_stays_a_link_and_leaves_nothing_beside_it(tmp_path):
    real = tmp_path / "outputs" / "v1"
    args = ["clean", "harmless-base", "--data", "sample", "--out"]
    assert CliRunner().invoke(cli, [*args, str(real)]).exit_code == 0
    link = tmp_path / "current"
    link.symlink_to(real, target_is_directory=True)
    (real / "dropped.jsonl").unlink()  # the next run writes it again
    result = CliRunner().invoke(cli, [*args, str(link), "--force"])
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert (real / "dropped.jsonl").is_file() and written_by(link) == "hh clean"
    assert sorted(p.name for p in real.parent.iterdir()) == ["v1"]  # no .v1.old-XXXX
    assert sorted(p.name for p in tmp_path.iterdir()) == ["current", "outputs"]
