"""Using the flags of ``hh pm flag``: hh clean --drop-flagged, hh export --margins, hh pm train
--label-smoothing / --margin-from."""

import json

import pytest
from click.testing import CliRunner

import hhrlhf
from hhrlhf.cli import cli


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
