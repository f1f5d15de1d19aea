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
