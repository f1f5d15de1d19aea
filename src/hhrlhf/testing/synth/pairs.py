"""Synthetic preference pairs: one conversation at a time, in the style of each subset, with
the quirks of :mod:`.quirks` at their rates."""

from __future__ import annotations

import bisect
import itertools
import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ...subsets import PREFERENCE_SUBSETS, SUBSETS
from .quirks import QuirkRates, pick_quirk, quirk_rates
from .text import (
    FOLLOW_UPS,
    GENERIC,
    INLINE,
    NAMES,
    OPENERS,
    SHORT,
    TOPICS,
    UNICODE,
)
from .themes import THEMES

#: What a conversation is about: ``(theme, x, name)`` in harmless-base, else
#: ``(things, asks, tips, x)`` of a topic.
Context = tuple[Any, ...]
#: A synthetic ``{"chosen", "rejected"}`` pair.
Pair = dict[str, str]

# --------------------------------------------------------------------------- distributions

#: Human-turn counts of the real harmless-base test file (1..9 counted; 10..18 share 5 pairs).
_HUMAN_TURNS = list(range(1, 19))
_HUMAN_TURN_CUM = list(
    itertools.accumulate(
        [662, 584, 590, 354, 69, 20, 16, 7, 5, 1.2, 1.0, 0.8, 0.6, 0.5, 0.4, 0.2, 0.2, 0.1]
    )
)

#: The style of each subset: (share of chosen-longer pairs, sentence-count range per response).
STYLE = {
    "harmless-base": (0.443, (1, 4)),
    "helpful-base": (0.45, (1, 5)),
    "helpful-online": (0.46, (2, 8)),
    "helpful-rejection-sampled": (0.45, (1, 6)),
}


def _human_turns(rng: random.Random) -> int:
    return _HUMAN_TURNS[bisect.bisect(_HUMAN_TURN_CUM, rng.random() * _HUMAN_TURN_CUM[-1])]


# --------------------------------------------------------------------------- preference pairs


def fill(rng: random.Random, template: str, x: str, n: str) -> str:
    text = template.replace("{x}", x).replace("{n}", n)
    return text[:1].upper() + text[1:] if template.startswith("{") else text


@dataclass
class _Draft:
    """A pair being made: the turns before the final responses (``rturns``: the rejected
    side's, when they differ), the final chosen and rejected responses, and any text before
    the first speaker marker."""

    turns: list[list[str]]
    c: str
    r: str
    rturns: list[list[str]] | None = None
    preamble_c: str = ""
    preamble_r: str = ""

    def pair(self, *, identical: bool) -> Pair:
        prompt = "".join(f"\n\n{role}:{text}" for role, text in self.turns)
        rprompt = (
            prompt
            if self.rturns is None
            else "".join(f"\n\n{role}:{text}" for role, text in self.rturns)
        )
        chosen = f"{self.preamble_c}{prompt}\n\nAssistant:{self.c}"
        rejected = chosen if identical else f"{self.preamble_r}{rprompt}\n\nAssistant:{self.r}"
        return {"chosen": chosen, "rejected": rejected}


class PairMaker:
    """Builds one pair at a time from a shared ``Random``."""

    def __init__(self, rng: random.Random, subset: str):
        self.rng = rng
        self.subset = subset
        self.harmless = subset == "harmless-base"
        self.longer_share, (self.smin, self.smax) = STYLE[subset]
        self.topic_names = list(TOPICS)

    # -- pieces
    def _topic(self) -> Context:
        rng = self.rng
        things, asks, tips = TOPICS[rng.choice(self.topic_names)]
        return things, asks, tips, rng.choice(things)

    def human_first(self, ctx: Context) -> str:
        rng = self.rng
        if self.harmless:
            theme, x, n = ctx
            return " " + fill(rng, rng.choice(theme.asks), x, n)
        things, asks, tips, x = ctx
        text = fill(rng, rng.choice(asks), x, rng.choice(NAMES))
        if rng.random() < 0.25:
            text = rng.choice(["Hi! ", "Hello. ", "Quick question. ", "Hey there. "]) + text
        return " " + text

    def human_next(self, ctx: Context) -> str:
        rng = self.rng
        if self.harmless and rng.random() < 0.6:
            theme, x, n = ctx
            return " " + fill(rng, rng.choice(theme.asks), x, n)
        if not self.harmless and rng.random() < 0.3:
            return self.human_first(ctx)
        x = rng.choice(ctx[0]) if not self.harmless else rng.choice(TOPICS["homework"][0])
        return " " + rng.choice(FOLLOW_UPS).replace("{x}", x)

    def response(self, ctx: Context, *, good: bool, sentences: int | None = None) -> str:
        rng = self.rng
        k = sentences if sentences is not None else rng.randint(self.smin, self.smax)
        if rng.random() < 0.06:
            return " " + rng.choice(SHORT)
        if self.harmless:
            theme, x, n = ctx
            pool = theme.refuse if good else theme.comply
            parts = [fill(rng, rng.choice(pool), x, n) for _ in range(max(1, k // 2))]
            if k > 1:
                parts += [rng.choice(GENERIC) for _ in range(k - len(parts))]
            if rng.random() < 0.4:
                parts.insert(0, rng.choice(OPENERS))
            return " " + " ".join(parts)
        things, asks, tips, x = ctx
        parts = [rng.choice(OPENERS)] if rng.random() < 0.7 else []
        for _ in range(k):
            parts.append(
                fill(rng, rng.choice(tips), x, "") if rng.random() < 0.8 else rng.choice(GENERIC)
            )
        if self.subset == "helpful-online" and k >= 4 and rng.random() < 0.5:
            # Numbered list with single newlines; paragraphs with blank lines.
            head, body = parts[:1], parts[1:]
            return (
                " " + " ".join(head) + "\n" + "\n".join(f"{i + 1}. {p}" for i, p in enumerate(body))
            )
        text = " ".join(parts)
        if self.subset == "helpful-online" and rng.random() < 0.2:
            text = text.replace(". ", ".\n\n", 1)
        return " " + text

    def context(self) -> Context:
        rng = self.rng
        if self.harmless:
            theme = rng.choice(THEMES)
            x = rng.choice(TOPICS["homework"][0])
            return theme, x, rng.choice(NAMES)
        return self._topic()

    # -- a pair
    def make(self, quirk: str | None, shared_start: bool, unicode: bool) -> Pair:
        ctx = self.context()
        turns = self._turns(ctx, at_least=2 if quirk == "diverge_early" else 1)
        c = self.response(ctx, good=True)
        r = self.response(ctx, good=False)
        if c == r:
            r = r + " " + self.rng.choice(GENERIC)
        if shared_start:
            c, r = self._share_start(ctx, c, r)
        c, r = self._lengths(ctx, c, r)
        if unicode:
            c, r, turns = self._unicode(c, r, turns)
        draft = _Draft(turns, c, r)
        self._apply_quirk(draft, ctx, quirk)
        return draft.pair(identical=quirk == "identical")

    def _turns(self, ctx: Context, at_least: int) -> list[list[str]]:
        """The turns before the final responses: ``[role, text]``, at least ``at_least``
        human turns."""
        nh = max(_human_turns(self.rng), at_least)
        turns: list[list[str]] = [["Human", self.human_first(ctx)]]
        for _ in range(nh - 1):
            # The conversation continued with the picked response; in harmless-base that is
            # the more harmful one.
            turns.append(["Assistant", self.response(ctx, good=not self.harmless)])
            turns.append(["Human", self.human_next(ctx)])
        return turns

    def _apply_quirk(self, d: _Draft, ctx: Context, quirk: str | None) -> None:
        """Give the pair being made the structural ``quirk`` (see :data:`QUIRKS`)."""
        rng = self.rng
        if quirk == "empty_chosen":
            d.c = " "
        elif quirk in ("turns_in_chosen", "turns_in_rejected"):
            extra = (
                f"\n\nHuman:{self.human_next(ctx)}\n\nAssistant:"
                f"{self.response(ctx, good=True, sentences=1)}"
            )
            if quirk == "turns_in_chosen":
                d.c += extra
            else:
                d.r += extra
        elif quirk == "assistant_in_response":
            more = self.response(ctx, good=True, sentences=1)
            if rng.random() < 0.5:
                d.c += "\n\nAssistant:" + more
            else:
                d.r += "\n\nAssistant:" + more
        elif quirk == "double_human":
            i = rng.choice([i for i, t in enumerate(d.turns) if t[0] == "Human"])
            d.turns.insert(i + 1, ["Human", self.human_next(ctx)])
        elif quirk == "double_assistant":
            d.turns.append(["Assistant", self.response(ctx, good=True, sentences=1)])
        elif quirk == "inline_label":
            snippet = rng.choice(INLINE)
            if rng.random() < 0.6:
                i = rng.choice([i for i, t in enumerate(d.turns) if t[0] == "Human"])
                d.turns[i][1] = d.turns[i][1].rstrip() + snippet
            else:
                d.c = d.c.rstrip() + snippet
        elif quirk == "identical":
            d.r = d.c
        elif quirk == "diverge_early":
            i = rng.choice([i for i, t in enumerate(d.turns) if t[0] == "Human" and i > 0])
            d.rturns = [list(t) for t in d.turns]
            alt = self.human_next(ctx)
            while alt == d.turns[i][1]:
                alt = alt + " Please."
            d.rturns[i][1] = alt
        elif quirk == "preamble":
            # The leading "\n\n" is missing: the first human turn is text before any marker.
            d.preamble_c = d.preamble_r = "Human:" + d.turns[0][1]
            d.turns = d.turns[1:]
        elif quirk == "no_prompt":
            d.preamble_c, d.preamble_r = "Conversation A", "Conversation B"

    def _share_start(self, ctx: Context, c: str, r: str) -> tuple[str, str]:
        rng = self.rng
        words = c.split(" ")
        if len(words) < 4:
            opener = " " + rng.choice(OPENERS)
            return opener + c, opener + r
        k = rng.randint(2, min(8, len(words) - 1))
        stem = " ".join(words[:k])
        tail = self.response(ctx, good=False, sentences=1)
        new_r = stem + tail
        if new_r == c or c.startswith(new_r):
            new_r = stem + " " + rng.choice(GENERIC) + tail
        return c, new_r

    def _lengths(self, ctx: Context, c: str, r: str) -> tuple[str, str]:
        rng = self.rng
        want_longer = rng.random() < self.longer_share
        if (len(c) > len(r)) == want_longer:
            return c, r
        if not self.harmless and not r.startswith(c) and not c.startswith(r):
            # Helpful pairs: the two samples are of similar quality; swap lengths.
            return r, c
        if want_longer:
            for _ in range(6):
                if len(c) > len(r):
                    break
                c += " " + rng.choice(GENERIC)
        else:
            for _ in range(6):
                if len(r) > len(c):
                    break
                r += " " + rng.choice(GENERIC)
        return c, r

    def _unicode(self, c: str, r: str, turns: list[list[str]]) -> tuple[str, str, list[list[str]]]:
        rng = self.rng
        word = rng.choice(UNICODE)
        where = rng.random()
        if where < 0.4:
            c = c.rstrip() + " " + word
        elif where < 0.6:
            r = r.rstrip() + " " + word
        else:
            turns[0][1] = turns[0][1].rstrip() + " " + word
        return c, r, turns


def generate_pairs(
    n: int,
    *,
    seed: int = 0,
    quirks: bool | QuirkRates | Mapping[str, float] = True,
    subset: str | None = None,
) -> Iterator[Pair]:
    """Yield ``n`` synthetic ``{"chosen", "rejected"}`` pairs.

    ``subset`` picks the style (one of the four preference subsets); ``None`` mixes them in
    proportion to their real sizes. ``quirks``: ``True`` for the default
    :class:`QuirkRates`, ``False`` for none, or a :class:`QuirkRates` / mapping of overrides.
    """
    rates = quirk_rates(quirks)
    rng = random.Random(f"hhrlhf-synth/pairs/{seed}/{subset}")
    if subset is None:
        names = list(PREFERENCE_SUBSETS)
        cum = list(itertools.accumulate(SUBSETS[s].rows for s in names))
        makers = {s: PairMaker(rng, s) for s in names}
    else:
        if subset not in STYLE:
            raise ValueError(f"subset must be one of {list(STYLE)} or None, got {subset!r}")
        maker = PairMaker(rng, subset)
    recent: list[Pair] = []
    for _ in range(n):
        if subset is None:
            maker = makers[names[bisect.bisect(cum, rng.random() * cum[-1])]]
        yield one_pair(rng, maker, rates, recent)


def one_pair(
    rng: random.Random,
    maker: PairMaker,
    rates: QuirkRates,
    recent: list[Pair],
    force: str | None = None,
) -> Pair:
    """One pair from ``maker``, with a quirk drawn at ``rates`` (or ``force``d); ``recent``
    keeps up to 64 earlier pairs for the ``duplicate`` quirk."""
    quirk = force if force is not None else pick_quirk(rng, rates)
    shared = force == "shared_start" or rng.random() < rates.shared_start
    uni = force == "unicode" or rng.random() < rates.unicode
    if quirk == "duplicate":
        if recent:
            return dict(rng.choice(recent))
        quirk = None
    if quirk in ("shared_start", "unicode"):
        quirk = None
    pair = maker.make(quirk, shared, uni)
    if len(recent) < 64:
        recent.append(pair)
    else:
        recent[rng.randrange(64)] = pair
    return pair
