"""`hh export` output feeds TRL: DPOTrainer and RewardTrainer take two steps on CPU.

Nothing is downloaded: the tokenizer and models are :mod:`hhrlhf.reward.tiny`'s (a word-level
vocabulary, a strict chat template that raises unless roles alternate user/assistant, 2-layer
GPT-2s built from their configs). The data holds pairs shaped like the real non-alternating ones (two Assistant
turns in a row inside the prompt, two Human turns in a row); exported without
``--merge-consecutive`` they make the template raise inside TRL's preprocessing, with it they
train.
"""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from hhrlhf.cli import cli

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


def _t(*turns: tuple[str, str]) -> str:
    return "".join(f"\n\n{role}: {text}" for role, text in turns)


def _pairs() -> list[dict]:
    rows = []
    for i in range(6):
        prompt = _t(("Human", f"How do I water plant number {i}?"))
        rows.append((prompt, f"Water it weekly, plant {i}.", "No idea."))
    # two Assistant turns in a row inside the prompt (the shape of 4 real harmless-base pairs)
    rows.append(
        (
            _t(("Human", "Tell me a joke"), ("Assistant", "Why did the hen cross?"),
               ("Assistant", "To get to the other side."), ("Human", "Another one")),
            "Knock knock.", "No more jokes.",
        )
    )  # fmt: skip
    # two Human turns in a row
    rows.append(
        (
            _t(("Human", "Are you there?"), ("Human", "Hello?")),
            "Yes, I am here.", "Maybe.",
        )
    )  # fmt: skip
    return [
        {"chosen": f"{p}\n\nAssistant: {c}", "rejected": f"{p}\n\nAssistant: {r}"}
        for p, c, r in rows
    ]


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("trl")
    path = root / "helpful-base" / "train.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in _pairs()))
    return root


def _export(data: Path, out: Path, fmt: str, *extra: str) -> Path:
    r = CliRunner().invoke(
        cli, ["export", "--format", fmt, "--out", str(out), "--data", str(data), *extra]
    )
    assert r.exit_code == 0, r.output
    return out


def _tokenizer():
    from hhrlhf.reward.tiny import tiny_tokenizer

    return tiny_tokenizer(t for r in _pairs() for t in r.values())  # strict template


def _args(cls, tmp_path: Path):
    return cls(
        output_dir=str(tmp_path / "run"),
        max_steps=2,
        per_device_train_batch_size=4,
        learning_rate=1e-3,
        max_length=128,
        report_to=[],
        save_strategy="no",
        logging_steps=1,
        use_cpu=True,  # TRL on CPU needs it
        seed=0,
    )


def _dataset(path: Path):
    import datasets

    return datasets.load_dataset("json", data_files=str(path), split="train")


def _dpo(tmp_path: Path, train_file: Path):
    from trl import DPOConfig, DPOTrainer

    from hhrlhf.reward.tiny import tiny_model

    tokenizer = _tokenizer()
    model = tiny_model(tokenizer, task="causal-lm", max_positions=128)
    return DPOTrainer(
        model=model,
        ref_model=copy.deepcopy(model),  # a model built here has no path to load one from
        args=_args(DPOConfig, tmp_path),
        train_dataset=_dataset(train_file),
        processing_class=tokenizer,
    )


def test_strict_template_raises_on_the_non_alternating_rows(data, tmp_path):
    import jinja2

    out = _export(data, tmp_path / "conv.jsonl", "trl-conversational")
    with pytest.raises(jinja2.exceptions.TemplateError, match="must alternate"):
        _dpo(tmp_path, out)


def test_dpo_trainer_takes_two_steps_on_merged_trl_conversational(data, tmp_path):
    out = _export(data, tmp_path / "conv.jsonl", "trl-conversational", "--merge-consecutive")
    result = _dpo(tmp_path, out).train()
    assert result.global_step == 2


def test_dpo_trainer_takes_two_steps_on_dpo_format(data, tmp_path):
    out = _export(data, tmp_path / "dpo.jsonl", "dpo", "--no-source")
    result = _dpo(tmp_path, out).train()
    assert result.global_step == 2


@pytest.mark.parametrize(
    ("fmt", "extra"),
    [
        ("messages", "--merge-consecutive"),
        ("trl-conversational", "--merge-consecutive"),
        ("raw", "--no-source"),  # the implicit-prompt text the docs name for RewardTrainer
    ],
)
def test_reward_trainer_takes_two_steps(data, tmp_path, fmt, extra):
    from trl import RewardConfig, RewardTrainer

    from hhrlhf.reward.tiny import tiny_model

    out = _export(data, tmp_path / f"{fmt}.jsonl", fmt, extra)
    tokenizer = _tokenizer()
    model = tiny_model(tokenizer, task="reward", max_positions=128)
    trainer = RewardTrainer(
        model=model,
        args=_args(RewardConfig, tmp_path),
        train_dataset=_dataset(out),
        processing_class=tokenizer,
    )
    assert trainer.train().global_step == 2
