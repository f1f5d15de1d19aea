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

from ..errors import require
from .feature_config import (
    CONFIG_BOUNDS,
    DENSE_GROUPS,
    HASHED_GROUPS,
    WORD_TOKENIZERS,
    FeatureConfig,
)
from .lexicon import LEXICON_FEATURES, harm_words, lexicon_row
from .response_features import DENSE_FEATURES, Context, dense_row, edge_doc, pair_doc, split_prompt

__all__ = [
    "FeatureConfig",
    "Featurizer",
    "WORD_TOKENIZERS",
    "CONFIG_BOUNDS",
    "DENSE_FEATURES",
    "DENSE_GROUPS",
    "HASHED_GROUPS",
    "LEXICON_FEATURES",
    "split_prompt",
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
        contexts = [Context(p) for p in first]
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
            out["edge"] = v["edge"].transform([edge_doc(r) for r in responses])
        if "pair" in active:
            out["pair"] = v["pair"].transform(
                [pair_doc(r, c.last_words, c.depth) for r, c in zip(responses, ctx, strict=True)]
            )
        if "lex" in active:
            harm = [harm_words(c.humans) for c in contexts]
            out["lex"] = np.array(
                [lexicon_row(r, harm[i]) for r, i in zip(responses, row_of.tolist(), strict=True)],
                dtype=float,
            ).reshape(len(responses), -1)
        if "dense" in active:
            base = np.array(
                [dense_row(r, c) for r, c in zip(responses, ctx, strict=True)], dtype=float
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
