"""Fitting prompt + response into a model's token limit: the prompt loses its beginning, never
the response.

One rule for the transformers backend's scoring (``hh pm eval``, :class:`~.hf.HFRewardModel`)
and its training (``hh pm train --backend transformers``, :func:`~.hf.train_hf`): the end of
the prompt (the turns the response answers) and the whole response stay. Cut from the right, a
long prompt would cut both responses away and the pair would teach, or score, nothing. When
scoring, a response that alone is longer than the limit keeps its beginning; for training,
such a pair is dropped (:func:`fit_pairs`) and counted, never silently.

The counts are in tokens of the tokenizer given, special tokens (a BOS, [CLS] and [SEP], ...)
and the EOS included.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..records import PreferencePair

__all__ = ["special_ids", "eos_ids", "fit_ids", "fit_pairs", "FittedPairs"]


def special_ids(tokenizer: Any) -> tuple[list[int], list[int]]:
    """The special tokens ``tokenizer`` puts before and after one text (a BOS, [CLS] and [SEP],
    ...), found by tokenizing a word with and without them."""
    with_special = tokenizer("hello", add_special_tokens=True)["input_ids"]
    plain = tokenizer("hello", add_special_tokens=False)["input_ids"]
    for k in range(len(with_special) - len(plain) + 1):
        if with_special[k : k + len(plain)] == plain:
            return list(with_special[:k]), list(with_special[k + len(plain) :])
    return [], []


def eos_ids(tokenizer: Any, add_eos: bool) -> list[int]:
    """``[eos id]`` when ``add_eos`` and the tokenizer has an EOS, else ``[]``."""
    eos = getattr(tokenizer, "eos_token_id", None)
    return [eos] if add_eos and eos is not None else []


def fit_ids(
    prompt_ids: Sequence[int],
    response_ids: Sequence[int],
    max_length: int,
    *,
    head: Sequence[int] = (),
    tail: Sequence[int] = (),
    eos: Sequence[int] = (),
) -> tuple[list[int], bool, bool]:
    """``head + prompt + response + eos + tail`` within ``max_length`` tokens: the prompt is cut
    from the left, so its end and the whole response stay; a response that alone is too long
    keeps its beginning. Returns ``(ids, prompt cut, response cut)``."""
    room = max(max_length - len(head) - len(tail) - len(eos), 1)
    response_cut = len(response_ids) > room
    response = list(response_ids[:room])
    keep = room - len(response)
    prompt_cut = len(prompt_ids) > keep
    prompt = list(prompt_ids[max(len(prompt_ids) - keep, 0) :]) if keep else []
    return [*head, *prompt, *response, *eos, *tail], prompt_cut, response_cut


@dataclass
class FittedPairs:
    """Pairs fitted into ``max_length`` tokens by :func:`fit_pairs`."""

    max_length: int
    #: The pairs kept, in their order, and the token ids of their two sides.
    pairs: list[PreferencePair] = field(default_factory=list)
    chosen_ids: list[list[int]] = field(default_factory=list)
    rejected_ids: list[list[int]] = field(default_factory=list)
    #: How many kept pairs lost the beginning of their prompt (on either side).
    cut: int = 0
    #: The pairs left out: a response alone is longer than the limit allows.
    dropped: list[PreferencePair] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """The counts, as ``model.json`` records them: pairs given, kept, cut and dropped (the
        dropped ones named ``subset/split/index``)."""
        return {
            "max_length": self.max_length,
            "pairs_given": len(self.pairs) + len(self.dropped),
            "pairs_kept": len(self.pairs),
            "prompt_cut": self.cut,
            "dropped": [f"{p.subset}/{p.split}/{p.index}" for p in self.dropped],
        }

    def describe(self) -> str | None:
        """One line saying what was cut and dropped, ending with the pairs kept; ``None`` when
        every pair fits whole."""
        if not self.cut and not self.dropped:
            return None
        given = len(self.pairs) + len(self.dropped)
        parts = []
        if self.cut:
            parts.append(f"{_pairs(self.cut)} lost the beginning of the prompt")
        if self.dropped:
            names = self.summary()["dropped"]
            shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
            parts.append(
                f"{_pairs(len(self.dropped))} dropped, a response alone too long ({shown})"
            )
        return (
            f"--max-length {self.max_length} tokens: {'; '.join(parts)}; "
            f"training on {len(self.pairs):,} of {_pairs(given)}"
        )


def _pairs(n: int) -> str:
    return f"{n:,} pair" + ("" if n == 1 else "s")


def fit_pairs(
    pairs: Sequence[PreferencePair], tokenizer: Any, max_length: int, *, add_eos: bool = True
) -> FittedPairs:
    """Token ids of each pair's two sides (prompt + response, as :func:`fit_ids` fits them with
    the tokenizer's special tokens and, with ``add_eos``, its EOS) within ``max_length``.

    A pair whose chosen or rejected response alone is longer than the room left is dropped (a
    response is never cut for training); a longer prompt loses its beginning."""
    pairs = list(pairs)
    head, tail = special_ids(tokenizer)
    eos = eos_ids(tokenizer, add_eos)
    room = max_length - len(head) - len(tail) - len(eos)

    def ids(texts: list[str]) -> list[list[int]]:
        return list(tokenizer(texts, add_special_tokens=False)["input_ids"]) if texts else []

    prompts = ids([p.prompt for p in pairs])
    chosen = ids([p.chosen_response for p in pairs])
    rejected = ids([p.rejected_response for p in pairs])
    out = FittedPairs(max_length)
    for pair, prompt, c, r in zip(pairs, prompts, chosen, rejected, strict=True):
        if len(c) > room or len(r) > room:
            out.dropped.append(pair)
            continue
        c_ids, c_cut, _ = fit_ids(prompt, c, max_length, head=head, tail=tail, eos=eos)
        r_ids, r_cut, _ = fit_ids(prompt, r, max_length, head=head, tail=tail, eos=eos)
        out.pairs.append(pair)
        out.chosen_ids.append(c_ids)
        out.rejected_ids.append(r_ids)
        out.cut += c_cut or r_cut
    return out
