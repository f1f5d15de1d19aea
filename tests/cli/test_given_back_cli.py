"""What the user gave as data is said when it is not what upstream lays out: an ``hh export``
output given back (named, with the ``hh import`` that reads it) and a subset folder given for
its parent."""

from __future__ import annotations

import shutil

import pytest
from click.testing import CliRunner

import hhrlhf
from hhrlhf.cli import cli
from hhrlhf.convert import FORMATS
from hhrlhf.dataset import SAMPLE_DIR
from hhrlhf.errors import DataFormatError, NoDataError

#: Every preference export format but ``raw``, which is upstream's own shape.
GIVEN_BACK = sorted(n for n in FORMATS if n not in ("raw", "redteam"))


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """``{format: a data folder holding that export as harmless-base/test.jsonl}``."""
    root = tmp_path_factory.mktemp("given-back")
    folders = {}
    for fmt in GIVEN_BACK:
        out = root / fmt / "harmless-base" / "test.jsonl"
        out.parent.mkdir(parents=True)
        args = ["-q", "export", "harmless-base", "--split", "test", "--format", fmt]
        assert run(*args, "--out", out, "--data", "sample").exit_code == 0
        folders[fmt] = root / fmt
    return folders


def test_every_format_but_raw_is_covered():
    assert {"dpo", "trl-standard", "trl-conversational", "messages", "sft", "openai"} <= set(
        GIVEN_BACK
    )


@pytest.mark.parametrize("fmt", GIVEN_BACK)
@pytest.mark.parametrize("command", [["stats"], ["check", "--no-near-dups"], ["show"]])
def test_an_export_given_as_data_is_named_with_its_import(exports, fmt, command):
    data = exports[fmt]
    result = run(*command, "--data", data)
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith(f"error: {data / 'harmless-base' / 'test.jsonl'}, line 1: ")
    assert f"an hh export (format {fmt})" in lines[0]
    assert f"--format {fmt}" in lines[0] and "hh import" in lines[0]
    assert "Traceback" not in result.output


@pytest.mark.parametrize("fmt", ["dpo", "trl-standard"])
def test_the_library_refuses_an_export_too(exports, fmt):
    path = exports[fmt] / "harmless-base" / "test.jsonl"
    with pytest.raises(DataFormatError, match=f"hh import .* --format {fmt}"):
        hhrlhf.load_dataset("harmless-base", data=exports[fmt])
    with pytest.raises(DataFormatError, match=f"format {fmt}"):
        hhrlhf.load_dataset("harmless-base", split="test", data=path)  # one file
    with pytest.raises(DataFormatError, match=f"format {fmt}"):
        next(iter(hhrlhf.read_pairs(path)))


def test_an_import_of_the_export_reads_as_data_again(exports, tmp_path):
    back = tmp_path / "back" / "harmless-base" / "test.jsonl.gz"
    back.parent.mkdir(parents=True)
    source = exports["dpo"] / "harmless-base" / "test.jsonl"
    assert run("-q", "import", source, "--format", "dpo", "--out", back).exit_code == 0
    assert run("stats", "--data", tmp_path / "back").exit_code == 0


def test_raw_and_upstream_rows_with_a_prompt_key_still_read(tmp_path):
    """A ``prompt`` key beside whole transcripts (a user's extra column) is not an export."""
    folder = tmp_path / "mine" / "harmless-base"
    folder.mkdir(parents=True)
    (folder / "test.jsonl").write_text(
        '{"prompt": "Hi", "chosen": "\\n\\nHuman: Hi\\n\\nAssistant: Hello", '
        '"rejected": "\\n\\nHuman: Hi\\n\\nAssistant: No"}\n'
    )
    assert len(hhrlhf.load_dataset("harmless-base", split="test", data=tmp_path / "mine")) == 1


def test_a_subset_folder_says_to_pass_its_parent(tmp_path):
    subset = tmp_path / "harmless-base"
    shutil.copytree(SAMPLE_DIR / "harmless-base", subset)
    for command in (["stats"], ["check"], ["show"], ["info"]):
        result = run(*command, "--data", subset)
        assert result.exit_code == 1, result.output
        assert result.stderr.strip().splitlines() == [
            f"error: {subset}: this folder is a subset (it holds test.jsonl.gz, train.jsonl.gz): "
            f"pass its parent, {tmp_path}, or one of its files"
        ]
    with pytest.raises(NoDataError, match="this folder is a subset"):
        hhrlhf.load_dataset("harmless-base", data=subset)
    assert run("stats", "--data", tmp_path).exit_code == 0  # the parent reads


@pytest.mark.parametrize("command", ["stats", "info"])
def test_a_folder_without_data_still_says_so(tmp_path, command):
    result = run(command, "--data", tmp_path)
    assert result.exit_code == 1
    assert "no data files found" in result.stderr
