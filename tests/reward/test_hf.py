"""The transformers backend: a tiny randomly initialised model trained for a few steps on CPU.

Nothing is downloaded: the model and tokenizer are :mod:`hhrlhf.reward.tiny`'s (a word-level
vocabulary of the pairs' words, a 2-layer GPT-2 built from its config).
"""

from __future__ import annotations

import importlib.util
import json

import pytest

from .conftest import make_pairs

MISSING = [
    m
    for m in ("torch", "transformers", "trl", "datasets", "tokenizers")
    if importlib.util.find_spec(m) is None
]

pytestmark = [
    pytest.mark.train,
    pytest.mark.skipif(
        bool(MISSING),
        reason=f"needs the [train] extra (missing: {', '.join(MISSING)}); "
        "pip install 'hhrlhf[train]'",
    ),
]


def _tiny_model_and_tokenizer(pairs):
    from hhrlhf.reward.tiny import tiny_model_and_tokenizer

    return tiny_model_and_tokenizer(p.chosen + " " + p.rejected for p in pairs)


def test_tiny_transformer_trains_on_cpu_and_reloads(tmp_path):
    from hhrlhf.reward import evaluate_model, load_model
    from hhrlhf.reward.hf import train_hf

    pairs = make_pairs(32, seed=1)
    model, tokenizer = _tiny_model_and_tokenizer(pairs)
    trained = train_hf(
        model,
        pairs,
        tmp_path / "hfpm",
        tokenizer=tokenizer,
        max_steps=4,
        batch_size=8,
        learning_rate=1e-3,
        max_length=64,
    )
    meta = json.loads((tmp_path / "hfpm" / "model.json").read_text())
    assert meta["backend"] == "transformers"
    assert meta["metrics"]["steps"] == 4
    assert meta["hyperparameters"]["trainer"] == "trl.RewardTrainer"
    c1, r1 = trained.score_pairs(pairs[:5])
    loaded = load_model(tmp_path / "hfpm")
    c2, r2 = loaded.score_pairs(pairs[:5])
    assert c1 == pytest.approx(c2, abs=1e-5) and r1 == pytest.approx(r2, abs=1e-5)
    report = evaluate_model(loaded, pairs[:8], n_boot=10)
    assert report["overall"]["n"] == 8


def _long_prompt_pairs(n: int, prompt_words: int):
    from hhrlhf import PreferencePair

    pairs = []
    for i in range(n):
        prompt = "\n\nHuman: " + " ".join(f"w{(i + j) % 150}" for j in range(prompt_words))
        prompt += "\n\nAssistant:"
        pairs.append(
            PreferencePair(
                prompt + " gladly w1 w2", prompt + " never w3", "helpful-base", "test", i
            )
        )
    return pairs


def test_a_long_prompt_is_cut_from_the_left_and_the_responses_stay(tmp_path):
    """Cut from the right at max_length, both sides lose their responses and tie; the
    prompt's beginning goes instead, and the cuts are counted."""
    from hhrlhf.reward.hf import HFRewardModel

    pairs = _long_prompt_pairs(6, prompt_words=40)
    model, tokenizer = _tiny_model_and_tokenizer(pairs + make_pairs(4, seed=1))
    hf = HFRewardModel("tiny", model=model, tokenizer=tokenizer, max_length=16, add_eos=True)
    c, r = hf.score_pairs(pairs)
    assert all(abs(a - b) > 1e-6 for a, b in zip(c, r, strict=True))  # no pair is a tie
    assert hf.pair_truncation == {"pairs": 6, "truncated": 6, "response_cut": 0, "max_length": 16}
    # what the model saw: the end of the prompt, the whole response, the EOS
    ids, prompt_cut, response_cut = hf._fit(
        tokenizer(pairs[0].prompt, add_special_tokens=False)["input_ids"],
        tokenizer(pairs[0].chosen_response, add_special_tokens=False)["input_ids"],
    )
    words = tokenizer.convert_ids_to_tokens(ids)
    assert len(ids) == 16 and prompt_cut and not response_cut
    assert words[-5:] == ["Assistant:", "gladly", "w1", "w2", "[EOS]"]
    # the whole text, cut from the right as before, loses both responses: a tie
    whole = [p.chosen for p in pairs[:1]] + [p.rejected for p in pairs[:1]]
    enc = tokenizer(whole, truncation=True, max_length=16)["input_ids"]
    assert enc[0] == enc[1]
    # texts within max_length are not cut
    hf.max_length = 64
    hf.score_pairs(make_pairs(3, seed=2))
    assert hf.pair_truncation["truncated"] == 0


def test_a_text_that_fits_keeps_its_whole_prompt():
    """A prompt shorter than the room left keeps every token (a negative slice start once
    dropped its beginning, unreported, when the room was under twice the prompt)."""
    from hhrlhf.reward.hf import HFRewardModel

    pair = make_pairs(1, seed=3)[0]
    model, tokenizer = _tiny_model_and_tokenizer([pair])
    hf = HFRewardModel("tiny", model=model, tokenizer=tokenizer, max_length=24, add_eos=True)
    prompt = tokenizer(pair.prompt, add_special_tokens=False)["input_ids"]
    response = tokenizer(pair.chosen_response, add_special_tokens=False)["input_ids"]
    assert len(prompt) < 24 - 1 - len(response) < 2 * len(prompt)
    ids, prompt_cut, response_cut = hf._fit(prompt, response)
    assert ids == prompt + response + [tokenizer.eos_token_id]
    assert not prompt_cut and not response_cut


def test_pm_eval_max_length_reports_truncated_pairs(tmp_path):
    import gzip

    from click.testing import CliRunner

    from hhrlhf.cli import cli
    from hhrlhf.reward.hf import HFRewardModel

    pairs = _long_prompt_pairs(6, prompt_words=40)
    data = tmp_path / "data" / "helpful-base" / "test.jsonl.gz"
    data.parent.mkdir(parents=True)
    data.write_bytes(
        gzip.compress(
            "".join(
                json.dumps({"chosen": p.chosen, "rejected": p.rejected}) + "\n" for p in pairs
            ).encode()
        )
    )
    model, tokenizer = _tiny_model_and_tokenizer(pairs)
    HFRewardModel("tiny", model=model, tokenizer=tokenizer).save(tmp_path / "m")
    args = ["pm", "eval", "--data", str(tmp_path / "data"), "--model", str(tmp_path / "m"),
            "--bootstrap", "10", "--json"]  # fmt: skip
    r = CliRunner().invoke(cli, [*args, "--max-length", "16"])
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    assert rep["truncation"]["truncated"] == 6 and rep["overall"]["ties"] == 0
    assert "truncated 6 of 6 pairs to 16 tokens" in r.stderr
    r = CliRunner().invoke(cli, [*args, "--max-length", "64"])
    assert json.loads(r.stdout)["truncation"]["truncated"] == 0


def _mixed_pairs():
    """3 short pairs, 4 with a 40-word prompt, and one whose chosen response is 30 words."""
    from hhrlhf import PreferencePair

    pairs = make_pairs(3, seed=3)
    pairs += [
        PreferencePair(p.chosen, p.rejected, "helpful-base", "train", 3 + i)
        for i, p in enumerate(_long_prompt_pairs(4, prompt_words=40))
    ]
    prompt = "\n\nHuman: w1 w2?\n\nAssistant:"
    long = " " + " ".join(f"w{j}" for j in range(30))
    pairs.append(PreferencePair(prompt + long, prompt + " never", "helpful-base", "train", 7))
    return pairs


def test_fit_pairs_cuts_prompts_from_the_left_and_drops_what_cannot_fit():
    from hhrlhf.reward.truncate import fit_pairs

    pairs = _mixed_pairs()
    _, tokenizer = _tiny_model_and_tokenizer(pairs)
    fitted = fit_pairs(pairs, tokenizer, 24)
    assert fitted.pairs == pairs[:7] and fitted.dropped == pairs[7:]
    assert fitted.cut == 4
    assert fitted.summary() == {
        "max_length": 24,
        "pairs_given": 8,
        "pairs_kept": 7,
        "prompt_cut": 4,
        "dropped": ["helpful-base/train/7"],
    }
    assert fitted.describe() == (
        "--max-length 24 tokens: 4 pairs lost the beginning of the prompt; 1 pair dropped, a "
        "response alone too long (helpful-base/train/7); training on 7 of 8 pairs"
    )
    for pair, c_ids, r_ids in zip(
        fitted.pairs, fitted.chosen_ids, fitted.rejected_ids, strict=True
    ):
        for ids, response in ((c_ids, pair.chosen_response), (r_ids, pair.rejected_response)):
            assert len(ids) <= 24  # so TRL's own max_length filter keeps it
            words = tokenizer.convert_ids_to_tokens(ids)
            assert words[-1] == "[EOS]"
            # the whole response, after the end of its prompt
            assert words[-len(response.split()) - 2 :] == ["Assistant:", *response.split(), "[EOS]"]
    # the short pairs are whole
    assert tokenizer.decode(fitted.chosen_ids[0][:-1]).split() == pairs[0].chosen.split()
    # nothing to say when every pair fits whole
    assert fit_pairs(pairs[:3], tokenizer, 64).describe() is None


def test_pm_train_transformers_max_length_says_what_it_cut_and_dropped(tmp_path):
    import gzip

    from click.testing import CliRunner

    from hhrlhf.cli import cli
    from hhrlhf.reward.tiny import save_tiny

    pairs = _mixed_pairs()
    for name, chosen in (("data", pairs), ("long", pairs[7:])):
        data = tmp_path / name / "helpful-base" / "train.jsonl.gz"
        data.parent.mkdir(parents=True)
        rows = "".join(
            json.dumps({"chosen": p.chosen, "rejected": p.rejected}) + "\n" for p in chosen
        )
        data.write_bytes(gzip.compress(rows.encode()))
    base = save_tiny(*_tiny_model_and_tokenizer(pairs), tmp_path / "tiny")
    args = ["pm", "train", "--backend", "transformers", "--base-model", str(base), "--data",
            str(tmp_path / "data"), "--max-steps", "1", "--json"]  # fmt: skip
    r = CliRunner().invoke(cli, [*args, "--out", str(tmp_path / "m24"), "--max-length", "24"])
    assert r.exit_code == 0, r.output
    assert "training on 8 pairs" in r.stderr  # what was read...
    assert (  # ...and what was trained on
        "--max-length 24 tokens: 4 pairs lost the beginning of the prompt; 1 pair dropped, a "
        "response alone too long (helpful-base/train/7); training on 7 of 8 pairs"
    ) in r.stderr
    meta = json.loads(r.stdout)
    assert meta["metrics"]["pairs"] == 7 and meta["hyperparameters"]["max_length"] == 24
    assert meta["metrics"]["truncation"]["dropped"] == ["helpful-base/train/7"]
    r = CliRunner().invoke(cli, [*args, "--out", str(tmp_path / "m64"), "--max-length", "64"])
    assert r.exit_code == 0, r.output
    assert "--max-length" not in r.stderr and json.loads(r.stdout)["metrics"]["pairs"] == 8
    # data no pair of which fits: one error line, no model
    args[args.index(str(tmp_path / "data"))] = str(tmp_path / "long")
    r = CliRunner().invoke(cli, [*args, "--out", str(tmp_path / "m"), "--max-length", "24"])
    assert r.exit_code == 1 and "error: no pair fits in --max-length 24 tokens" in r.stderr
    assert not (tmp_path / "m").exists()
