"""How many real pairs each TRL truncation setting keeps: the counts in docs/train-with-trl.md.

Run (from the repository root; needs the [train] extra and the real file)::

    HH_RLHF_REAL=../shared/data/hh-rlhf python bench/trl_lengths.py [--tokenizer DIR] [--max-length 512]

``--tokenizer DIR`` is a tokenizer saved with ``save_pretrained`` (the figures in the doc used
GPT-2's byte-level BPE vocabulary); without it, :mod:`hhrlhf.reward.tiny`'s word-level
tokenizer over the file's own words counts (a word is a token: fewer tokens than any BPE).

Nothing is trained: each TRL trainer is built on the file's pairs, exported as ``hh export``
writes them, with a tiny model (:mod:`hhrlhf.reward.tiny`) and the tokenizer, and the length of
its ``train_dataset`` after TRL's own preprocessing is the count it would train on. Only counts
are printed; no text from the file.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import tempfile
import warnings
from pathlib import Path

from hhrlhf import read_pairs
from hhrlhf.convert import export_records
from hhrlhf.reward.holdout import split_holdout
from hhrlhf.reward.tiny import tiny_model, tiny_tokenizer
from hhrlhf.reward.truncate import fit_pairs


def _tokenizer(path: str | None, pairs):
    if path is None:
        return tiny_tokenizer(t for p in pairs for t in (p.chosen, p.rejected)), "tiny word-level"
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok, path


def _dataset(pairs, fmt: str, folder: Path):
    import datasets

    out = folder / f"{fmt}.jsonl"
    export_records(pairs, fmt, out, source=False)
    return datasets.load_dataset("json", data_files=str(out), split="train")


def _reward_kept(model, tokenizer, train, max_length, folder) -> int:
    from trl import RewardConfig, RewardTrainer

    args = RewardConfig(
        output_dir=str(folder / "r"), max_length=max_length, use_cpu=True, report_to=[]
    )
    trainer = RewardTrainer(model=model, args=args, train_dataset=train, processing_class=tokenizer)
    return len(trainer.train_dataset)


def _dpo_kept(model, tokenizer, train, folder, **settings) -> tuple[int, int]:
    from trl import DPOConfig, DPOTrainer

    args = DPOConfig(output_dir=str(folder / "d"), use_cpu=True, report_to=[], **settings)
    trainer = DPOTrainer(
        model=model,
        ref_model=copy.deepcopy(model),
        args=args,
        train_dataset=train,
        processing_class=tokenizer,
    )
    kept = trainer.train_dataset
    limit = settings.get("max_length", 1024)
    cut = 0
    if (
        limit is not None
    ):  # kept pairs a side of which is longer than max_length: cut by the collator
        cut = sum(
            len(e["prompt_ids"]) + max(len(e["chosen_ids"]), len(e["rejected_ids"])) > limit
            for e in kept
        )
    return len(kept), cut


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokenizer", default=None, help="a saved tokenizer directory")
    ap.add_argument("--max-length", type=int, default=512)
    a = ap.parse_args()
    root = os.environ.get("HH_RLHF_REAL")
    if not root:
        sys.exit("set HH_RLHF_REAL to the folder holding harmless-base/test.jsonl.gz")
    pairs = list(read_pairs(Path(root) / "harmless-base" / "test.jsonl.gz"))
    tokenizer, name = _tokenizer(a.tokenizer, pairs)
    L = a.max_length
    warnings.filterwarnings("ignore")
    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        reward = tiny_model(tokenizer, task="reward")
        lm = tiny_model(tokenizer, task="causal-lm")
        n = len(pairs)
        raw, dpo = _dataset(pairs, "raw", folder), _dataset(pairs, "dpo", folder)
        rows.append(
            (f"RewardTrainer, raw (whole transcripts), max_length={L}",
             f"{_reward_kept(reward, tokenizer, raw, L, folder):,} of {n:,}")
        )  # fmt: skip
        for label, subset in (
            ("all pairs", pairs),
            ("--holdout 0.2's", split_holdout(pairs, 0.2)[0]),
        ):
            fitted = fit_pairs(subset, tokenizer, L)
            rows.append(
                (f"hh pm train --max-length {L} ({label}): kept / prompt cut / dropped",
                 f"{len(fitted.pairs):,} of {len(subset):,} / {fitted.cut:,} / {len(fitted.dropped):,}")
            )  # fmt: skip
        import datasets

        fitted = fit_pairs(pairs, tokenizer, L)
        ids = datasets.Dataset.from_dict(
            {"chosen_ids": fitted.chosen_ids, "rejected_ids": fitted.rejected_ids}
        )
        rows.append(
            (f"RewardTrainer on hh pm train's fitted ids, max_length={L}",
             f"{_reward_kept(reward, tokenizer, ids, L, folder):,} of {len(fitted.pairs):,}")
        )  # fmt: skip
        for label, settings in (
            (f"max_length={L} (truncation_mode keep_start, the default)", {"max_length": L}),
            (f"max_length={L}, truncation_mode='keep_end'", {"max_length": L, "truncation_mode": "keep_end"}),
            ("max_length=1024 (the default)", {}),
            ("max_length=None", {"max_length": None}),
        ):  # fmt: skip
            kept, cut = _dpo_kept(lm, tokenizer, dpo, folder, **settings)
            rows.append(
                (f"DPOTrainer, dpo, {label}: kept (of them cut)", f"{kept:,} of {n:,} ({cut:,})")
            )
    longest = max(
        len(tokenizer(t, add_special_tokens=False)["input_ids"])
        for p in pairs
        for t in (p.chosen, p.rejected)
    )
    print(f"tokenizer: {name}; longest transcript {longest:,} tokens")
    width = max(len(r[0]) for r in rows)
    for label, value in rows:
        print(f"{label:<{width}}  {value}")


if __name__ == "__main__":
    main()
