"""hhrlhf.reward.tiny: the tiny local model and tokenizer for smoke runs (nothing downloaded)."""

from __future__ import annotations

import importlib.util

import pytest

MISSING = [
    m for m in ("torch", "transformers", "tokenizers") if importlib.util.find_spec(m) is None
]

pytestmark = [
    pytest.mark.train,
    pytest.mark.skipif(
        bool(MISSING),
        reason=f"needs the [train] extra (missing: {', '.join(MISSING)}); "
        "pip install 'hhrlhf[train]'",
    ),
]

TEXTS = ["\n\nHuman: How do I water a fern?\n\nAssistant: Keep the soil damp."]


def test_the_tokenizer_knows_the_words_given_and_nothing_else():
    from hhrlhf.reward.tiny import tiny_tokenizer

    tok = tiny_tokenizer(TEXTS)
    words = tok.convert_ids_to_tokens(tok("Human: How do I water a cactus?")["input_ids"])
    assert words == ["Human:", "How", "do", "I", "water", "a", "[UNK]"]
    assert (tok.pad_token_id, tok.unk_token_id, tok.eos_token_id) == (0, 1, 2)
    assert tok("", add_special_tokens=True)["input_ids"] == []  # no BOS/EOS added


def test_the_default_chat_template_is_strict_and_another_can_be_given():
    import jinja2

    from hhrlhf.reward.tiny import tiny_tokenizer

    tok = tiny_tokenizer(TEXTS)
    good = [{"role": "user", "content": "How"}, {"role": "assistant", "content": "Keep"}]
    assert tok.apply_chat_template(good, tokenize=False) == "user How [EOS] assistant Keep [EOS] "
    with pytest.raises(jinja2.exceptions.TemplateError, match="must alternate"):
        tok.apply_chat_template([good[0], good[0]], tokenize=False)
    lax = tiny_tokenizer(
        TEXTS, chat_template="{% for m in messages %}{{ m['content'] }} {% endfor %}"
    )
    assert lax.apply_chat_template([good[0], good[0]], tokenize=False) == "How How "


def test_the_model_is_seeded_without_touching_the_global_seed_and_reloads(tmp_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification

    from hhrlhf.errors import UnknownNameError
    from hhrlhf.reward.tiny import save_tiny, tiny_model, tiny_model_and_tokenizer

    torch.manual_seed(123)
    state = torch.get_rng_state()
    model, tok = tiny_model_and_tokenizer(TEXTS)
    assert torch.equal(torch.get_rng_state(), state)
    ids = torch.tensor([tok("Keep the soil damp.")["input_ids"]])
    assert model(ids).logits.shape == (1, 1)
    again = tiny_model(tok)
    other = tiny_model(tok, seed=1)

    def same(a, b):
        return all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters(), strict=True))

    assert same(model, again) and not same(model, other)
    lm = tiny_model(tok, task="causal-lm", max_positions=32)
    assert lm(ids).logits.shape == (1, ids.shape[1], len(tok))
    with pytest.raises(UnknownNameError, match="unknown task 'rm'"):
        tiny_model(tok, task="rm")
    path = save_tiny(model, tok, tmp_path / "tiny")
    assert same(AutoModelForSequenceClassification.from_pretrained(path), model)
    save_tiny(lm, tok, tmp_path / "lm")
    assert type(AutoModelForCausalLM.from_pretrained(tmp_path / "lm")).__name__ == "GPT2LMHeadModel"
