"""A tiny model and tokenizer built here, for smoke runs of TRL and the transformers backend
(``[train]`` extra).

Nothing is downloaded: the tokenizer is a word-level vocabulary of the texts given (words split
on whitespace; any other word is ``[UNK]``) and the model a randomly initialised 2-layer GPT-2
with 16-wide embeddings (about 16 parameters per word of the vocabulary, 20,000 more). It learns nothing worth
keeping; it shows in seconds on a CPU that data, trainer and settings fit together before a real
model spends hours on them::

    from hhrlhf.reward.tiny import tiny_model_and_tokenizer
    model, tokenizer = tiny_model_and_tokenizer([p.chosen + " " + p.rejected for p in pairs])

The tokenizer's chat template is strict by default (:data:`STRICT_CHAT_TEMPLATE`: it raises
unless roles alternate user, assistant, ...), as many real models' are, so a conversational
export that would fail on them fails here first. To save the pair for ``hh pm train --backend
transformers --base-model DIR``, call :func:`save_tiny`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import require

__all__ = [
    "STRICT_CHAT_TEMPLATE",
    "TASKS",
    "tiny_tokenizer",
    "tiny_model",
    "tiny_model_and_tokenizer",
    "save_tiny",
]

#: A chat template that raises unless the roles alternate user, assistant, user, ... (as strict
#: templates do); each message renders as ``role content [EOS]``.
STRICT_CHAT_TEMPLATE = (
    "{% for m in messages %}"
    "{% if (m['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant') }}"
    "{% endif %}"
    "{{ m['role'] + ' ' + m['content'] + ' [EOS] ' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ 'assistant ' }}{% endif %}"
)

#: ``task`` -> the GPT-2 class :func:`tiny_model` builds: a reward model (one logit, for
#: ``RewardTrainer`` and ``hh pm``) or a language model (for ``DPOTrainer`` and ``SFTTrainer``).
TASKS = {"reward": "GPT2ForSequenceClassification", "causal-lm": "GPT2LMHeadModel"}

_SPECIAL = ("[PAD]", "[UNK]", "[EOS]")
#: Words the chat template and HH transcripts add to any text.
_ALWAYS = ("user", "assistant", "Human:", "Assistant:")


def tiny_tokenizer(texts: Iterable[str] = (), *, chat_template: str | None = None) -> Any:
    """A ``PreTrainedTokenizerFast`` over the whitespace-separated words of ``texts`` (plus
    ``[PAD]`` 0, ``[UNK]`` 1, ``[EOS]`` 2 and the role words), with ``chat_template``
    (default :data:`STRICT_CHAT_TEMPLATE`)."""
    tokenizers = require("tokenizers", "train", "the tiny smoke-test tokenizer")
    transformers = require("transformers", "train", "the tiny smoke-test tokenizer")
    words = {w for text in texts for w in text.split()} | set(_ALWAYS)
    words -= set(_SPECIAL)
    vocab = {s: i for i, s in enumerate(_SPECIAL)}
    vocab.update({w: i + len(_SPECIAL) for i, w in enumerate(sorted(words))})
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]", eos_token="[EOS]"
    )
    tokenizer.chat_template = STRICT_CHAT_TEMPLATE if chat_template is None else chat_template
    return tokenizer


def tiny_model(
    tokenizer: Any, *, task: str = "reward", max_positions: int = 1024, seed: int = 0
) -> Any:
    """A randomly initialised 2-layer GPT-2 for ``tokenizer``'s vocabulary, the same for the
    same ``seed`` (the global torch seed is left as it was). ``task`` is a key of
    :data:`TASKS`; ``max_positions`` bounds the tokens per sequence (set the trainer's
    ``max_length`` no higher)."""
    if task not in TASKS:
        from ..errors import UnknownNameError

        raise UnknownNameError("task", task, list(TASKS))
    torch = require("torch", "train", "the tiny smoke-test model")
    transformers = require("transformers", "train", "the tiny smoke-test model")
    config = transformers.GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=max_positions,
        n_embd=16,
        n_layer=2,
        n_head=2,
        num_labels=1,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return getattr(transformers, TASKS[task])(config)


def tiny_model_and_tokenizer(
    texts: Iterable[str] = (),
    *,
    task: str = "reward",
    chat_template: str | None = None,
    max_positions: int = 1024,
    seed: int = 0,
) -> tuple[Any, Any]:
    """``(model, tokenizer)``: :func:`tiny_model` over :func:`tiny_tokenizer` of ``texts``."""
    tokenizer = tiny_tokenizer(texts, chat_template=chat_template)
    model = tiny_model(tokenizer, task=task, max_positions=max_positions, seed=seed)
    return model, tokenizer


def save_tiny(model: Any, tokenizer: Any, path: str | os.PathLike[str]) -> Path:
    """Write ``model`` and ``tokenizer`` to directory ``path`` (``save_pretrained``), which
    ``from_pretrained`` and ``hh pm train --base-model`` then load; returns the path."""
    path = Path(path)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
