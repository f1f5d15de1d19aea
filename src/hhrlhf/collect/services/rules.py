"""The collection's rules that every way in applies alike (the JSON API, the CLI, a script):
the size limits of what an annotator sends, which two backends answer a message, which one
replaces a backend that keeps failing, and the backend a red-team conversation talks to.
One frozen :class:`Rules`, built from the settings once (docs/collect.md, "How pairs are
drawn")."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...errors import Invalid, TooLarge
from ..domain import Mode
from .pairing import choose_backends

if TYPE_CHECKING:
    from ..config import Settings

__all__ = ["REQUEST_ID_CHARS", "Rules", "check_size"]

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

    @classmethod
    def from_settings(cls, settings: Settings) -> Rules:
        names = settings.drawn_backend_names
        return cls(
            backends=tuple(names),
            weights=tuple(settings.backend_weights(names)),
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
        by weight."""
        drawn: str = rng.choices(self.backends, self.weights)[0]
        return drawn

    def pair(self, mode: str, backend: str | None, rng: random.Random) -> tuple[str, str]:
        """The backends answering a message as A and B: a red-team conversation's own on
        both sides; else drawn (:func:`.pairing.choose_backends`: a rerank backend is one arm
        with its weight's share, and shows its best two)."""
        if mode == Mode.RED_TEAM and backend:
            return (backend, backend)
        return choose_backends(
            list(self.backends),
            self.pairing,
            rng,
            weights=list(self.weights),
            rerank=self.rerank,
        )

    def replacement(self, failed: str, other: str, rng: random.Random) -> str | None:
        """The backend a retry gives a response whose backend ``failed`` kept failing:
        drawn by weight among the plain backends but that one (None: there is no other).
        ``other``: the other side's backend (it may be drawn again)."""
        names = [n for n in self.backends if n != failed and n not in self.rerank]
        if not names:
            return None
        weight = dict(zip(self.backends, self.weights, strict=True))
        drawn: str = rng.choices(names, [weight[n] for n in names])[0]
        return drawn
