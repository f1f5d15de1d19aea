"""The quirks of the real files a synthetic pair may carry, and how often each occurs."""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace


@dataclass(frozen=True, slots=True)
class QuirkRates:
    """Per-pair probability of each quirk (at most one structural quirk per pair).

    Defaults follow the counts on the real ``harmless-base/test.jsonl.gz`` where there are
    counts, and small rates elsewhere. ``shared_start`` and ``unicode`` combine with the others.
    """

    #: The final chosen response is empty (the transcript ends in ``"\\n\\nAssistant: "``).
    empty_chosen: float = 0.0017
    #: The final chosen response holds ``"\\n\\nHuman: ..."`` (the model wrote the next turn).
    turns_in_chosen: float = 0.0012
    #: The final rejected response holds ``"\\n\\nHuman: ..."``.
    turns_in_rejected: float = 0.0008
    #: A final response holds a second ``"\\n\\nAssistant:"``.
    assistant_in_response: float = 0.0004
    #: Two Human turns in a row in the shared prompt.
    double_human: float = 0.0025
    #: Two Assistant turns in a row before the final response.
    double_assistant: float = 0.0013
    #: ``"...  Human: then what"`` inside a turn, without the ``"\\n\\n"`` prefix.
    inline_label: float = 0.017
    #: ``chosen == rejected``.
    identical: float = 0.0005
    #: A repeat of an earlier pair of the same stream.
    duplicate: float = 0.001
    #: The transcripts first differ at an earlier human turn.
    diverge_early: float = 0.001
    #: Text before the first marker (the leading ``"\\n\\n"`` is missing).
    preamble: float = 0.0002
    #: The transcripts share no assistant marker (different preambles). Off by default.
    no_prompt: float = 0.0
    #: Both final responses start with the same few words.
    shared_start: float = 0.12
    #: Accented letters, curly quotes, CJK or emoji somewhere in the pair.
    unicode: float = 0.03

    @classmethod
    def none(cls) -> QuirkRates:
        return cls(**{f.name: 0.0 for f in fields(cls)})


#: The structural quirks, one of which a pair may carry (``shared_start``/``unicode`` are extra).
QUIRKS = (
    "empty_chosen",
    "turns_in_chosen",
    "turns_in_rejected",
    "assistant_in_response",
    "double_human",
    "double_assistant",
    "inline_label",
    "identical",
    "duplicate",
    "diverge_early",
    "preamble",
    "no_prompt",
)


def quirk_rates(quirks: bool | QuirkRates | Mapping[str, float] | None) -> QuirkRates:
    """The rates ``quirks`` asks for: ``True`` the defaults, ``False``/None none, or overrides."""
    if quirks is True:
        return QuirkRates()
    if quirks is False or quirks is None:
        return QuirkRates.none()
    if isinstance(quirks, QuirkRates):
        return quirks
    if isinstance(quirks, Mapping):
        return replace(QuirkRates(), **quirks)
    raise TypeError(f"quirks must be a bool, a QuirkRates or a mapping, got {quirks!r}")


def pick_quirk(rng: random.Random, rates: QuirkRates) -> str | None:
    u = rng.random()
    acc = 0.0
    for name in QUIRKS:
        acc += getattr(rates, name)
        if u < acc:
            return name
    return None
