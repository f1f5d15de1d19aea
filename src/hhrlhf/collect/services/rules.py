"""The collection's rules that every way in applies alike (the JSON API, the CLI, a script):
the size limits of what an annotator sends, which two backends answer a message, which one
replaces a backend that keeps failing, and the backend a red-team conversation talks to.
One frozen :class:`Rules`, built from the settings and the live backend states (paused
backends left out, live weights in: :mod:`.backend_live`; docs/collect.md, "How pairs are
drawn" and "Backends live")."""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...errors import Conflict, Invalid, TooLarge, Unavailable
from ..domain import Mode
from .pairing import choose_backends

if TYPE_CHECKING:
    from ..config import Settings

__all__ = ["ALL_PAUSED", "CONVERSATION_PAUSED", "REQUEST_ID_CHARS", "Rules", "check_size"]

#: a draw when every backend is paused (an admin paused the last one on another host at once)
ALL_PAUSED = "every model is paused: no new message can be answered until an admin resumes one"
#: a new message in a red-team conversation whose backend is paused (it talks to one backend)
CONVERSATION_PAUSED = (
    "this conversation's model has been paused by an admin: finish this conversation "
    "and start a new one"
)

#: the longest ``request_id`` a choice may carry
REQUEST_ID_CHARS = 100


def check_size(what: str, value: str | None, limit: int) -> None:
    """Refuse ``value`` (``what``, as the error names it) over ``limit`` characters
    (:class:`TooLarge`), or holding a NUL (PostgreSQL cannot store U+0000 in text: refused the
    same way on every database)."""
    if value is None:
        return
    if len(value) > limit:
        raise TooLarge(f"{what} is too long ({len(value)} characters; the limit is {limit})")
    if "\x00" in value:
        raise Invalid(f"{what} holds a NUL character (U+0000), which cannot be stored")


@dataclass(frozen=True, slots=True)
class Rules:
    """What the settings say about drawing backends and the sizes of what is sent."""

    #: the backends conversations draw from (those only a rerank backend samples left out)
    backends: tuple[str, ...]
    #: each drawn backend's weight (its share of a draw)
    weights: tuple[float, ...]
    #: the rerank backends among them (each answers both sides with its best two)
    rerank: frozenset[str]
    #: ``random`` or ``fixed`` (the first answers A, the second B)
    pairing: str
    #: what a red-team conversation continues with: ``picked`` or ``other``
    red_team_continue: str
    #: failures of one backend on a response before a retry draws another (0: never)
    retry_switch_after: int
    strength_points: int
    max_task_chars: int
    max_message_chars: int
    max_edit_chars: int
    max_comment_chars: int
    #: the configured backends left out of the draw: paused, or rerank over a paused base
    paused: frozenset[str] = frozenset()

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        paused: Collection[str] = (),
        weights: Mapping[str, float] | None = None,
    ) -> Rules:
        """The settings' rules; ``paused``: backends not drawn now (a rerank backend whose
        base is paused is not drawn either); ``weights``: live weights that replace the
        config's (:mod:`.backend_live`)."""
        bases = {b.name: b.base for b in settings.backends if b.kind == "rerank"}
        drawn = settings.drawn_backend_names
        stopped = frozenset(n for n in drawn if n in paused or bases.get(n) in paused)
        names = [n for n in drawn if n not in stopped]
        live = weights or {}
        return cls(
            backends=tuple(names),
            weights=tuple(live.get(n, settings.backend(n).weight) for n in names),
            paused=stopped,
            rerank=frozenset(n for n in names if settings.backend(n).kind == "rerank"),
            pairing=settings.pairing,
            red_team_continue=settings.red_team_continue,
            retry_switch_after=settings.retry_switch_after,
            strength_points=settings.strength_points,
            max_task_chars=settings.max_task_chars,
            max_message_chars=settings.max_message_chars,
            max_edit_chars=settings.max_edit_chars,
            max_comment_chars=settings.max_comment_chars,
        )

    def red_team_backend(self, rng: random.Random) -> str:
        """The backend a new red-team conversation talks to (both sides, every turn), drawn
        by weight among those not paused."""
        if not self.backends:
            raise Unavailable(ALL_PAUSED)
        drawn: str = rng.choices(self.backends, self.weights)[0]
        return drawn

    def pair(self, mode: str, backend: str | None, rng: random.Random) -> tuple[str, str]:
        """The backends answering a message as A and B: a red-team conversation's own on
        both sides; else drawn (:func:`.pairing.choose_backends`: a rerank backend is one arm
        with its weight's share, and shows its best two) among those not paused. A red-team
        conversation whose backend is paused takes no new message (:class:`Conflict`)."""
        if mode == Mode.RED_TEAM and backend:
            if backend in self.paused:
                raise Conflict(CONVERSATION_PAUSED)
            return (backend, backend)
        if not self.backends:
            raise Unavailable(ALL_PAUSED)
        return choose_backends(
            list(self.backends),
            self.pairing,
            rng,
            weights=list(self.weights),
            rerank=self.rerank,
        )

    def replacement(self, failed: str, other: str, rng: random.Random) -> str | None:
        """The backend a retry gives a response whose backend ``failed`` kept failing:
        drawn by weight among the plain backends not paused but that one (None: there is
        no other).
        ``other``: the other side's backend (it may be drawn again)."""
        names = [n for n in self.backends if n != failed and n not in self.rerank]
        if not names:
            return None
        weight = dict(zip(self.backends, self.weights, strict=True))
        drawn: str = rng.choices(names, [weight[n] for n in names])[0]
        return drawn
