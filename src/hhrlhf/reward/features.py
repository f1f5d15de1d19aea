"""The featuriser: text features of a response *in the context of its prompt*.

A linear preference model scores ``r = x(prompt, response) . w``. Because it is trained on
feature differences between the two responses to the same prompt, features of the prompt
alone cancel out; what can carry signal is the response and how it relates to the prompt.
The groups (each one a block of columns, scaled by its weight in :class:`FeatureConfig`):

- ``word``: hashed word 1-2 grams of the response, log term frequency times IDF, L2-normalised;
- ``char``: hashed character n-grams inside word boundaries (robust to spelling and markup);
- ``edge``: the first words (by position) and last words of the response; refusals and
  compliance announce themselves at the start ("I'm sorry", "Sure, here's");
- ``pair`` (off by default): prompt x response interactions: (last human word, early response
  word) pairs and response words tagged with the dialogue depth, so a cue can mean different
  things after different requests. It did not improve cross-validated accuracy on the real
  harmless-base test file (bench/RESULTS-pm.md) and costs a fifth of the featurisation time;
- ``dense``: standardised scalars: lengths and length bins, question and newline rates,
  whether the model wrote speaker markers itself, word overlap with the last human turn and
  the whole prompt, and cosine similarity with the last human turn, the human turns and the
  earlier assistant turns of the same conversation (word n-grams; char n-grams too when
  ``context_chars`` > 0, off by default for speed, no accuracy change measured). In red-team data the conversation
  continued with the response the red-teamer judged *more harmful*, so resembling the earlier
  assistant turns is informative.

Hashing keeps the featuriser stateless apart from IDF weights and the dense means and
standard deviations, which :meth:`Featurizer.fit` learns from training responses only.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field

from ..errors import require

__all__ = ["FeatureConfig", "Featurizer", "DENSE_FEATURES", "split_prompt"]

_MARKER_RE = re.compile(r"\n\n(Human|Assistant):")
_WORD_RE = re.compile(r"[a-z0-9']+")
_EDGE_RE = re.compile(r"[a-z0-9']+|[?!.,]")
_LENGTH_BINS = (1, 20, 50, 100, 200, 400, 800)

#: Names of the dense columns, in order.
DENSE_FEATURES: tuple[str, ...] = (
    "log_chars",
    "log_words",
    "empty",
    "question_rate",
    "ends_with_question",
    "overlap_last_human",
    "overlap_prompt",
    "unique_word_ratio",
    "log_length_ratio_last_human",
    "writes_speaker_marker",
    "newline_rate",
    *(f"shorter_than_{b}" for b in _LENGTH_BINS),
    "word_cosine_last_human",
    "word_cosine_earlier_assistant",
    "word_cosine_human_turns",
    "char_cosine_last_human",
    "char_cosine_earlier_assistant",
)

HASHED_GROUPS = ("word", "char", "edge", "pair")


@dataclass(frozen=True)
class FeatureConfig:
    """Everything that defines the feature space (saved with a model)."""

    word_ngrams: tuple[int, int] = (1, 2)
    char_ngrams: tuple[int, int] = (3, 5)
    word_bits: int = 18
    char_bits: int = 18
    edge_bits: int = 16
    pair_bits: int = 18
    #: Characters of a response used for char n-grams (bounds the cost of long responses).
    char_max: int = 2000
    #: Word token regex (the default keeps one-letter words like "I" and contractions whole).
    word_pattern: str = r"(?u)\b\w\w+\b"
    #: Characters of the last human turn and of the end of the earlier assistant turns that
    #: the char n-gram cosine features compare with the response (0 switches them off).
    context_chars: int = 0
    #: Weight of each group's block; 0 drops the group.
    weights: dict = field(
        default_factory=lambda: {"word": 1.0, "char": 1.0, "edge": 1.0, "pair": 0.0, "dense": 2.5}
    )

    def to_dict(self) -> dict:
        d = asdict(self)
        d["word_ngrams"] = list(self.word_ngrams)
        d["char_ngrams"] = list(self.char_ngrams)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> FeatureConfig:
        d = dict(d)
        for k in ("word_ngrams", "char_ngrams"):
            if k in d:
                d[k] = tuple(d[k])
        known = set(cls.__dataclass_fields__)
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown feature settings: {', '.join(sorted(unknown))}")
        return cls(**d)


def split_prompt(prompt: str) -> tuple[str, str, str]:
    """(last human turn, earlier assistant turns joined, all human turns joined) of a prompt."""
    parts = _MARKER_RE.split(prompt)
    humans, assistants = [], []
    for i in range(1, len(parts) - 1, 2):
        (humans if parts[i] == "Human" else assistants).append(parts[i + 1])
    return (humans[-1] if humans else parts[0]), " ".join(assistants), " ".join(humans)


def _edge_doc(response: str) -> str:
    w = _EDGE_RE.findall(response.lower())
    toks = [f"b{i}_{x}" for i, x in enumerate(w[:4])]
    toks.append(f"bb_{w[0]}_{w[1]}" if len(w) > 1 else "bb_short")
    toks += [f"e_{x}" for x in w[-3:]]
    toks.append(f"nw{min(len(w) // 10, 20)}")
    return " ".join(toks)


def _pair_doc(response: str, last_human_words: set, depth: int) -> str:
    rw = _WORD_RE.findall(response.lower())
    early = set(rw[:12])
    toks = [f"{a}|{b}" for a in last_human_words for b in early]
    toks += [f"t{depth}|{b}" for b in set(rw)]
    return " ".join(toks)


class _Context:
    """What the features need from one prompt, computed once however many responses share it."""

    __slots__ = ("last", "earlier", "humans", "last_words", "prompt_words", "depth")

    def __init__(self, prompt: str):
        self.last, self.earlier, self.humans = split_prompt(prompt)
        self.last_words = set(_WORD_RE.findall(self.last.lower()))
        self.prompt_words = set(_WORD_RE.findall(prompt.lower()))
        self.depth = min(prompt.count("\n\nHuman:"), 4)


def _dense_row(response: str, ctx: _Context) -> list[float]:
    rw = _WORD_RE.findall(response.lower())
    nw = len(rw)
    lh, pw = ctx.last_words, ctx.prompt_words
    stripped = response.strip()
    n = len(stripped)
    return [
        math.log1p(n),
        math.log1p(nw),
        float(n == 0),
        10.0 * response.count("?") / (1 + nw),
        float(stripped.endswith("?")),
        sum(w in lh for w in rw) / max(nw, 1),
        sum(w in pw for w in rw) / max(nw, 1),
        len(set(rw)) / max(nw, 1),
        math.log1p(n) - math.log1p(len(ctx.last.strip())),
        float("\n\nHuman:" in response or "\n\nAssistant:" in response),
        10.0 * response.count("\n") / (1 + nw),
        *(float(n < b) for b in _LENGTH_BINS),
    ]


#: (featurizer, prompts, responses) shared with forked workers by :meth:`Featurizer._raw_parallel`.
_WORK = None


def _raw_chunk(bounds):
    featurizer, prompts, responses = _WORK
    i, j = bounds
    return featurizer._raw(prompts[i:j], responses[i:j])


class Featurizer:
    """Maps (prompt, response) pairs to a sparse feature matrix; holds the fitted statistics."""

    def __init__(self, config: FeatureConfig | None = None):
        self.config = config or FeatureConfig()
        self.idf: dict[str, object] = {}
        self.dense_mean = None
        self.dense_std = None

    # ---------------------------------------------------------------- vectorizers
    def _vectorizers(self):
        fe = require("sklearn.feature_extraction.text", "reward", "the preference model")
        H = fe.HashingVectorizer
        c = self.config
        common = dict(alternate_sign=False, norm=None, dtype=float)
        return {
            "word": H(
                ngram_range=tuple(c.word_ngrams),
                token_pattern=c.word_pattern,
                n_features=2**c.word_bits,
                **common,
            ),
            "char": H(
                analyzer="char_wb",
                ngram_range=tuple(c.char_ngrams),
                n_features=2**c.char_bits,
                **common,
            ),
            "edge": H(token_pattern=r"\S+", lowercase=False, n_features=2**c.edge_bits, **common),
            "pair": H(token_pattern=r"\S+", lowercase=False, n_features=2**c.pair_bits, **common),
            "unit_word": H(
                token_pattern=c.word_pattern,
                n_features=2**c.word_bits,
                alternate_sign=True,
                norm="l2",
            ),
            "unit_char": H(
                analyzer="char_wb",
                ngram_range=tuple(c.char_ngrams),
                n_features=2**c.char_bits,
                alternate_sign=False,
                norm="l2",
            ),
        }

    @property
    def active(self) -> list[str]:
        return [g for g in (*HASHED_GROUPS, "dense") if self.config.weights.get(g, 0) > 0]

    def _raw(self, prompts, responses) -> dict:
        """Unweighted raw blocks: term counts for hashed groups, the dense matrix."""
        import numpy as np
        from sklearn.preprocessing import normalize

        v = self._vectorizers()
        cut = self.config.char_max
        # Prompts repeat (both sides of a pair, candidates of one prompt): do their work once.
        first: dict[str, int] = {}
        row_of = np.array([first.setdefault(p, len(first)) for p in prompts], dtype=np.int64)
        contexts = [_Context(p) for p in first]
        ctx = [contexts[i] for i in row_of]
        out = {}
        active = self.active
        if "word" in active:
            out["word"] = v["word"].transform(responses)
        char_counts = None
        if "char" in active or "dense" in active:
            char_counts = v["char"].transform([r[:cut] for r in responses])
        if "char" in active:
            out["char"] = char_counts
        if "edge" in active:
            out["edge"] = v["edge"].transform([_edge_doc(r) for r in responses])
        if "pair" in active:
            out["pair"] = v["pair"].transform(
                [_pair_doc(r, c.last_words, c.depth) for r, c in zip(responses, ctx, strict=True)]
            )
        if "dense" in active:
            base = np.array(
                [_dense_row(r, c) for r, c in zip(responses, ctx, strict=True)], dtype=float
            ).reshape(len(responses), -1)
            uw, uc = v["unit_word"], v["unit_char"]
            rw, rc = uw.transform(responses), normalize(char_counts)

            def cos(a, b):
                return np.asarray(a.multiply(b[row_of]).sum(axis=1)).ravel()

            k = self.config.context_chars
            zero = np.zeros(len(responses))
            sims = np.column_stack(
                [
                    cos(rw, uw.transform([c.last for c in contexts])),
                    cos(rw, uw.transform([c.earlier for c in contexts])),
                    cos(rw, uw.transform([c.humans for c in contexts])),
                    cos(rc, uc.transform([c.last[:k] for c in contexts])) if k else zero,
                    cos(rc, uc.transform([c.earlier[-k:] for c in contexts])) if k else zero,
                ]
            ).reshape(len(responses), -1)
            out["dense"] = np.hstack([base, sims])
        return out

    def _raw_parallel(self, prompts, responses, n_jobs: int) -> dict:
        """:meth:`_raw` in ``n_jobs`` processes (forked where the platform allows, so the
        inputs are inherited rather than pickled); same result as one process."""
        n = len(responses)
        if n_jobs == 1 or n < 4000:
            return self._raw(prompts, responses)
        import multiprocessing

        import numpy as np
        import scipy.sparse as sp

        step = math.ceil(n / (n_jobs * 4))
        step += step % 2  # keep interleaved (chosen, rejected) rows of a pair in one chunk
        ranges = [(i, min(i + step, n)) for i in range(0, n, step)]
        if "fork" in multiprocessing.get_all_start_methods():
            global _WORK
            _WORK = (self, prompts, responses)
            try:
                with multiprocessing.get_context("fork").Pool(n_jobs) as pool:
                    chunks = pool.map(_raw_chunk, ranges, chunksize=1)
            finally:
                _WORK = None
        else:
            from joblib import Parallel, delayed

            chunks = Parallel(n_jobs=n_jobs)(
                delayed(self._raw)(prompts[i:j], responses[i:j]) for i, j in ranges
            )
        out = {}
        for k in chunks[0]:
            parts = [c[k] for c in chunks]
            out[k] = np.vstack(parts) if k == "dense" else sp.vstack(parts, format="csr")
        return out

    # ---------------------------------------------------------------- fit/transform
    def fit(self, prompts, responses, *, n_jobs: int = 1, raw: dict | None = None) -> Featurizer:
        """Learn IDF weights and dense standardisation from training (prompt, response) rows."""
        import numpy as np

        raw = raw if raw is not None else self._raw_parallel(list(prompts), list(responses), n_jobs)
        n = raw[next(iter(raw))].shape[0]
        for g in HASHED_GROUPS:
            if g in raw:
                df = np.bincount(raw[g].indices, minlength=raw[g].shape[1])
                self.idf[g] = np.log((1.0 + n) / (1.0 + df)) + 1.0
        if "dense" in raw:
            self.dense_mean = raw["dense"].mean(axis=0)
            self.dense_std = raw["dense"].std(axis=0) + 1e-9
        return self

    def transform(self, prompts, responses, *, n_jobs: int = 1, raw: dict | None = None):
        """The weighted feature matrix (scipy CSR), one row per (prompt, response)."""
        import numpy as np
        import scipy.sparse as sp
        from sklearn.preprocessing import normalize

        if not self.idf and self.dense_mean is None:
            raise RuntimeError("Featurizer.transform called before fit")
        raw = raw if raw is not None else self._raw_parallel(list(prompts), list(responses), n_jobs)
        w = self.config.weights
        blocks = []
        for g in HASHED_GROUPS:
            if g in raw:
                m = raw[g].tocsr(copy=True)
                m.data = np.log1p(m.data)
                m = normalize(m @ sp.diags(self.idf[g]))
                blocks.append(m * w[g])
        if "dense" in raw:
            z = (raw["dense"] - self.dense_mean) / self.dense_std
            blocks.append(sp.csr_matrix(z * (w["dense"] / math.sqrt(z.shape[1]))))
        return sp.hstack(blocks, format="csr")

    @property
    def n_features(self) -> int:
        c = self.config
        bits = {"word": c.word_bits, "char": c.char_bits, "edge": c.edge_bits, "pair": c.pair_bits}
        return sum(2 ** bits[g] for g in HASHED_GROUPS if g in self.active) + (
            len(DENSE_FEATURES) if "dense" in self.active else 0
        )

    # ---------------------------------------------------------------- persistence
    def state(self) -> dict:
        """Arrays to save (``np.savez``)."""
        out = {f"idf_{g}": v for g, v in self.idf.items()}
        if self.dense_mean is not None:
            out["dense_mean"] = self.dense_mean
            out["dense_std"] = self.dense_std
        return out

    @classmethod
    def from_state(cls, config: FeatureConfig, arrays) -> Featurizer:
        f = cls(config)
        for g in HASHED_GROUPS:
            if f"idf_{g}" in arrays:
                f.idf[g] = arrays[f"idf_{g}"]
        if "dense_mean" in arrays:
            f.dense_mean = arrays["dense_mean"]
            f.dense_std = arrays["dense_std"]
        return f
