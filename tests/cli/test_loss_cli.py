"""Lost data is loud in every command: a cut or corrupt .gz is one error line and exit 1.

A damaged compressed stream is never "1 bad row": strict or ``--lenient``, each command
that reads it names the file, how many lines it read and that the rest is unreadable.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from hhrlhf.cli import cli
from hhrlhf.dataset import SAMPLE_DIR

BAD = Path(__file__).parents[1] / "data" / "bad"
BROKEN = ["cut_stream.jsonl.gz", "crc_mismatch.jsonl.gz", "flipped_byte.jsonl.gz"]


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(params=BROKEN)
def broken(request, tmp_path):
    """A data folder whose harmless-base test split is a damaged gzip stream."""
    root = tmp_path / "data"
    (root / "harmless-base").mkdir(parents=True)
    shutil.copy(SAMPLE_DIR / "harmless-base" / "train.jsonl.gz", root / "harmless-base")
    shutil.copy(BAD / request.param, root / "harmless-base" / "test.jsonl.gz")
    return root


def _assert_lost(result, root):
    assert result.exit_code == 1, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr
    first = errors[0]
    assert first.startswith(f"error: {root / 'harmless-base' / 'test.jsonl.gz'}: ")
    assert "truncated gzip stream" in first or "CRC check failed" in first
    assert "line(s)" in first and "Traceback" not in result.output
    assert "missing key" not in result.output and "invalid JSON" not in result.output


@pytest.mark.parametrize(
    "args",
    [
        ["stats", "harmless-base"],
        ["stats", "harmless-base", "--lenient"],
        ["check", "harmless-base"],
        ["show", "harmless-base", "--split", "test"],
        ["export", "harmless-base", "--format", "dpo", "--out", "{tmp}/out.jsonl"],
        ["clean", "harmless-base", "--out", "{tmp}/cleaned"],
        ["pm", "train", "harmless-base", "--split", "test", "--out", "{tmp}/model"],
        ["pm", "train", "harmless-base", "--split", "test", "--out", "{tmp}/m2", "--lenient"],
    ],
    ids=lambda a: " ".join(x for x in a if not x.startswith("{")),
)
def test_every_command_fails_on_a_broken_stream(broken, tmp_path, args):
    args = [a.format(tmp=tmp_path) for a in args]
    _assert_lost(run(*args, "--data", broken), broken)
    for out in ("out.jsonl", "cleaned", "model", "m2"):
        assert not (tmp_path / out).exists(), f"{out} written from a damaged file"


def test_clean_of_a_cut_file_no_longer_reports_one_dropped_row(broken, tmp_path):
    result = run("clean", "harmless-base", "--data", broken, "--out", tmp_path / "c")
    assert result.exit_code == 1
    assert "dropped" not in result.stdout and "kept" not in result.stdout


@pytest.mark.parametrize(
    "command", [["redteam", "report", "--out", "{tmp}/r"], ["redteam", "query"]]
)
def test_redteam_commands_fail_on_a_cut_file(tmp_path, command):
    row = {
        "transcript": "\n\nHuman: hi\n\nAssistant: hello",
        "min_harmlessness_score_transcript": 0.5,
        "num_params": "52B",
        "model_type": "context distillation",
        "rating": 1,
        "task_description": "say hello",
        "task_descripton_harmlessness_score": 0.1,
        "red_team_member_id": 1,
        "is_upworker": False,
        "tags": None,
    }
    data = gzip.compress(json.dumps([row] * 400).encode(), mtime=0)
    path = tmp_path / "red_team_attempts.jsonl.gz"
    path.write_bytes(data[: len(data) - 40])
    result = run(*[a.format(tmp=tmp_path) for a in command], "--data", path, "--lenient")
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith(f"error: {path}: truncated gzip stream")
    assert not (tmp_path / "r").exists()


def test_clean_keep_readable_reports_lost_data_loudly(tmp_path):
    root = tmp_path / "data"
    (root / "harmless-base").mkdir(parents=True)
    shutil.copy(SAMPLE_DIR / "harmless-base" / "train.jsonl.gz", root / "harmless-base")
    shutil.copy(BAD / "cut_stream.jsonl.gz", root / "harmless-base" / "test.jsonl.gz")
    out = tmp_path / "cleaned"
    result = run("clean", "harmless-base", "--data", root, "--out", out, "--keep-readable")
    assert result.exit_code == 0, result.output
    assert "LOST DATA: harmless-base/test.jsonl.gz: truncated gzip stream" in result.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["lost"]["harmless-base/test.jsonl.gz"]["rows_read"] == 26
    test = manifest["files"]["harmless-base/test.jsonl.gz"]
    assert test["rows"] == test["kept"] + test["dropped"] == 26
