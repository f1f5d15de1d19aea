"""The settings that define the feature space (saved with a model), and their bounds: a
saved ``model.json`` is data, so every number in it is checked and no pattern in it is run.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .lexicon import LEXICON_FEATURES
from .response_features import DENSE_FEATURES

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


def _check_int(name: str, value: object) -> None:
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
    weights: dict[str, float] = field(
        default_factory=lambda: {
            "word": 1.0,
            "char": 1.0,
            "edge": 0.0,
            "pair": 0.0,
            "lex": 0.5,
            "dense": 2.5,
        }
    )

    def __post_init__(self) -> None:
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

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["word_ngrams"] = list(self.word_ngrams)
        d["char_ngrams"] = list(self.char_ngrams)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FeatureConfig:
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
