"""hhrlhf.progress: silent in the library, periodic and summary lines on stderr off a terminal."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from hhrlhf import progress as progress_mod
from hhrlhf.cli import cli
from hhrlhf.progress import progress


@pytest.fixture
def lines_every_update(monkeypatch):
    monkeypatch.setattr(progress_mod, "INTERVAL", 0.0)
    monkeypatch.setattr(progress_mod, "SUMMARY_AFTER", 0.0)
    progress_mod.enable(True)
    yield
    progress_mod.enable(False)


def test_library_default_is_silent(capsys):
    progress_mod.enable(False)
    assert list(progress(range(3), desc="work")) == [0, 1, 2]
    assert capsys.readouterr() == ("", "")


def test_off_a_terminal_periodic_and_summary_lines_go_to_stderr(capsys, lines_every_update):
    assert list(progress(range(3), desc="work", unit="rows")) == [0, 1, 2]
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert lines[:3] == [
        "work: 1/3 rows (33%) ...",
        "work: 2/3 rows (67%) ...",
        "work: 3/3 rows (100%) ...",
    ]
    assert lines[3].startswith("work: 3 rows in ") and lines[3].endswith(" s")


def test_off_a_terminal_quick_work_prints_no_closing_line(capsys, monkeypatch):
    monkeypatch.setattr(progress_mod, "SUMMARY_AFTER", 60.0)
    progress_mod.enable(True)
    try:
        assert list(progress(range(3), desc="work", unit="rows")) == [0, 1, 2]
    finally:
        progress_mod.enable(False)
    assert capsys.readouterr() == ("", "")


def _run(*args):
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def test_commands_print_progress_on_stderr_and_keep_stdout_clean(tmp_path, lines_every_update):
    quiet = _run("--quiet", "check", "--data", "sample", "--json", "--fail-on", "none")
    loud = _run("check", "--data", "sample", "--json", "--fail-on", "none")
    assert json.loads(loud.stdout) == json.loads(quiet.stdout)
    assert "check harmless-base/train: 60 rows in" in loud.stderr
    assert "check harmless-base/train" not in quiet.stderr
    r = _run("export", "--format", "dpo", "--data", "sample", "--out", str(tmp_path / "x.jsonl"))
    assert "export " in r.stderr and " rows in " in r.stderr
    r = _run("pm", "train", "harmless-base", "--data", "sample", "--out", str(tmp_path / "m"))
    assert "fitting: " in r.stderr and " iterations in " in r.stderr
    r = _run("redteam", "report", "--data", "sample", "--out", str(tmp_path / "rt"),
             "--resamples", "10", "--max-k", "2")  # fmt: skip
    assert "redteam report: " in r.stderr and " steps in " in r.stderr
    assert r.stdout.splitlines() == [str(tmp_path / "rt" / "report.html"),
                                     str(tmp_path / "rt" / "report.json")]  # fmt: skip


def test_featurising_reports_progress_and_keeps_the_result(lines_every_update, capsys):
    import numpy as np

    from hhrlhf.reward.features import FeatureConfig, Featurizer

    cfg = FeatureConfig(word_bits=10, char_bits=10, edge_bits=8, pair_bits=10)
    prompts = [f"\n\nHuman: question {i % 50}?\n\nAssistant:" for i in range(4200)]
    responses = [f"answer {i} is {'yes' if i % 3 else 'no'}" for i in range(4200)]
    f = Featurizer(cfg)
    chunked = f.raw_features(prompts, responses, n_jobs=1)
    err = capsys.readouterr().err
    assert "featurising: " in err and "4,200 responses in" in err
    whole = f._raw(prompts, responses)
    for k, v in whole.items():
        a = v if isinstance(v, np.ndarray) else v.toarray()
        b = chunked[k] if isinstance(chunked[k], np.ndarray) else chunked[k].toarray()
        assert np.allclose(a, b), k
