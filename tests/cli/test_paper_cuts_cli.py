"""Small things a user meets at once: help that lists and escapes, -q wherever it is typed,
usage errors that exit 2, tables that fit 100 columns unless --wide."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from hhrlhf.checks import CLASSES
from hhrlhf.cli import cli
from hhrlhf.convert import FORMATS


def run(*args, code=0):
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result


def _commands(group: click.Group, path=()):
    for name, command in group.commands.items():
        yield (*path, name), command
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))


def test_export_help_lists_the_formats():
    help_text = " ".join(run("export", "--help").stdout.split()).replace("- ", "-")  # unwrapped
    assert f"Output format: {', '.join(FORMATS)}" in help_text


def test_merge_consecutive_help_shows_the_joiner_escaped():
    help_text = run("export", "--help").stdout
    start = help_text.index("--merge-consecutive")
    option = help_text[start : help_text.index("\n  --", start)]
    assert 'joined by "\\n\\n"' in option
    assert '"\n' not in option  # no raw line break inside the quotes


def test_every_command_takes_quiet_after_its_name():
    missing = [
        " ".join(path)
        for path, command in _commands(cli)
        if not any("-q" in p.opts for p in command.params)
    ]
    assert not missing, missing


@pytest.mark.parametrize(
    "args", [["-q", "clean"], ["clean", "-q"], ["--quiet", "clean"], ["clean", "--quiet"]]
)
def test_quiet_before_or_after_the_command_hides_the_progress_lines(tmp_path, args):
    loud = run("clean", "--data", "sample", "--out", tmp_path / "loud")
    assert "checking harmless-base/train" in loud.stderr  # what quiet hides
    assert "writing harmless-base/train.jsonl.gz" in loud.stderr
    quiet = run(*args, "--data", "sample", "--out", tmp_path / "quiet")
    assert quiet.stderr == ""
    assert quiet.stdout == loud.stdout.replace(str(tmp_path / "loud"), str(tmp_path / "quiet"))


@pytest.mark.parametrize(
    "args",
    [
        ["stats", "--split", "val"],
        ["show", "--split", "val"],
        ["check", "--split", "val", "--no-near-dups"],
        ["stats", "harmles-base"],
        ["export", "--format", "dpo", "--out", "x.csv"],
        ["export", "--format", "dpo", "--split", "test", "--out", "x.txt"],
    ],
)
def test_a_name_the_command_line_gives_that_is_not_there_exits_2(tmp_path, args, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run(*args, "--data", "sample", code=2)
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: ")


def test_a_problem_in_the_data_still_exits_1(tmp_path):
    (tmp_path / "harmless-base").mkdir()
    (tmp_path / "harmless-base" / "test.jsonl").write_text("not json\n")
    assert run("stats", "--data", tmp_path, code=1).stderr.startswith("error: ")


def _widths(result) -> list[int]:
    return [len(line) for line in (result.stdout + result.stderr).splitlines()]


def test_stats_fits_100_columns_and_wide_is_one_table():
    narrow = run("stats", "--data", "sample")
    assert max(_widths(narrow)) <= 100, narrow.output
    assert narrow.stdout.count("subset/split") == 2  # lengths, then classes
    wide = run("stats", "--data", "sample", "--wide")
    assert max(_widths(wide)) > 100
    assert wide.stdout.count("subset/split") == 1
    assert "turns in resp" in wide.stdout.splitlines()[0]


def test_check_fits_100_columns_and_wide_shows_whole_meanings():
    args = ["check", "--data", "sample", "--no-near-dups", "--fail-on", "none"]
    narrow = run(*args)
    assert max(_widths(narrow)) <= 100, narrow.output
    wide = run(*args, "--wide")
    shown = [name for name in CLASSES if f"\n{name} " in wide.stdout]
    assert len(shown) >= 5
    cut = [name for name in shown if CLASSES[name].description not in narrow.stdout]
    assert cut  # the narrow table cuts some meanings ...
    for name in shown:  # ... the wide one shows every one whole
        assert CLASSES[name].description in wide.stdout
