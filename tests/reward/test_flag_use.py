"""Using the flags of ``hh pm flag``: hh clean --drop-flagged, hh export --margins, hh pm train
--label-smoothing / --margin-from."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

import hhrlhf
from hhrlhf.cli import cli
from hhrlhf.reward.flag_eval import inject_flips


def ok(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture(scope="module")
def flags(tmp_path_factory):
    out = tmp_path_factory.mktemp("flags") / "flags.jsonl"
    ok(
        "pm", "flag", "harmless-base", "--data", "sample", "--split", "train", "--out", out,
        "--folds", "3", "--seeds", "1", "--likely", "0.5", "--clear", "0.45",
    )  # fmt: skip
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert {r["class"] for r in rows} == {"likely_mislabelled", "ambiguous", "clear"}
    return out, rows


def _sample_rows():
    pairs = hhrlhf.load_dataset("harmless-base", data="sample")["train"]
    return [{"chosen": p.chosen, "rejected": p.rejected} for p in pairs]


def test_clean_drops_the_flagged_classes_with_their_reasons(flags, tmp_path):
    path, rows = flags
    out = tmp_path / "clean"
    r = ok(
        "clean", "harmless-base", "--split", "train", "--data", "sample", "--out", out,
        "--drop-flagged", path, "--classes", "likely_mislabelled,ambiguous", "--json",
    )  # fmt: skip
    manifest = json.loads(r.stdout)
    doubtful = {r["index"]: r for r in rows if r["class"] != "clear"}
    by_class = {c: sum(r["class"] == c for r in rows) for c in ("likely_mislabelled", "ambiguous")}
    assert manifest["dropped_by_reason"] == by_class
    assert manifest["dropped"] == len(doubtful) and manifest["kept"] == len(rows) - len(doubtful)
    dropped = [json.loads(x) for x in (out / "dropped.jsonl").read_text().splitlines()]
    assert {d["source"]["index"] for d in dropped} == set(doubtful)
    d = dropped[0]
    flag = doubtful[d["source"]["index"]]
    assert d["reasons"] == [flag["class"]]
    assert f"p_mislabelled {flag['p_mislabelled']:.3f}" in d["details"][flag["class"]]
    kept = hhrlhf.load_dataset("harmless-base", data=out)["train"]
    source = _sample_rows()
    assert [p.chosen for p in kept] == [
        s["chosen"] for i, s in enumerate(source) if i not in doubtful
    ]


def test_clean_flip_swaps_the_flagged_pairs_instead(flags, tmp_path):
    path, rows = flags
    out = tmp_path / "flip"
    r = ok(
        "clean", "harmless-base", "--split", "train", "--data", "sample", "--out", out,
        "--drop-flagged", path, "--flip",
    )  # fmt: skip
    likely = {r["index"] for r in rows if r["class"] == "likely_mislabelled"}
    assert f"flipped (chosen and rejected swapped, kept): {len(likely)}" in r.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["dropped"] == 0 and {f["index"] for f in manifest["flipped"]} == likely
    assert manifest["files"]["harmless-base/train.jsonl.gz"]["flipped"] == len(likely)
    kept = hhrlhf.load_dataset("harmless-base", data=out)["train"]
    for i, (pair, src) in enumerate(zip(kept, _sample_rows(), strict=True)):
        want = (src["rejected"], src["chosen"]) if i in likely else (src["chosen"], src["rejected"])
        assert (pair.chosen, pair.rejected) == want


def test_clean_refuses_flags_of_other_data_and_bad_classes(flags, tmp_path):
    path, _ = flags
    r = run(
        "clean", "harmless-base", "--split", "test", "--data", "sample", "--out", tmp_path / "o",
        "--drop-flagged", path,
    )  # fmt: skip
    assert r.exit_code == 1 and "not in the data being cleaned" in r.output
    assert not (tmp_path / "o").exists()
    r = run("clean", "--data", "sample", "--out", tmp_path / "p", "--drop-flagged", path,
            "--classes", "doubtful")  # fmt: skip
    assert r.exit_code == 2 and "unknown class doubtful" in r.output
    r = run("clean", "--data", "sample", "--out", tmp_path / "q", "--flip")
    assert r.exit_code == 2 and "--flip" in r.output


@pytest.mark.parametrize("fmt", ["dpo", "trl-conversational"])
def test_export_adds_margin_columns(flags, tmp_path, fmt):
    path, rows = flags
    out = tmp_path / "x.jsonl"
    ok(
        "export", "harmless-base", "--split", "train", "--data", "sample", "--format", fmt,
        "--out", out, "--margins", path,
    )  # fmt: skip
    got = [json.loads(x) for x in out.read_text().splitlines()]
    assert [(g["margin"], g["p_mislabelled"]) for g in got] == [
        (r["margin"], r["p_mislabelled"]) for r in rows
    ]


def test_export_margins_parquet_and_missing_pairs(flags, tmp_path):
    pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path, rows = flags
    out = tmp_path / "x.parquet"
    ok(
        "export", "harmless-base", "--split", "train", "--data", "sample", "--format", "dpo",
        "--out", out, "--margins", path,
    )  # fmt: skip
    assert pq.read_table(out).column("margin").to_pylist() == [r["margin"] for r in rows]
    r = run(
        "export", "harmless-base", "--split", "test", "--data", "sample", "--format", "dpo",
        "--out", tmp_path / "y.jsonl", "--margins", path,
    )  # fmt: skip
    assert r.exit_code == 1 and "the flags have no row for pair harmless-base/test/0" in r.output


def test_loss_with_smoothing_and_offsets_has_the_right_value_and_gradient():
    from scipy.optimize import check_grad

    from hhrlhf.reward.loss import bt_objective

    rng = np.random.default_rng(0)
    d, w = rng.normal(size=(30, 5)), rng.normal(size=5)
    offsets = rng.normal(size=30)
    m = d @ w - offsets
    loss, _ = bt_objective(w, d, None, 0.0, 0.1, offsets)
    want = np.mean(0.9 * np.logaddexp(0, -m) + 0.1 * np.logaddexp(0, m))
    assert loss == pytest.approx(want)
    for args in ((None, 1e-3, 0.1, offsets), (np.ones(30) * 2, 0.0, 0.0, offsets)):
        err = check_grad(
            lambda v, a=args: bt_objective(v, d, *a)[0],
            lambda v, a=args: bt_objective(v, d, *a)[1],
            w,
        )
        assert err < 1e-5
    plain = bt_objective(w, d, None, 1e-3)
    same = bt_objective(w, d, None, 1e-3, 0.0, None)
    assert plain[0] == same[0] and np.array_equal(plain[1], same[1])


def test_adaptive_margins_and_smoothing_change_the_fit():
    from hhrlhf.reward import train_pm

    from .conftest import SMALL, make_pairs

    pairs, flipped = inject_flips(make_pairs(200, seed=31), 0.3, seed=2)
    probe = make_pairs(200, seed=32)
    # the flipped pairs get a margin of -5: the loss asks the model to prefer them by > -5
    plain = train_pm(pairs, config=SMALL)
    adaptive = train_pm(pairs, config=SMALL, margins=np.where(flipped, -5.0, 0.0))
    smoothed = train_pm(pairs, config=SMALL, label_smoothing=0.3)
    mean = {k: np.subtract(*m.score_pairs(probe)).mean() for k, m in
            {"plain": plain, "adaptive": adaptive, "smoothed": smoothed}.items()}  # fmt: skip
    assert mean["adaptive"] > 1.5 * mean["plain"] > 0
    assert 0 < mean["smoothed"] < mean["plain"]
    assert adaptive.meta["hyperparameters"]["adaptive_margin"]
    assert smoothed.meta["hyperparameters"]["label_smoothing"] == 0.3
    with pytest.raises(ValueError, match="label smoothing"):
        train_pm(pairs, config=SMALL, label_smoothing=0.5)


def test_train_takes_margins_from_the_flags(flags, tmp_path):
    path, _ = flags
    r = ok(
        "pm", "train", "harmless-base", "--split", "train", "--data", "sample", "--out",
        tmp_path / "m", "--margin-from", path, "--label-smoothing", "0.1", "--json",
    )  # fmt: skip
    hyper = json.loads(r.stdout)["hyperparameters"]
    assert hyper["label_smoothing"] == 0.1 and "adaptive_margin" in hyper
    r = run(
        "pm", "train", "harmless-base", "--split", "test", "--data", "sample", "--out",
        tmp_path / "n", "--margin-from", path,
    )  # fmt: skip
    assert r.exit_code == 1 and "no row for pair harmless-base/test/0" in r.output
    r = run(
        "pm", "train", "--data", "sample", "--out", tmp_path / "o", "--backend", "transformers",
        "--base-model", "x", "--label-smoothing", "0.1",
    )  # fmt: skip
    assert r.exit_code == 2 and "--label-smoothing is for the linear backend" in r.output
