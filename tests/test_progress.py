"""hhrlhf.progress: silent in the library, periodic and summary lines on stderr off a terminal."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

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


class _Terminal(io.StringIO):
    """A stderr that says it is a terminal, so progress draws a tqdm bar into it."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def terminal(monkeypatch):
    """Progress on, and a stderr that is a terminal; call it in the test body (pytest sets
    its own sys.stderr again between a fixture and the test)."""
    stream = _Terminal()
    progress_mod.enable(True)
    yield lambda: monkeypatch.setattr(sys, "stderr", stream) or stream
    progress_mod.enable(False)


def _last_frame(stream: io.StringIO) -> str:
    return [f for f in stream.getvalue().split("\r") if f.strip()][-1]


def test_a_bar_counts_in_whole_units(terminal):
    terminal = terminal()
    with progress(total=40, desc="fitting", unit="iterations") as bar:
        bar.update(3)
        bar._bar.refresh()
        frame = _last_frame(terminal)
    assert "| 3/40 [" in frame and "3.00" not in frame  # tqdm's unit_scale drew "3.00/40.0"


def test_finish_ends_a_bar_at_100_percent(terminal):
    terminal = terminal()
    with progress(total=40, desc="fitting", unit="iterations") as bar:
        bar.update(7)
        bar.finish()
        frame = _last_frame(terminal)
        assert bar.total == 7 and bar._count() == "7/7 iterations (100%)"
    assert "100%" in frame and "| 7/7 [" in frame


def test_a_converged_fit_ends_its_bar_at_100_percent(terminal):
    terminal = terminal()
    import hhrlhf
    from hhrlhf.reward.model import train_pm

    pairs = hhrlhf.load_dataset("harmless-base", split="train", data="sample")
    frames = []
    real = progress_mod.Progress.close

    def close(self):
        if self._bar is not None:
            self._bar.refresh()
            frames.append((self.n, self.total, _last_frame(terminal)))
        real(self)

    progress_mod.Progress.close = close
    try:
        model = train_pm(pairs, max_iter=5000)
    finally:
        progress_mod.Progress.close = real
    nit = model.meta["metrics"]["iterations"]
    assert model.meta["metrics"]["converged"] and nit < 5000
    n, total, frame = frames[-1]
    assert (n, total) == (nit, nit) and "100%" in frame and f"| {nit}/{nit} [" in frame


def test_quiet_silences_the_progress_bars_of_datasets(tmp_path):
    env = {k: v for k, v in os.environ.items() if "PROGRESS_BARS" not in k}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1] / "src")

    def export(*flags, out):
        return subprocess.run(
            [sys.executable, "-m", "hhrlhf", *flags, "export", "harmless-base", "--split", "test",
             "--format", "trl-conversational", "--hf", str(tmp_path / out), "--data", "sample"],
            capture_output=True, text=True, env=env, check=True,
        )  # fmt: skip

    assert "Saving the dataset" in export(out="loud").stderr
    quiet = export("--quiet", out="quiet").stderr
    assert "Saving the dataset" not in quiet and quiet.startswith("wrote DatasetDict")


def test_quiet_libraries_switches_an_imported_datasets_off_and_back_on(monkeypatch):
    datasets_utils = pytest.importorskip("datasets.utils")
    monkeypatch.delenv("HF_DATASETS_DISABLE_PROGRESS_BARS", raising=False)
    assert not datasets_utils.are_progress_bars_disabled()
    try:
        progress_mod.quiet_libraries(True)
        assert datasets_utils.are_progress_bars_disabled()
    finally:
        progress_mod.quiet_libraries(False)
    assert not datasets_utils.are_progress_bars_disabled()
