import json

import pytest
from click.testing import CliRunner

from hhrlhf.cli import cli

CLASSES = {"likely_mislabelled", "ambiguous", "clear"}


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def ok(*args):
    result = run(*args)
    assert result.exit_code == 0, result.output
    return result


def classify(p, likely, clear):
    return "likely_mislabelled" if p >= likely else "clear" if p <= clear else "ambiguous"


def rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def flagged(tmp_path_factory):
    out = tmp_path_factory.mktemp("flag") / "flags.jsonl"
    r = ok(
        "pm", "flag", "harmless-base", "helpful-base", "--data", "sample", "--out", out,
        "--folds", "3", "--json",
    )  # fmt: skip
    return out, json.loads(r.stdout)


def test_flag_writes_a_row_per_pair_and_counts_classes(flagged):
    out, report = flagged
    got = rows(out)
    assert len(got) == report["pairs"] == 120
    assert set(got[0]) == {
        "subset", "split", "index", "margin", "margin_sd", "p_mislabelled", "class",
    }  # fmt: skip
    assert {r["class"] for r in got} <= CLASSES
    assert {(r["subset"], r["split"]) for r in got} == {
        ("harmless-base", "train"),
        ("helpful-base", "train"),
    }
    counts = {(c["subset"], c["split"]): c for c in report["counts"]}
    harmless = [r for r in got if r["subset"] == "harmless-base"]
    assert counts["harmless-base", "train"]["pairs"] == len(harmless)
    for c in CLASSES:
        assert counts["harmless-base", "train"][c] == sum(r["class"] == c for r in harmless)
        assert counts["all", ""][c] == sum(r["class"] == c for r in got)
    assert report["fits"] == {"dual": 6} and report["seeds"] == 2
    assert report["thresholds"] == {"likely": 0.6, "clear": 0.4}
    assert all(r["class"] == classify(r["p_mislabelled"], 0.6, 0.4) for r in got)


def test_flag_table_and_thresholds(tmp_path):
    r = ok(
        "pm", "flag", "harmless-base", "--data", "sample", "--out", tmp_path / "f.jsonl",
        "--folds", "3", "--seeds", "1", "--likely", "0.5", "--clear", "0.45",
    )  # fmt: skip
    assert "3-fold x 1-seed flags on 60 pairs" in r.stdout
    assert "likely_mislabelled" in r.stdout and "all" in r.stdout
    got = rows(tmp_path / "f.jsonl")
    assert all(r["class"] == classify(r["p_mislabelled"], 0.5, 0.45) for r in got)
    assert {r["class"] for r in got} == CLASSES
    assert all(r["margin_sd"] == 0 for r in got)


def test_flag_refuses_to_overwrite_and_bad_thresholds(flagged, tmp_path):
    out, _ = flagged
    r = run("pm", "flag", "--data", "sample", "--out", out)
    assert r.exit_code == 1 and "--force" in r.output
    r = run("pm", "flag", "--data", "sample", "--out", tmp_path / "f", "--likely", "0.3")
    assert r.exit_code == 2 and "--clear (0.4) must be below --likely (0.3)" in r.output
    r = run("pm", "flag", "--data", "sample", "--out", tmp_path / "f", "--backend", "transformers")
    assert r.exit_code == 2 and "needs --base-model" in r.output


def test_inject_flips_and_strata_report(tmp_path):
    r = ok(
        "pm", "flag", "harmless-base", "--data", "sample", "--out", tmp_path / "f.jsonl",
        "--folds", "3", "--seeds", "1", "--inject-flips", "0.2", "--seed", "4", "--strata", "3",
        "--json",
    )  # fmt: skip
    report = json.loads(r.stdout)
    inj = report["injected"]
    got = rows(tmp_path / "f.jsonl")
    assert inj["flipped"] == 12 == sum(r["injected_flip"] for r in got)
    for key in ("auroc", "precision@0.02", "recall@0.05", "precision@0.1", "precision@likely"):
        v = inj[key]
        assert v["low"] <= v["value"] <= v["high"], key
    assert [s["stratum"] for s in report["strata"]] == [1, 2, 3]
    assert sum(s["pairs"] for s in report["strata"]) == 60
    table = ok(
        "pm", "flag", "harmless-base", "--data", "sample", "--out", tmp_path / "g.jsonl",
        "--folds", "3", "--seeds", "1", "--inject-flips", "0.2", "--seed", "4", "--strata", "3",
    ).stdout  # fmt: skip
    assert "12 labels flipped (rate 0.2, seed 4): AUROC" in table
    assert "top 5%" in table and "strata by margin" in table


def test_a_judge_votes_and_abstains_on_its_training_pairs(tmp_path):
    model = tmp_path / "judge"
    ok("pm", "train", "harmless-base", "--data", "sample", "--split", "train", "--out", model)
    r = ok(
        "pm", "flag", "harmless-base", "--data", "sample", "--split", "train", "--out",
        tmp_path / "f.jsonl", "--folds", "3", "--seeds", "1", "--judge", model, "--json",
    )  # fmt: skip
    report = json.loads(r.stdout)
    assert report["judges"] == ["cv", str(model)] and report["vote"] == "majority"
    got = rows(tmp_path / "f.jsonl")
    # the judge was trained on these very pairs: it abstains on every one
    assert all(r["judges"][str(model)] is None and r["voters"] == 1 for r in got)
    r = ok(
        "pm", "flag", "harmless-base", "--data", "sample", "--split", "test", "--out",
        tmp_path / "g.jsonl", "--folds", "3", "--seeds", "1", "--judge", model, "--vote", "all",
    )  # fmt: skip
    got = rows(tmp_path / "g.jsonl")
    assert all(r["voters"] == 2 and isinstance(r["judges"][str(model)], float) for r in got)
    for r in got:
        if r["class"] == "likely_mislabelled":
            assert r["votes"] == 2


def test_a_judge_that_is_not_a_model_is_one_clear_line(tmp_path):
    (tmp_path / "nothing").mkdir()
    r = run(
        "pm", "flag", "--data", "sample", "--out", tmp_path / "f", "--judge", tmp_path / "nothing",
    )  # fmt: skip
    assert r.exit_code == 1 and r.output.startswith("error: ") and "Traceback" not in r.output


def test_each_fit_reports_progress_on_stderr(tmp_path, monkeypatch):
    from hhrlhf import progress as progress_mod

    monkeypatch.setattr(progress_mod, "INTERVAL", 0.0)
    monkeypatch.setattr(progress_mod, "SUMMARY_AFTER", 0.0)
    r = CliRunner().invoke(
        cli,
        ["pm", "flag", "harmless-base", "--data", "sample", "--out", str(tmp_path / "f.jsonl"),
         "--folds", "3", "--seeds", "2", "--json"],
    )  # fmt: skip
    progress_mod.enable(False)
    assert r.exit_code == 0, r.output
    for seed in (1, 2):
        for fold in (1, 2, 3):
            assert f"seed {seed}/2 fold {fold}/3: " in r.stderr
    assert " Newton steps in " in r.stderr
    json.loads(r.stdout)  # stdout stays machine output
