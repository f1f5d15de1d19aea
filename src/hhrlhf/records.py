"""Typed records: :class:`PreferencePair` and :class:`RedTeamAttempt` (frozen, slotted).

A pair keeps ``chosen`` and ``rejected`` exactly as published and computes the turn-level
alignment when it is built, so ``prompt + chosen_response == chosen`` and
``prompt + rejected_response == rejected`` hold for every pair.

A pair holds only strings, ints and None, so it can never be part of a reference cycle:
it is untracked by the cyclic garbage collector once built (``gc.is_tracked(pair)`` is
False). A loaded dataset of hundreds of thousands of pairs then costs nothing when the
collector runs, which it does every few hundred container allocations of the user's code.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

try:  # the optional native module untracks a whole list of objects in one call
    from ._jsonl import untrack as _untrack
except ImportError:  # pragma: no cover - depends on the install
    _untrack = None  # type: ignore[assignment]  # tested for None where it is used

from .transcript import (
    ASSISTANT,
    MARKER_RE,
    Dialogue,
    align_pair,
    has_inline_label,
    is_alternating,
    parse_transcript,
    prompt_length,
)

__all__ = [
    "PreferencePair",
    "RedTeamAttempt",
    "PAIR_CLASSES",
    "classify_pair",
    "MODEL_TYPES",
    "NUM_PARAMS",
]

#: Every per-pair class, with what it means. A pair can have several.
PAIR_CLASSES: dict[str, str] = {
    "empty_response": "a final response (chosen or rejected) is empty or whitespace only",
    "response_contains_turns": "a response holds speaker markers: the model wrote "
    "'\\n\\nHuman:' or '\\n\\nAssistant:' itself",
    "non_alternating": "a transcript's turns do not strictly alternate Human/Assistant "
    "starting with Human",
    "inline_speaker_label": "a turn contains 'Human:' or 'Assistant:' without the '\\n\\n' "
    "prefix (content, not a turn boundary)",
    "identical_pair": "chosen and rejected are the same string",
    "diverges_before_final_turn": "the transcripts first differ somewhere other than an "
    "assistant turn (a human turn, a role, or text before the first turn), or one is a "
    "turn-level prefix of the other",
    "no_prompt": "the transcripts share no assistant marker, so the prompt is empty",
}


@dataclass(frozen=True, slots=True)
class PreferencePair:
    """One comparison. ``index`` is the 0-based row in its file (line ``index + 1`` for JSONL)."""

    chosen: str
    rejected: str
    subset: str | None = None
    split: str | None = None
    index: int | None = None
    #: Length of the shared prompt, computed at construction (turn-level alignment).
    prompt_end: int = field(default=-1, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.prompt_end < 0:
            object.__setattr__(self, "prompt_end", prompt_length(self.chosen, self.rejected))
        if _atomic(self):
            untrack(self)

    def __setstate__(self, state: tuple[object, ...]) -> None:  # unpickling and copying
        # what dataclasses gives a frozen slotted class (state: the field values in order)
        for f, value in zip(fields(self), state, strict=True):
            object.__setattr__(self, f.name, value)
        if _atomic(self):
            untrack(self)

    @property
    def prompt(self) -> str:
        """The shared conversation up to and including the final ``"\\n\\nAssistant:"``."""
        return self.chosen[: self.prompt_end]

    @property
    def chosen_response(self) -> str:
        return self.chosen[self.prompt_end :]

    @property
    def rejected_response(self) -> str:
        return self.rejected[self.prompt_end :]

    @property
    def chosen_dialogue(self) -> Dialogue:
        return parse_transcript(self.chosen)

    @property
    def rejected_dialogue(self) -> Dialogue:
        return parse_transcript(self.rejected)

    @property
    def prompt_dialogue(self) -> Dialogue:
        """The prompt's turns, without the trailing empty assistant marker."""
        p = self.prompt
        if p.endswith("\n\nAssistant:"):
            p = p[: -len("\n\nAssistant:")]
        return parse_transcript(p)

    @property
    def human_turns(self) -> int:
        """Human turns in the prompt (the conversation the responses answer)."""
        return self.prompt.count("\n\nHuman:")

    @property
    def classes(self) -> frozenset[str]:
        return classify_pair(self.chosen, self.rejected, self.prompt_end)

    @property
    def source(self) -> dict[str, Any]:
        return {"subset": self.subset, "split": self.split, "index": self.index}

    def to_dict(self, *, source: bool = False) -> dict[str, Any]:
        d: dict[str, Any] = {"chosen": self.chosen, "rejected": self.rejected}
        if source:
            d.update(self.source)
        return d

    def to_view(self, *, full: bool = False) -> dict[str, Any]:
        """The pair split for people: source, prompt, both responses and classes, as the data
        browser serves it; ``full`` adds ``human_turns`` (before the classes) and the two
        transcripts (after them), as ``hh show --json`` prints it."""
        d = {
            **self.source,
            "prompt": self.prompt,
            "chosen_response": self.chosen_response,
            "rejected_response": self.rejected_response,
        }
        if full:
            d["human_turns"] = self.human_turns
        d["classes"] = sorted(self.classes)
        if full:
            d.update(chosen=self.chosen, rejected=self.rejected)
        return d


_ATOMIC = (str, int, type(None))


def _atomic(pair: PreferencePair) -> bool:
    """Whether the pair holds only atomic values (strings, ints, None)."""
    return (
        type(pair.chosen) is str
        and type(pair.rejected) is str
        and type(pair.subset) in _ATOMIC
        and type(pair.split) in _ATOMIC
        and type(pair.index) in _ATOMIC
        and type(pair.prompt_end) is int
    )


def _untrack_ctypes() -> Callable[[object], None]:
    """``PyObject_GC_UnTrack`` through ctypes, for installs without the native module."""
    try:
        import ctypes

        fn = ctypes.pythonapi.PyObject_GC_UnTrack
    except (ImportError, AttributeError):  # pragma: no cover - not CPython
        return lambda objs: None
    fn.argtypes = [ctypes.py_object]
    fn.restype = None
    import gc

    def untrack_py(objs: object) -> None:
        for o in objs if type(objs) is list else (objs,):
            if gc.is_tracked(o):
                fn(o)

    return untrack_py


#: ``untrack(pairs)`` / ``untrack(pair)``: stop the cyclic garbage collector tracking pairs
#: that hold only atomic values (they cannot be in a cycle). The loaders call it on every
#: batch they build; a pair built by calling the class untracks itself.
untrack = _untrack if _untrack is not None else _untrack_ctypes()


def _inline_label_in_turns(text: str) -> bool:
    """Whether a turn of ``parse_transcript(text)`` holds a speaker label without ``\\n\\n``.

    When every "Human:" and "Assistant:" in the text follows "\\n\\n", each one is a turn
    marker and no turn can hold a label: counting decides that without parsing (most pairs).
    """
    if text.count("Human:") == text.count("\n\nHuman:") and text.count("Assistant:") == text.count(
        "\n\nAssistant:"
    ):
        return False
    return any(has_inline_label(t.text) for t in parse_transcript(text).turns)


def classify_pair(chosen: str, rejected: str, prompt_end: int | None = None) -> frozenset[str]:
    """The :data:`PAIR_CLASSES` that apply to a pair."""
    out = set()
    if prompt_end is None:
        prompt_end = prompt_length(chosen, rejected)
    cr, rr = chosen[prompt_end:], rejected[prompt_end:]
    if chosen == rejected:
        out.add("identical_pair")
    if prompt_end == 0:
        out.add("no_prompt")
    if not cr.strip() or not rr.strip():
        out.add("empty_response")
    if MARKER_RE.search(cr) or MARKER_RE.search(rr):
        out.add("response_contains_turns")
    # the roles in order, as parse_transcript would give them, without building the turns
    if not is_alternating(MARKER_RE.findall(chosen)) or not is_alternating(
        MARKER_RE.findall(rejected)
    ):
        out.add("non_alternating")
    if _inline_label_in_turns(chosen) or _inline_label_in_turns(rejected):
        out.add("inline_speaker_label")
    if chosen != rejected:
        a = align_pair(chosen, rejected)
        if a.diverge_role != ASSISTANT:
            out.add("diverges_before_final_turn")
    return frozenset(out)


# --------------------------------------------------------------------------- red team

#: The model types in the file ("prompted LM" in the paper is stored as context distillation).
MODEL_TYPES = ("plain lm", "context distillation", "rejection sampling", "rlhf")
#: num_params as stored, and its numeric value.
NUM_PARAMS = {"2.7B": 2.7e9, "13B": 13e9, "52B": 52e9}

RED_TEAM_KEYS = (
    "transcript",
    "min_harmlessness_score_transcript",
    "num_params",
    "model_type",
    "rating",
    "task_description",
    "task_description_harmlessness_score",
    "red_team_member_id",
    "is_upworker",
    "tags",
)
#: The spelling in the real file; the dataset card spells it without the typo.
TASK_SCORE_KEY_REAL = "task_descripton_harmlessness_score"
TASK_SCORE_KEY_CARD = "task_description_harmlessness_score"
#: The ten keys as the real file spells them.
RED_TEAM_KEYS_REAL = tuple(
    TASK_SCORE_KEY_REAL if k == TASK_SCORE_KEY_CARD else k for k in RED_TEAM_KEYS
)


def parse_num_params(value: str) -> float | None:
    """``"52B"`` -> 52e9, ``"2.7B"`` -> 2.7e9; None when not of that form."""
    if value in NUM_PARAMS:
        return NUM_PARAMS[value]
    v = value.strip().upper()
    scale = {"B": 1e9, "M": 1e6, "K": 1e3}.get(v[-1:]) if v else None
    try:
        return float(v[:-1]) * scale if scale else float(v)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class RedTeamAttempt:
    """One red-team attempt, all ten fields typed. ``index`` is its 0-based position in the array."""

    transcript: str
    #: None where the data holds ``null``: collected data exported without a scorer
    min_harmlessness_score_transcript: float | None
    num_params: str
    model_type: str
    rating: float
    task_description: str
    task_description_harmlessness_score: float | None
    red_team_member_id: int | str
    is_upworker: bool
    tags: list[str] | None
    index: int | None = None

    @property
    def params(self) -> float | None:
        """``num_params`` as a number (52B -> 5.2e10)."""
        return parse_num_params(self.num_params)

    @property
    def dialogue(self) -> Dialogue:
        return parse_transcript(self.transcript)

    @property
    def human_turns(self) -> int:
        return self.transcript.count("\n\nHuman:")

    @property
    def successful(self) -> bool:
        """The paper's success criterion: the red-teamer's own rating is at least 3."""
        return self.rating >= 3

    @property
    def score_is_finite(self) -> bool:
        s = self.min_harmlessness_score_transcript
        return s is not None and math.isfinite(s)

    def to_dict(self, *, real_keys: bool = False) -> dict[str, Any]:
        """The ten fields; ``real_keys=True`` spells the task score key as the real file does."""
        d = {k: getattr(self, k) for k in RED_TEAM_KEYS}
        if real_keys:
            d = {
                (TASK_SCORE_KEY_REAL if k == "task_description_harmlessness_score" else k): v
                for k, v in d.items()
            }
        return d
