"""Ctrl-C: a real SIGINT to ``hh`` mid-write exits 130 with one line, and leaves no half
output, no temporary file or folder, and the old outputs as they were.

The command runs in a subprocess whose writer pauses (a wrapper around one of the library's
writing functions, set up by the script below) once it has written part of the output, so
the signal lands while the temporaries are there."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hhrlhf.outputs import MARKER, replace_dir

# runs `hh ARGS...`, pausing in the PAUSE_AT-th call of MODULE.FUNCTION after it returned
_RUNNER = """
import importlib, os, sys, time
module, function, pause_at, ready = sys.argv[1:5]
mod = importlib.import_module(module)
real = getattr(mod, function)
calls = []

def paused(*args, **kwargs):
    result = real(*args, **kwargs)
    calls.append(1)
    if len(calls) == int(pause_at):
        open(ready, "w").close()
        time.sleep(60)
    return result

setattr(mod, function, paused)
from hhrlhf.cli import main
main(sys.argv[5:])
"""


def interrupt(
    tmp_path: Path, where: tuple[str, str, int], *args: str
) -> subprocess.CompletedProcess:
    ready = tmp_path / "ready"
    module, function, pause_at = where
    proc = subprocess.Popen(
        [sys.executable, "-c", _RUNNER, module, function, str(pause_at), str(ready), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    deadline = time.monotonic() + 60
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"the command never paused (exit {proc.returncode}): {err}")
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    ready.unlink()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def assert_interrupted(r: subprocess.CompletedProcess) -> None:
    assert r.returncode == 130, r.stderr
    assert r.stderr.splitlines()[-1].startswith("error: interrupted (Ctrl-C)"), r.stderr
    assert "Traceback" not in r.stderr and "Aborted" not in r.stderr


def listing(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_ctrl_c_between_two_splits_writes_neither(tmp_path):
    """`hh export --out pairs.jsonl` writes pairs.train.jsonl and pairs.test.jsonl: all or none."""
    args = ("export", "--format", "dpo", "--out", "pairs.jsonl", "--data", "sample")
    # the pause comes after the second split's rows are written to its temporary file
    r = interrupt(tmp_path, ("hhrlhf.convert.files", "_write_jsonl", 2), *args)
    assert_interrupted(r)
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    # over older files (--force): both stay as they were
    (tmp_path / "pairs.train.jsonl").write_text("old train\n")
    (tmp_path / "pairs.test.jsonl").write_text("old test\n")
    before = listing(tmp_path)
    r = interrupt(tmp_path, ("hhrlhf.convert.files", "_write_jsonl", 2), *args, "--force")
    assert_interrupted(r)
    assert listing(tmp_path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pairs.test.jsonl", "pairs.train.jsonl"]


def test_ctrl_c_in_a_folder_output_leaves_the_old_one_and_no_temporary(tmp_path):
    out = tmp_path / "cleaned"
    with replace_dir(out, command="hh clean") as tmp:
        (tmp / "manifest.json").write_text("{}\n")
    before = listing(out)
    args = ("clean", "--out", "cleaned", "--data", "sample", "--force")
    r = interrupt(tmp_path, ("hhrlhf.clean", "_clean_jsonl", 3), *args)
    assert_interrupted(r)
    assert listing(out) == before and (out / MARKER).is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cleaned"]
    r = interrupt(
        tmp_path, ("hhrlhf.clean", "_clean_jsonl", 1), "clean", "--out", "new", "--data", "sample"
    )
    assert_interrupted(r)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cleaned"]


def test_ctrl_c_in_the_demo_leaves_no_half_demo(tmp_path):
    r = interrupt(tmp_path, ("hhrlhf.demo", "write_stats", 1), "demo", "--out", "demo")
    assert_interrupted(r)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_ctrl_c_in_hh_import_removes_its_temporary(tmp_path):
    src = tmp_path / "in.dpo.jsonl"
    src.write_text(
        '{"prompt": "\\n\\nHuman: hi\\n\\nAssistant:", "chosen": " a", "rejected": " b"}\n'
    )
    r = interrupt(
        tmp_path,
        ("hhrlhf.convert.files", "_write_jsonl", 1),
        "import", "in.dpo.jsonl", "--format", "dpo", "--out", "out.jsonl",
    )  # fmt: skip
    assert_interrupted(r)
    assert len(r.stderr.splitlines()) == 1, r.stderr  # one line, nothing else
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.dpo.jsonl"]
