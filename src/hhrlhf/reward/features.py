"""The featuriser: text features of a response *in the context of its prompt*.

A linear preference model scores ``r = x(prompt, response) . w``. Because it is trained on
feature differences between the two responses to the same prompt, features of the prompt
alone cancel out; what can carry signal is the response and how it relates to the prompt.
The groups (each one a block of columns, scaled by its weight in :class:`FeatureConfig`):

- ``word``: hashed word 1-2 grams of the response, log term frequency times IDF, L2-normalised;
- ``char``: hashed character n-grams inside word boundaries (robust to spelling and markup);
- ``edge`` (off by default): the first words (by position) and last words of the response;
  refusals and compliance announce themselves at the start ("I'm sorry", "Sure, here's").
  The ``lex`` group's opening columns carry that cue pooled, and with them in the model,
  dropping ``edge`` gained cross-validated accuracy on the real file (bench/RESULTS-pm.md);
- ``pair`` (off by default): prompt x response interactions: (last human word, early response
  word) pairs and response words tagged with the dialogue depth, so a cue can mean different
  things after different requests. It did not improve cross-validated accuracy on the real
  harmless-base test file (bench/RESULTS-pm.md) and costs a fifth of the featurisation time;
- ``lex``: standardised counts of hand-written phrase categories (:mod:`.lexicon`: refusing,
  hedging, asking back, redirecting to someone qualified, moralising, complying, harmful-topic
  words echoed from the human turns or new, ...). About 2,000 pairs cannot estimate a weight
  per word; a pooled category gets one well-estimated weight. Together with the ending and
  sentence columns of ``dense`` and ``edge`` off, it took cross-validated accuracy on the real
  harmless-base test file from 63.6% to 67.0% (bench/RESULTS-pm.md);
- ``dense``: standardised scalars: lengths and length bins, question and newline rates, how
  the response ends (a period, an exclamation mark, no punctuation at all), sentence and list
  counts, whether the model wrote speaker markers itself, word overlap with the last human
  turn and the whole prompt, and cosine similarity with the last human turn, the human turns
  and the earlier assistant turns of the same conversation (word n-grams; char n-grams too
  when ``context_chars`` > 0, off by default for speed, no accuracy change measured). In
  red-team data the conversation continued with the response the red-teamer judged *more
  harmful*, so resembling the earlier assistant turns is informative.

Hashing keeps the featuriser stateless apart from IDF weights and the means and standard
deviations of the ``dense`` and ``lex`` columns, which :meth:`Featurizer.fit` learns from
training responses only.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field

from ..errors import require
from ..transcript import MARKER_RE
from .lexicon import LEXICON_FEATURES, harm_words, lexicon_row

__all__ = [
    "FeatureConfig",
    "Featurizer",
    "WORD_TOKENIZERS",
    "CONFIG_BOUNDS",
    "DENSE_FEATURES",
    "LEXICON_FEATURES",
    "split_prompt",
]

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
    "ends_with_period",
    "ends_with_exclamation",
    "ends_without_punctuation",
    "log_sentences",
    "log_list_markers",
    "word_cosine_last_human",
    "word_cosine_earlier_assistant",
    "word_cosine_human_turns",
    "char_cosine_last_human",
    "char_cosine_earlier_assistant",
)

HASHED_GROUPS = ("word", "char", "edge", "pair")
#: Groups of real-valued columns, standardised with training means and deviations.
DENSE_GROUPS = {"lex": LEXICON_FEATURES, "dense": DENSE_FEATURES}


#: Named word tokenizers: a saved model names one, and never carries a regular expression of
#: its own (a model directory is data; a user-supplied pattern such as ``(a+)+$`` could take
#: exponential time). ``word2`` is scikit-learn's default token pattern: runs of two or more
#: word characters, so one-letter words ("I", "a") are dropped and a contraction splits at its
#: apostrophe ("don't" gives "don"; the "t" is dropped). ``word1`` keeps one-letter words.
WORD_TOKENIZERS: dict[str, str] = {
    "word2": r"(?u)\b\w\w+\b",
    "word1": r"(?u)\b\w+\b",
}

#: Bounds on every number a saved ``model.json`` may hold, so that a hostile file cannot ask
#: for gigabytes: hashed groups of at most 2**22 columns, short n-grams, bounded text windows.
CONFIG_BOUNDS: dict[str, tuple[int, int]] = {
    "word_ngrams": (1, 4),
    "char_ngrams": (1, 8),
    "word_bits": (4, 22),
    "char_bits": (4, 22),
    "edge_bits": (4, 22),
    "pair_bits": (4, 22),
    "char_max": (1, 1_000_000),
    "context_chars": (0, 1_000_000),
}
#: The largest weight a group's block may have.
MAX_GROUP_WEIGHT = 1e6


def _check_int(name: str, value) -> None:
    lo, hi = CONFIG_BOUNDS[name.removesuffix("[0]").removesuffix("[1]")]
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer, not {value!r}")
    if not lo <= value <= hi:
        raise ValueError(f"{name} = {value} is out of range ({lo}..{hi})")


@dataclass(frozen=True)
class FeatureConfig:
    """Everything that defines the feature space (saved with a model).

    Every value is checked on construction (:data:`CONFIG_BOUNDS`, :data:`WORD_TOKENIZERS`):
    a ``ValueError`` names the setting and the allowed values.
    """

    word_ngrams: tuple[int, int] = (1, 2)
    char_ngrams: tuple[int, int] = (3, 5)
    word_bits: int = 18
    char_bits: int = 18
    edge_bits: int = 16
    pair_bits: int = 18
    #: Characters of a response used for char n-grams (bounds the cost of long responses).
    char_max: int = 2000
    #: Name of the word tokenizer in :data:`WORD_TOKENIZERS` (default ``word2``: words of two
    #: or more word characters, so "I" is dropped and "don't" splits into "don" and "t", of
    #: which only "don" is kept).
    word_tokenizer: str = "word2"
    #: Characters of the last human turn and of the end of the earlier assistant turns that
    #: the char n-gram cosine features compare with the response (0 switches them off).
    context_chars: int = 0
    #: Weight of each group's block; 0 drops the group.
    weights: dict = field(
        default_factory=lambda: {
            "word": 1.0,
            "char": 1.0,
            "edge": 0.0,
            "pair": 0.0,
            "lex": 0.5,
            "dense": 2.5,
        }
    )

    def __post_init__(self):
        for name in ("word_ngrams", "char_ngrams"):
            value = getattr(self, name)
            if not isinstance(value, (tuple, list)) or len(value) != 2:
                raise ValueError(f"{name} must be two integers [low, high], not {value!r}")
            _check_int(f"{name}[0]", value[0])
            _check_int(f"{name}[1]", value[1])
            if value[0] > value[1]:
                raise ValueError(f"{name} = {list(value)}: low is above high")
        for name in ("word_bits", "char_bits", "edge_bits", "pair_bits", "char_max"):
            _check_int(name, getattr(self, name))
        _check_int("context_chars", self.context_chars)
        if not isinstance(self.word_tokenizer, str) or self.word_tokenizer not in WORD_TOKENIZERS:
            raise ValueError(
                f"unknown word tokenizer {self.word_tokenizer!r}; known: "
                + ", ".join(WORD_TOKENIZERS)
            )
        groups = (*HASHED_GROUPS, *DENSE_GROUPS)
        if not isinstance(self.weights, dict):
            raise ValueError(f"weights must be an object, not {self.weights!r}")
        for g, w in self.weights.items():
            if g not in groups:
                raise ValueError(f"weights: unknown group {g!r}; known: {', '.join(groups)}")
            if isinstance(w, bool) or not isinstance(w, (int, float)):
                raise ValueError(f"weights[{g!r}] must be a number, not {w!r}")
            if not 0 <= w <= MAX_GROUP_WEIGHT:  # also false for NaN
                raise ValueError(
                    f"weights[{g!r}] = {w!r} is out of range (0..{MAX_GROUP_WEIGHT:g})"
                )

    @property
    def word_pattern(self) -> str:
        """The regular expression of :attr:`word_tokenizer` (from the registry, never from a file)."""
        return WORD_TOKENIZERS[self.word_tokenizer]

    def to_dict(self) -> dict:
        d = asdict(self)
        d["word_ngrams"] = list(self.word_ngrams)
        d["char_ngrams"] = list(self.char_ngrams)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> FeatureConfig:
        """Settings read from a ``model.json``: checked, never compiled or executed.

        Older model files hold ``word_pattern``, the regular expression itself; the patterns of
        :data:`WORD_TOKENIZERS` map to their names, and any other pattern is refused.
        """
        if not isinstance(d, dict):
            raise ValueError(f"feature settings must be an object, not {type(d).__name__}")
        d = dict(d)
        if "word_pattern" in d:
            pattern = d.pop("word_pattern")
            names = {v: k for k, v in WORD_TOKENIZERS.items()}
            if pattern not in names:
                raise ValueError(
                    f"word_pattern {str(pattern)[:80]!r} is not one of the named tokenizers "
                    f"({', '.join(WORD_TOKENIZERS)}); a model file cannot carry its own regular "
                    "expression"
                )
            d.setdefault("word_tokenizer", names[pattern])
        for k in ("word_ngrams", "char_ngrams"):
            if k in d and isinstance(d[k], list):
                d[k] = tuple(d[k])
        known = set(cls.__dataclass_fields__)
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown feature settings: {', '.join(sorted(unknown))}")
        return cls(**d)


def split_prompt(prompt: str) -> tuple[str, str, str]:
    """(last human turn, earlier assistant turns joined, all human turns joined) of a prompt."""
    parts = MARKER_RE.split(prompt)
    humans: list[str] = []
    assistants: list[str] = []
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
        float(stripped.endswith(".")),
        float(stripped.endswith("!")),
        float(n > 0 and stripped[-1].isalnum()),
        math.log1p(stripped.count(". ") + stripped.count("? ") + stripped.count("! ")),
        math.log1p(stripped.count("\n- ") + stripped.count("\n1")),
    ]


#: (featurizer, prompts, responses) shared with forked workers by :meth:`Featurizer.raw_features`.
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
        #: Training means and standard deviations of each of :data:`DENSE_GROUPS`.
        self.mean: dict[str, object] = {}
        self.std: dict[str, object] = {}

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
        return [g for g in (*HASHED_GROUPS, *DENSE_GROUPS) if self.config.weights.get(g, 0) > 0]

    def _raw(self, prompts, responses) -> dict:
        """Unweighted raw blocks: term counts for hashed groups, matrices for dense groups."""
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
        if "lex" in active:
            harm = [harm_words(c.humans) for c in contexts]
            out["lex"] = np.array(
                [lexicon_row(r, harm[i]) for r, i in zip(responses, row_of.tolist(), strict=True)],
                dtype=float,
            ).reshape(len(responses), -1)
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

    def raw_features(self, prompts, responses, *, n_jobs: int = 1) -> dict:
        """The unweighted raw blocks (term counts, dense matrices) that :meth:`fit` and
        :meth:`transform` take as ``raw=``, computed once for both. Large inputs are done in
        chunks in ``n_jobs`` processes (forked where the platform allows, so the inputs are
        inherited rather than pickled); same result as one process."""
        from ..progress import progress

        n = len(responses)
        if n < 4000:
            return self._raw(prompts, responses)
        import multiprocessing

        import numpy as np
        import scipy.sparse as sp

        step = math.ceil(n / (max(n_jobs, 5) * 4))
        step += step % 2  # keep interleaved (chosen, rejected) rows of a pair in one chunk
        ranges = [(i, min(i + step, n)) for i in range(0, n, step)]
        chunks = []
        with progress(total=n, desc="featurising", unit="responses") as bar:
            if n_jobs == 1:
                for i, j in ranges:
                    chunks.append(self._raw(prompts[i:j], responses[i:j]))
                    bar.update(j - i)
            elif "fork" in multiprocessing.get_all_start_methods():
                global _WORK
                _WORK = (self, prompts, responses)
                try:
                    with multiprocessing.get_context("fork").Pool(n_jobs) as pool:
                        for (i, j), chunk in zip(
                            ranges, pool.imap(_raw_chunk, ranges, chunksize=1), strict=True
                        ):
                            chunks.append(chunk)
                            bar.update(j - i)
                finally:
                    _WORK = None
            else:
                from joblib import Parallel, delayed

                chunks = Parallel(n_jobs=n_jobs)(
                    delayed(self._raw)(prompts[i:j], responses[i:j]) for i, j in ranges
                )
                bar.update(n)
        out = {}
        for k in chunks[0]:
            parts = [c[k] for c in chunks]
            out[k] = np.vstack(parts) if k in DENSE_GROUPS else sp.vstack(parts, format="csr")
        return out

    # ---------------------------------------------------------------- fit/transform
    def fit(self, prompts, responses, *, n_jobs: int = 1, raw: dict | None = None) -> Featurizer:
        """Learn IDF weights and dense standardisation from training (prompt, response) rows."""
        import numpy as np

        raw = (
            raw
            if raw is not None
            else self.raw_features(list(prompts), list(responses), n_jobs=n_jobs)
        )
        n = raw[next(iter(raw))].shape[0]
        for g in HASHED_GROUPS:
            if g in raw:
                df = np.bincount(raw[g].indices, minlength=raw[g].shape[1])
                self.idf[g] = np.log((1.0 + n) / (1.0 + df)) + 1.0
        for g in DENSE_GROUPS:
            if g in raw:
                self.mean[g] = raw[g].mean(axis=0)
                self.std[g] = raw[g].std(axis=0) + 1e-9
        return self

    def transform(self, prompts, responses, *, n_jobs: int = 1, raw: dict | None = None):
        """The weighted feature matrix (scipy CSR), one row per (prompt, response)."""
        import numpy as np
        import scipy.sparse as sp
        from sklearn.preprocessing import normalize

        if not self.idf and not self.mean:
            raise RuntimeError("Featurizer.transform called before fit")
        raw = (
            raw
            if raw is not None
            else self.raw_features(list(prompts), list(responses), n_jobs=n_jobs)
        )
        w = self.config.weights
        blocks = []
        for g in HASHED_GROUPS:
            if g in raw:
                m = raw[g].tocsr(copy=True)
                m.data = np.log1p(m.data)
                m = normalize(m @ sp.diags(self.idf[g]))
                blocks.append(m * w[g])
        for g in DENSE_GROUPS:
            if g in raw:
                z = (raw[g] - self.mean[g]) / self.std[g]
                blocks.append(sp.csr_matrix(z * (w[g] / math.sqrt(z.shape[1]))))
        return sp.hstack(blocks, format="csr")

    @property
    def n_features(self) -> int:
        c = self.config
        bits = {"word": c.word_bits, "char": c.char_bits, "edge": c.edge_bits, "pair": c.pair_bits}
        active = self.active
        return sum(2 ** bits[g] for g in HASHED_GROUPS if g in active) + sum(
            len(names) for g, names in DENSE_GROUPS.items() if g in active
        )

    @property
    def n_features_max(self) -> int:
        """Columns of the model with every group active: no saved array can be larger."""
        c = self.config
        bits = (c.word_bits, c.char_bits, c.edge_bits, c.pair_bits)
        return sum(2**b for b in bits) + sum(len(n) for n in DENSE_GROUPS.values())

    # ---------------------------------------------------------------- persistence
    def state(self) -> dict:
        """Arrays to save (``np.savez``)."""
        out = {f"idf_{g}": v for g, v in self.idf.items()}
        for g in self.mean:
            out[f"{g}_mean"] = self.mean[g]
            out[f"{g}_std"] = self.std[g]
        return out

    @classmethod
    def from_state(cls, config: FeatureConfig, arrays) -> Featurizer:
        f = cls(config)
        for g in HASHED_GROUPS:
            if f"idf_{g}" in arrays:
                f.idf[g] = arrays[f"idf_{g}"]
        for g in DENSE_GROUPS:
            if f"{g}_mean" in arrays:
                f.mean[g] = arrays[f"{g}_mean"]
                f.std[g] = arrays[f"{g}_std"]
        return f
