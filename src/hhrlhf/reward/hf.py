"""The transformers backend (``[train]`` extra): TRL's ``RewardTrainer`` and HF reward scoring.

Training hands a Hugging Face sequence-classification model (``num_labels=1``) and the pairs to
``trl.RewardTrainer``, which minimises the same Bradley-Terry loss as the linear model. There
is no hand-written loop. Each side (prompt + response + EOS) is tokenized here and fitted into
``max_length`` tokens the way scoring fits it (:mod:`.truncate`: the prompt loses its
beginning, never the response), so TRL, which drops a pair longer than its ``max_length``,
drops none; a pair whose response alone is too long is dropped here and counted. The device is
whatever ``transformers`` finds (CUDA, MPS or CPU). The saved directory is the usual hhrlhf
model directory, with the HF model and tokenizer in ``hf/`` and ``backend: "transformers"`` in
``model.json``.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path

from ..errors import HHError, require
from .saved import describe_training_data, write_model_json
from .truncate import eos_ids, fit_ids, fit_pairs, special_ids

__all__ = ["HFRewardModel", "train_hf", "device_name"]


def _torch():
    return require("torch", "train", "the transformers backend")


def device_name() -> str:
    """The device training and scoring use: ``cuda``, ``mps`` or ``cpu``."""
    torch = _torch()
    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


class HFRewardModel:
    """A Hugging Face sequence-classification model used as a reward model (score = logit 0).

    Implements :class:`hhrlhf.reward.backends.RewardModel`.
    """

    backend = "transformers"

    def __init__(
        self,
        name_or_path,
        *,
        model=None,
        tokenizer=None,
        meta=None,
        max_length: int = 512,
        batch_size: int = 16,
        add_eos: bool | None = None,
    ):
        transformers = require("transformers", "train", "Hugging Face reward models")
        torch = _torch()
        self.name = str(name_or_path)
        self.meta = meta or {}
        self.device = device_name()
        self.tokenizer = tokenizer or transformers.AutoTokenizer.from_pretrained(self.name)
        # float32 for scoring: the checkpoint may be stored in bf16 by the trainer
        self.model = model or transformers.AutoModelForSequenceClassification.from_pretrained(
            self.name, dtype=torch.float32
        )
        # Models trained here saw TRL's appended EOS; score them the same way. A model saved
        # here after loading it from elsewhere records its own choice (``add_eos``).
        if add_eos is None:
            add_eos = self.meta.get("add_eos", self.meta.get("backend") == "transformers")
        self.add_eos = bool(add_eos)
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        if self.model.config.pad_token_id is None:
            self.model.config.pad_token_id = self.tokenizer.pad_token_id
        self.model.to(self.device).eval()
        self.max_length = max_length
        self.batch_size = batch_size
        #: What the last scoring cut: ``{"texts", "prompt_cut", "response_cut", "max_length"}``.
        self.truncation: dict = {}
        self._flags: list[tuple[bool, bool]] = []
        self._special_ids: tuple[list[int], list[int]] | None = None
        #: What the last :meth:`score_pairs` cut: ``{"pairs", "truncated", "response_cut",
        #: "max_length"}`` (a pair counts once when either side was cut).
        self.pair_truncation: dict = {}

    def score_texts(self, texts) -> list[float]:
        torch = _torch()
        out: list[float] = []
        texts = list(texts)
        eos = self.tokenizer.eos_token
        if self.add_eos and eos:
            texts = [t if t.endswith(eos) else t + eos for t in texts]
        with torch.no_grad():
            for i in range(0, len(texts), self.batch_size):
                enc = self.tokenizer(
                    texts[i : i + self.batch_size],
                    return_tensors="pt",
                    padding=True,
                    truncation=True,
                    max_length=self.max_length,
                ).to(self.device)
                logits = self.model(**enc).logits
                out += logits[:, 0].float().cpu().tolist()
        return out

    def _fit(self, prompt_ids: list[int], response_ids: list[int]) -> tuple[list[int], bool, bool]:
        """:func:`fit_ids` within :attr:`max_length`, with this model's special tokens and EOS."""
        head, tail = self._specials()
        eos = eos_ids(self.tokenizer, self.add_eos)
        return fit_ids(prompt_ids, response_ids, self.max_length, head=head, tail=tail, eos=eos)

    def _specials(self) -> tuple[list[int], list[int]]:
        if self._special_ids is None:
            self._special_ids = special_ids(self.tokenizer)
        return self._special_ids

    def score_prompted(self, prompts, responses) -> list[float]:
        """Scores of each response after its prompt, truncated as :meth:`_fit` says; the counts
        of cut texts are in :attr:`truncation`."""
        torch = _torch()
        tok = self.tokenizer
        prompts, responses = list(prompts), list(responses)
        p_ids = tok(prompts, add_special_tokens=False)["input_ids"] if prompts else []
        r_ids = tok(responses, add_special_tokens=False)["input_ids"] if responses else []
        fitted = [self._fit(p, r) for p, r in zip(p_ids, r_ids, strict=True)]
        self._flags = [(pc, rc) for _, pc, rc in fitted]
        self.truncation = {
            "texts": len(fitted),
            "prompt_cut": sum(1 for _, pc, _ in fitted if pc),
            "response_cut": sum(1 for _, _, rc in fitted if rc),
            "max_length": self.max_length,
        }
        out: list[float] = []
        with torch.no_grad():
            for i in range(0, len(fitted), self.batch_size):
                batch = [{"input_ids": ids} for ids, _, _ in fitted[i : i + self.batch_size]]
                enc = tok.pad(batch, return_tensors="pt").to(self.device)
                logits = self.model(**enc).logits
                out += logits[:, 0].float().cpu().tolist()
        return out

    def score(self, prompts, responses, *, n_jobs: int = 1):
        """Scores of each response after its prompt, as a numpy array. A text longer than
        :attr:`max_length` tokens loses the beginning of its prompt, never its response
        (unless the response alone is too long); see :attr:`truncation`.

        ``n_jobs`` is accepted for the :class:`~hhrlhf.reward.backends.RewardModel` contract;
        the work is batched on :attr:`device` instead (one process)."""
        np = require("numpy", "reward", "scoring")
        return np.array(self.score_prompted(prompts, responses))

    def score_pairs(self, pairs, *, n_jobs: int = 1):
        """(chosen scores, rejected scores) for a list of :class:`~hhrlhf.PreferencePair`
        (``n_jobs`` as in :meth:`score`). :attr:`pair_truncation` counts the pairs cut."""
        pairs = list(pairs)
        n = len(pairs)
        np = require("numpy", "reward", "scoring")
        prompts = [p.prompt for p in pairs] * 2
        responses = [p.chosen_response for p in pairs] + [p.rejected_response for p in pairs]
        s = np.array(self.score_prompted(prompts, responses))
        flags = self._flags
        self.pair_truncation = {
            "pairs": n,
            "truncated": sum(1 for i in range(n) if any(flags[i]) or any(flags[n + i])),
            "response_cut": sum(1 for i in range(n) if flags[i][1] or flags[n + i][1]),
            "max_length": self.max_length,
        }
        return s[:n], s[n:]

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike) -> Path:
        """Write the model directory: the HF model and tokenizer in ``hf/``, and model.json."""
        path = Path(path)
        (path / "hf").mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(path / "hf")
        self.tokenizer.save_pretrained(path / "hf")
        write_model_json(path, self.backend, {**self.meta, "add_eos": self.add_eos})
        return path

    @classmethod
    def load(cls, path: str | os.PathLike, meta: dict) -> HFRewardModel:
        """The model in directory ``path``, whose checked ``model.json`` is ``meta``."""
        return cls(Path(path) / "hf", meta=meta)


def train_hf(
    model,
    pairs,
    out,
    *,
    tokenizer=None,
    epochs: float = 1.0,
    max_steps: int = -1,
    batch_size: int = 8,
    learning_rate: float = 1e-5,
    max_length: int = 512,
    seed: int = 0,
    training_data: dict | None = None,
    progress=None,
) -> HFRewardModel:
    """Fine-tune ``model`` (a model id/path or a ``PreTrainedModel``) with ``trl.RewardTrainer``.

    Each side of a pair is tokenized here and fitted into ``max_length`` tokens as
    ``hh pm eval`` scores it (:func:`~.truncate.fit_pairs`: a long prompt loses its beginning,
    a pair with a response that alone is too long is dropped), and TRL gets the token ids, so
    it drops nothing itself. When a pair was cut or dropped, ``progress`` (a callable taking
    one line) is told how many, and the pairs trained on; ``model.json`` keeps the counts
    (``metrics.truncation``). Writes the hhrlhf model directory ``out`` and returns the
    trained :class:`HFRewardModel`.
    """
    transformers = require("transformers", "train", "the transformers backend")
    trl = require("trl", "train", "the transformers backend")
    datasets = require("datasets", "train", "the transformers backend")

    pairs = list(pairs)
    out = Path(out)
    model, tokenizer, name = _model_and_tokenizer(transformers, model, tokenizer)
    fitted = _fit(pairs, tokenizer, max_length, progress)
    train = datasets.Dataset.from_dict(
        {"chosen_ids": fitted.chosen_ids, "rejected_ids": fitted.rejected_ids}
    )
    hyperparameters = {
        "epochs": epochs,
        "max_steps": max_steps,
        "batch_size": batch_size,
        "learning_rate": learning_rate,
        "max_length": max_length,
        "seed": seed,
    }
    args = _reward_config(trl, out, hyperparameters)
    t0 = time.perf_counter()
    trainer = trl.RewardTrainer(
        model=model, args=args, train_dataset=train, processing_class=tokenizer
    )
    # the trainer prints its log dict: to stderr, so that stdout stays `hh pm train --json`'s
    with contextlib.redirect_stdout(sys.stderr):
        result = trainer.train()
    seconds = time.perf_counter() - t0
    (out / "hf").mkdir(parents=True, exist_ok=True)
    trainer.model.save_pretrained(out / "hf")
    tokenizer.save_pretrained(out / "hf")
    record = {
        "base_model": str(name),
        "hyperparameters": {**hyperparameters, "trainer": "trl.RewardTrainer"},
        "training_data": training_data or describe_training_data(pairs),
        "metrics": {
            "pairs": len(fitted.pairs),
            "truncation": fitted.summary(),
            "train_loss": float(result.training_loss),
            "steps": int(result.global_step),
            "device": device_name(),
            "train_seconds": round(seconds, 3),
        },
    }
    meta = write_model_json(out, HFRewardModel.backend, record)
    # Reload from disk: the trained module may still carry the trainer's mixed-precision hooks.
    return HFRewardModel(out / "hf", meta=meta, max_length=max_length)


def _model_and_tokenizer(transformers, model, tokenizer):
    """``(model, tokenizer, name)``: a model id or path loaded (as a one-label sequence
    classifier, with its tokenizer unless one is given), a pad token set where it has none."""
    name = (
        model
        if isinstance(model, (str, os.PathLike))
        else getattr(model.config, "_name_or_path", "model")
    )
    if isinstance(model, (str, os.PathLike)):
        tokenizer = tokenizer or transformers.AutoTokenizer.from_pretrained(str(model))
        model = transformers.AutoModelForSequenceClassification.from_pretrained(
            str(model), num_labels=1
        )
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer, name


def _fit(pairs, tokenizer, max_length: int, progress):
    """The pairs fitted into ``max_length`` tokens (:func:`~.truncate.fit_pairs`, with the
    EOS TRL would append); ``progress`` told what was cut; an error when nothing fits."""
    fitted = fit_pairs(pairs, tokenizer, max_length)
    line = fitted.describe()
    if line and progress:
        progress(line)
    if not fitted.pairs:
        raise HHError(
            f"no pair fits in --max-length {max_length} tokens: every one has a response "
            "longer than that; raise --max-length"
        )
    return fitted


def _reward_config(trl, out: Path, h: dict):
    """TRL's ``RewardConfig`` for the hyperparameters ``h``: no checkpoints kept, no report."""
    return trl.RewardConfig(
        output_dir=str(out / "checkpoints"),
        num_train_epochs=h["epochs"],
        max_steps=h["max_steps"],
        per_device_train_batch_size=h["batch_size"],
        learning_rate=h["learning_rate"],
        max_length=h["max_length"],
        seed=h["seed"],
        report_to=[],
        save_strategy="no",
        logging_steps=10,
        use_cpu=device_name() == "cpu",
    )
