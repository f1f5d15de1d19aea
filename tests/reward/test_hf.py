"""The transformers backend: a tiny randomly initialised model trained for a few steps on CPU.

Nothing is downloaded: the tokenizer is built here from a word-level vocabulary and the model
from a 2-layer GPT-2 config.
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
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2ForSequenceClassification, PreTrainedTokenizerFast

    words = sorted({w for p in pairs for w in (p.chosen + " " + p.rejected).split()})
    vocab = {"[PAD]": 0, "[UNK]": 1, "[EOS]": 2, **{w: i + 3 for i, w in enumerate(words)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]", eos_token="[EOS]"
    )
    config = GPT2Config(
        vocab_size=len(vocab),
        n_positions=64,
        n_embd=16,
        n_layer=2,
        n_head=2,
        num_labels=1,
        pad_token_id=0,
        bos_token_id=2,
        eos_token_id=2,
    )
    import torch

    torch.manual_seed(0)
    return GPT2ForSequenceClassification(config), tokenizer


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
