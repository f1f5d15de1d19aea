import json

import orjson
import pytest
from click.testing import CliRunner

from hhrlhf.cli import cli
from hhrlhf.cli.pm import demo_step


def run(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    return result


def ok(*args):
    result = run(*args)
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("pm") / "model"
    ok("pm", "train", "harmless-base", "--data", "sample", "--out", out)
    return out


def test_train_writes_a_versioned_model(model_dir):
    meta = json.loads((model_dir / "model.json").read_text())
    assert meta["backend"] == "linear"
    assert meta["training_data"]["subsets"] == ["harmless-base"]
    assert meta["training_data"]["splits"] == ["train"]
    assert list(meta["training_data"]["sha256"]) == ["harmless-base/train.jsonl.gz"]
    assert len(meta["training_data"]["sha256"]["harmless-base/train.jsonl.gz"]) == 64
    assert (model_dir / "weights.npz").is_file()


def test_train_json_and_lambda(tmp_path):
    r = ok(
        "pm",
        "train",
        "harmless-base",
        "helpful-base",
        "--data",
        "sample",
        "--out",
        tmp_path / "m",
        "--lambda",
        "2.5",
        "--json",
    )
    meta = json.loads(r.stdout)
    assert meta["hyperparameters"]["harm_weight"] == 2.5
    assert set(meta["training_data"]["subsets"]) == {"harmless-base", "helpful-base"}


def test_eval_json_has_the_promised_shape(model_dir):
    r = ok(
        "pm",
        "eval",
        "harmless-base",
        "--data",
        "sample",
        "--model",
        model_dir,
        "--json",
        "--bootstrap",
        "100",
    )
    rep = json.loads(r.stdout)
    o = rep["overall"]
    assert o["correct"] + o["ties"] + o["wrong"] == o["n"] > 0
    assert o["accuracy"] == pytest.approx(o["correct"] / o["n"])
    assert set(rep["subsets"]) == {"harmless-base"}
    assert set(rep["baselines"]) == {"random", "longer wins", "shorter wins"}
    assert 0 <= rep["calibration"]["ece"] <= 1
    assert "by_turns" in rep and "length_controlled" in rep


def test_eval_table_and_plot(model_dir, tmp_path):
    plot = tmp_path / "eval.png"
    r = ok(
        "pm",
        "eval",
        "harmless-base",
        "--data",
        "sample",
        "--model",
        model_dir,
        "--plot",
        plot,
        "--bootstrap",
        "50",
    )
    assert "shorter wins" in r.stdout and "ECE" in r.stdout
    assert plot.read_bytes()[:4] == b"\x89PNG"


def test_eval_scores_file_agrees_with_hand_count(tmp_path):
    from hhrlhf import load_pairs

    pairs = load_pairs("harmless-base", split="test", data="sample")
    lines = [
        orjson.dumps(
            {
                "id": f"harmless-base/test/{p.index}",
                "chosen": 1.0,
                "rejected": 0.0 if i % 4 else 1.0,
            }
        )
        for i, p in enumerate(pairs)
    ]
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(lines))
    rep = json.loads(
        ok("pm", "eval", "harmless-base", "--data", "sample", "--scores", path, "--json").stdout
    )
    ties = sum(1 for i in range(len(pairs)) if i % 4 == 0)
    assert rep["overall"]["ties"] == ties
    assert rep["overall"]["correct"] == len(pairs) - ties


def test_eval_needs_exactly_one_source(model_dir, tmp_path):
    r = run("pm", "eval", "--data", "sample")
    assert r.exit_code == 2 and "exactly one of" in r.output


def test_eval_bad_model_is_one_clear_line(tmp_path):
    (tmp_path / "m").mkdir()
    r = run("pm", "eval", "harmless-base", "--data", "sample", "--model", tmp_path / "m")
    assert r.exit_code == 1
    assert "error:" in r.output and "no model.json" in r.output


def test_score_red_team_sample(model_dir, tmp_path):
    out = tmp_path / "scores.jsonl"
    r = ok("pm", "score", "--model", model_dir, "--data", "sample", "--out", out, "--json")
    summary = json.loads(r.stdout)
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert summary["dialogues"] == len(rows) > 0
    assert summary["correlation"]["n"] > 0
    row = next(r for r in rows if r["turn_scores"])
    assert row["min_score"] == min(row["turn_scores"])


def test_score_transcripts_file(model_dir, tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text(
        '{"id": "x", "transcript": "\\n\\nHuman: hi\\n\\nAssistant: hello"}\n'
        '{"transcript": "\\n\\nHuman: hi"}\n'
    )
    out = tmp_path / "o.jsonl"
    ok("pm", "score", "--model", model_dir, "--in", path, "--out", out)
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert rows[0]["id"] == "x" and len(rows[0]["turn_scores"]) == 1
    assert rows[1]["min_score"] is None
    path.write_text('{"text": "no transcript"}\n')
    r = run("pm", "score", "--model", model_dir, "--in", path)
    assert r.exit_code == 1 and "line 1" in r.output


def test_rerank(model_dir, tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(
        '{"id": 7, "prompt": "How do I bake bread?", "candidates": '
        '["Mix flour and water, knead, bake.", "No.", "Maybe."]}\n'
    )
    r = ok("pm", "rerank", "--model", model_dir, "--in", path, "--k", "2", "--jsonl")
    row = json.loads(r.stdout)
    assert row["id"] == 7 and row["k"] == 2 and sorted(row["ranking"]) == [0, 1]
    assert row["margin"] == pytest.approx(abs(row["scores"][0] - row["scores"][1]))
    r = run("pm", "rerank", "--model", model_dir, "--in", path, "--k", "5")
    assert r.exit_code == 1 and "fewer than --k 5" in r.output


def test_every_command_has_an_example():
    for name in ("train", "eval", "score", "rerank"):
        r = ok("pm", name, "--help")
        assert "Example" in r.output


def test_demo_step(tmp_path, capsys):
    demo_step("sample", tmp_path)
    out = capsys.readouterr().out
    assert "test accuracy" in out and "shorter wins" in out
    rep = json.loads((tmp_path / "pm" / "eval.json").read_text())
    assert rep["overall"]["n"] > 0
    assert (tmp_path / "pm" / "model" / "model.json").is_file()


def test_transformers_backend_needs_a_base_model(tmp_path):
    r = run("pm", "train", "--backend", "transformers", "--data", "sample", "--out", tmp_path / "m")
    assert r.exit_code == 2 and "--base-model" in r.output
    assert not (tmp_path / "m").exists()


def test_missing_input_files_are_clear_errors(model_dir, tmp_path):
    r = run("pm", "rerank", "--model", model_dir, "--in", tmp_path / "nope.jsonl")
    assert r.exit_code == 1 and "nope.jsonl" in r.output and "error:" in r.output
    r = run("pm", "eval", "harmless-base", "--data", "sample", "--scores", tmp_path / "no.jsonl")
    assert r.exit_code == 1 and "no.jsonl" in r.output


def test_rerank_with_a_hostile_word_pattern_is_a_clear_error(model_dir, tmp_path):
    import shutil

    evil = tmp_path / "evil"
    shutil.copytree(model_dir, evil)
    meta = json.loads((evil / "model.json").read_text())
    meta["features"].pop("word_tokenizer", None)
    meta["features"]["word_pattern"] = "(a+)+$"
    (evil / "model.json").write_text(json.dumps(meta))
    path = tmp_path / "c.jsonl"
    path.write_text('{"prompt": "Hi", "candidates": ["' + "a" * 40 + '!", "b"]}\n')
    r = run("pm", "rerank", "--model", evil, "--in", path)
    assert r.exit_code == 1
    assert "error:" in r.output and "word_pattern" in r.output and "Traceback" not in r.output


BAD_DIALOGUES = __import__("pathlib").Path(__file__).parents[1] / "data" / "pm"


def test_score_lenient_skips_bad_rows_and_counts_unscored(model_dir):
    path = BAD_DIALOGUES / "dialogues_with_bad_rows.jsonl"
    r = run("pm", "score", "--model", model_dir, "--in", path)
    assert r.exit_code == 1 and "line 2" in r.output and "error:" in r.output
    r = ok("pm", "score", "--model", model_dir, "--in", path, "--lenient", "--json")
    summary = json.loads(r.stdout)
    assert summary["dialogues"] == 3 and summary["scored"] == 2 and summary["no_score"] == 1
    assert summary["skipped_rows"] == 2
    assert "line 2" in r.stderr and "line 3" in r.stderr and "transcript" in r.stderr
    assert "read 3 of 5 rows (2 skipped)" in r.stderr
    r = ok("pm", "score", "--model", model_dir, "--in", path, "--lenient")
    assert "scored 2 of 3 dialogues (1 without an assistant turn got no score)" in r.stdout


def test_eval_on_training_data_warns_and_says_so_in_json(model_dir):
    r = ok("pm", "eval", "harmless-base", "--split", "train", "--data", "sample",
           "--model", model_dir, "--bootstrap", "10", "--json")  # fmt: skip
    rep = json.loads(r.stdout)
    assert rep["evaluated_on_training_data"] is True
    assert rep["training_data_files"] == ["harmless-base/train.jsonl.gz"]
    warnings = [line for line in r.stderr.splitlines() if "training data" in line]
    assert len(warnings) == 1 and warnings[0].startswith("warning: evaluating on training data")
    r = ok("pm", "eval", "harmless-base", "--split", "test", "--data", "sample",
           "--model", model_dir, "--bootstrap", "10", "--json")  # fmt: skip
    rep = json.loads(r.stdout)
    assert rep["evaluated_on_training_data"] is False and rep["training_data_files"] == []
    assert "training data" not in r.stderr


def test_eval_on_training_data_is_loud_in_the_table_too(model_dir):
    r = ok("pm", "eval", "harmless-base", "--split", "train", "--data", "sample",
           "--model", model_dir, "--bootstrap", "10")  # fmt: skip
    assert r.stdout.startswith("WARNING: 60 of 60 pairs below were trained on")
    assert "model (TRAINED ON 60)  overall" in r.stdout
    r = ok("pm", "eval", "harmless-base", "--split", "train", "--data", "sample",
           "--model", model_dir, "--bootstrap", "10", "--json")  # fmt: skip
    assert json.loads(r.stdout)["training_pairs_evaluated"] == 60


def test_the_fingerprints_follow_the_pairs_not_the_file(model_dir, tmp_path):
    """The same pairs in another file (a copy) are still training pairs."""
    import shutil

    copy = tmp_path / "copy" / "harmless-base" / "test.jsonl.gz"
    copy.parent.mkdir(parents=True)
    shutil.copy(__import__("hhrlhf").layout.SAMPLE_DIR / "harmless-base" / "train.jsonl.gz", copy)
    r = ok("pm", "eval", "--data", tmp_path / "copy", "--model", model_dir,
           "--bootstrap", "10", "--json")  # fmt: skip
    rep = json.loads(r.stdout)
    assert rep["evaluated_on_training_data"] is True and rep["training_pairs_evaluated"] == 60
    assert "60 of 60 pairs were in this model's training set" in r.stderr


def _test_only(tmp_path):
    import shutil

    from hhrlhf.layout import SAMPLE_DIR

    root = tmp_path / "only-test"
    for sub in ("harmless-base", "helpful-base"):
        (root / sub).mkdir(parents=True)
        shutil.copy(SAMPLE_DIR / sub / "test.jsonl.gz", root / sub / "test.jsonl.gz")
    return root


def test_holdout_is_stable_grouped_by_prompt_and_evaluated_apart(tmp_path):
    from hhrlhf import load_dataset
    from hhrlhf.reward.holdout import prompt_key, split_holdout

    data = _test_only(tmp_path)
    pairs = list(load_dataset(split="test", data=data))
    train, held = split_holdout(pairs, 0.3)
    # the same on every run, whatever the order, and no prompt on both sides
    again = split_holdout(list(reversed(pairs)), 0.3)
    assert {id(p) for p in held} == {id(p) for p in again[1]}
    assert not {prompt_key(p) for p in train} & {prompt_key(p) for p in held}
    assert 0 < len(held) < len(pairs)
    r = ok("pm", "train", "--data", data, "--out", tmp_path / "m", "--holdout", "0.3",
           "--max-iter", "20", "--json")  # fmt: skip
    meta = json.loads(r.stdout)
    assert meta["metrics"]["pairs"] == len(train)
    assert meta["training_data"]["holdout"] == {
        "fraction": 0.3, "held_out_pairs": len(held), "by": "prompt"
    }  # fmt: skip
    assert meta["held_out"]["pairs"] == len(held)
    assert f"{len(held)} pairs held out by prompt (--holdout 0.3)" in r.stderr
    # the held-out side is clean; the whole file is not, and eval says how to fix it
    r = ok("pm", "eval", "--data", data, "--model", tmp_path / "m", "--holdout", "0.3",
           "--bootstrap", "10", "--json")  # fmt: skip
    rep = json.loads(r.stdout)
    assert rep["overall"]["n"] == len(held) and rep["evaluated_on_training_data"] is False
    r = ok("pm", "eval", "--data", data, "--model", tmp_path / "m", "--bootstrap", "10",
           "--json")  # fmt: skip
    assert json.loads(r.stdout)["training_pairs_evaluated"] == len(train)
    assert "pass --holdout 0.3 to evaluate the pairs it held out" in r.stderr


def test_training_on_a_test_only_folder_says_how_to_hold_out(tmp_path):
    r = ok("pm", "train", "--data", _test_only(tmp_path), "--out", tmp_path / "m",
           "--max-iter", "5")  # fmt: skip
    assert "no train split" in r.stderr and "--holdout 0.2" in r.stderr and "hh pm cv" in r.stderr


def test_holdout_out_of_range_is_a_usage_error(tmp_path):
    r = run("pm", "train", "--data", "sample", "--out", tmp_path / "m", "--holdout", "1.5")
    assert r.exit_code == 2 and "--holdout" in r.output


def test_cv_folds_are_grouped_seeded_and_reported(tmp_path):
    from hhrlhf import load_dataset
    from hhrlhf.reward.holdout import kfold, prompt_key

    data = _test_only(tmp_path)
    pairs = list(load_dataset(split="test", data=data))
    folds = kfold(pairs, 3, seed=0)
    assert sorted(i for _, te in folds for i in te) == list(range(len(pairs)))
    for tr, te in folds:
        assert not {prompt_key(pairs[i]) for i in tr} & {prompt_key(pairs[i]) for i in te}
    assert kfold(pairs, 3, seed=0) == folds and kfold(pairs, 3, seed=1) != folds
    r = ok("pm", "cv", "--data", data, "--folds", "3", "--max-iter", "20", "--json")
    got = json.loads(r.stdout)
    assert [f["test_pairs"] for f in got["per_fold"]] == [len(te) for _, te in folds]
    assert got["grouped_by"] == "prompt" and got["pairs"] == len(pairs)
    accs = [f["model"]["accuracy"] for f in got["per_fold"]]
    assert got["summary"]["model"]["mean_accuracy"] == pytest.approx(sum(accs) / 3)
    assert "fold 3/3: accuracy" in r.stderr
    r = ok("pm", "cv", "--data", data, "--folds", "3", "--max-iter", "20")
    assert r.stdout.startswith(f"3-fold CV on {len(pairs)} pairs (grouped by prompt, seed 0)")
    r = run("pm", "cv", "--data", data, "--folds", "1")
    assert r.exit_code == 2
