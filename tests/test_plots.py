"""hh stats --plots: PNG charts per subset/split and the numbers as JSON."""

from __future__ import annotations

import json

import pytest

from hhrlhf.dataset import iter_pairs
from hhrlhf.plots import histogram, write_stats_plots
from hhrlhf.stats import pair_stats

pytest.importorskip("matplotlib", reason="plots need hhrlhf[plots]")

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    from hhrlhf.testing.synth import write_corpus

    root = tmp_path_factory.mktemp("sample")
    write_corpus(root, scale="sample")
    return root


def _result(sample):
    return {
        f"{s}/{sp}": pair_stats(iter_pairs(s, split=sp, data=sample))
        for s, sp in (("harmless-base", "test"), ("helpful-base", "train"))
    }


def test_histogram_bins_by_hand():
    assert histogram([0, 1, 2, 5, 9, 10], [0, 5, 10]) == [3, 3]
    assert histogram([], [0, 1]) == [0]


def test_writes_three_charts_per_key_and_stats_json(sample, tmp_path):
    result = _result(sample)
    written = write_stats_plots(result, tmp_path / "plots")
    names = sorted(p.name for p in written)
    assert names == sorted(
        [
            f"{k}-{c}.png"
            for k in ("harmless-base-test", "helpful-base-train")
            for c in ("turns", "lengths", "classes")
        ]
        + ["stats.json"]
    )
    for p in written:
        if p.suffix == ".png":
            data = p.read_bytes()
            assert data.startswith(PNG) and len(data) > 5000, p
    assert json.loads((tmp_path / "plots" / "stats.json").read_text()) == result


def test_histograms_from_kept_lengths_count_every_pair(sample, tmp_path):
    result = {
        "harmless-base/test": pair_stats(
            iter_pairs("harmless-base", split="test", data=sample), keep_lengths=True
        )
    }
    write_stats_plots(result, tmp_path)
    numbers = json.loads((tmp_path / "stats.json").read_text())
    h = numbers["harmless-base/test"]["response_length_histogram"]
    assert sum(h["chosen"]) == sum(h["rejected"]) == result["harmless-base/test"]["rows"] == 20
    assert len(h["edges"]) == len(h["chosen"]) + 1


def test_stats_command_plots(sample, tmp_path):
    from click.testing import CliRunner

    from hhrlhf.cli import cli

    r = CliRunner().invoke(
        cli,
        [
            "stats",
            "helpful-base",
            "--split",
            "test",
            "--plots",
            str(tmp_path / "p"),
            "--data",
            str(sample),
        ],
    )
    assert r.exit_code == 0, r.output
    assert (tmp_path / "p" / "helpful-base-test-turns.png").read_bytes().startswith(PNG)
