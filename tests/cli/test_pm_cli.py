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
