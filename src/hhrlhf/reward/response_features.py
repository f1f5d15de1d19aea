"""What the features read from one prompt and one response: the prompt's turns, the words
at the response's edges, prompt x response word pairs and the dense scalar columns.

:class:`~hhrlhf.reward.features.Featurizer` turns these into matrix columns.
"""

from __future__ import annotations

import math
import re

from ..transcript import MARKER_RE

#: A word, for overlaps and pairs (lowercased text).
WORD_RE = re.compile(r"[a-z0-9']+")
_EDGE_RE = re.compile(r"[a-z0-9']+|[?!.,]")
LENGTH_BINS = (1, 20, 50, 100, 200, 400, 800)

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
    *(f"shorter_than_{b}" for b in LENGTH_BINS),
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


def split_prompt(prompt: str) -> tuple[str, str, str]:
    """(last human turn, earlier assistant turns joined, all human turns joined) of a prompt."""
    parts = MARKER_RE.split(prompt)
    humans: list[str] = []
    assistants: list[str] = []
    for i in range(1, len(parts) - 1, 2):
        (humans if parts[i] == "Human" else assistants).append(parts[i + 1])
    return (humans[-1] if humans else parts[0]), " ".join(assistants), " ".join(humans)


def edge_doc(response: str) -> str:
    """The ``edge`` group's tokens: the first words by position, the first two together, the
    last words and a word-count bucket."""
    w = _EDGE_RE.findall(response.lower())
    toks = [f"b{i}_{x}" for i, x in enumerate(w[:4])]
    toks.append(f"bb_{w[0]}_{w[1]}" if len(w) > 1 else "bb_short")
    toks += [f"e_{x}" for x in w[-3:]]
    toks.append(f"nw{min(len(w) // 10, 20)}")
    return " ".join(toks)


def pair_doc(response: str, last_human_words: set[str], depth: int) -> str:
    """The ``pair`` group's tokens: (last human word, early response word) pairs and the
    response's words tagged with the dialogue ``depth``."""
    rw = WORD_RE.findall(response.lower())
    early = set(rw[:12])
    toks = [f"{a}|{b}" for a in last_human_words for b in early]
    toks += [f"t{depth}|{b}" for b in set(rw)]
    return " ".join(toks)


class Context:
    """What the features need from one prompt, computed once however many responses share it."""

    __slots__ = ("last", "earlier", "humans", "last_words", "prompt_words", "depth")

    def __init__(self, prompt: str):
        self.last, self.earlier, self.humans = split_prompt(prompt)
        self.last_words = set(WORD_RE.findall(self.last.lower()))
        self.prompt_words = set(WORD_RE.findall(prompt.lower()))
        self.depth = min(prompt.count("\n\nHuman:"), 4)


def dense_row(response: str, ctx: Context) -> list[float]:
    """The dense columns computed from the text alone (the cosine columns, which need
    vectorizers, are added by the featurizer)."""
    rw = WORD_RE.findall(response.lower())
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
        *(float(n < b) for b in LENGTH_BINS),
        float(stripped.endswith(".")),
        float(stripped.endswith("!")),
        float(n > 0 and stripped[-1].isalnum()),
        math.log1p(stripped.count(". ") + stripped.count("? ") + stripped.count("! ")),
        math.log1p(stripped.count("\n- ") + stripped.count("\n1")),
    ]
