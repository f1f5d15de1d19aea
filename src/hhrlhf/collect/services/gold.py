"""Gold comparisons: HH pairs with a known answer, imported by the admin
(``hh collect gold import``), mixed into review (:mod:`.review`) and scored per annotator.

A gold item is stored as the collection stores a comparison: ``chosen`` is the response the
reviewer should pick for the mode's question. Helpful: the HH line's chosen (the better one).
Red-team: the review asks for the MORE harmful response, so the right pick is the HH line's
REJECTED one; it is stored as the item's ``chosen`` (and the HH chosen as its ``rejected``).
Either way a gold review is correct iff its pick, in the original order, is ``"a"``.

Gold items are never exported and never enter agreement or the leaderboard: a gold review
has ``comparison_id`` NULL, and every query over collected data reads comparisons.
"""

from __future__ import annotations

import hashlib
import os
from collections import defaultdict
from dataclasses import dataclass

import orjson
from sqlalchemy import func, select
from sqlalchemy.orm import Session as DBSession

from ...errors import DataFormatError, HHError
from ...reader import read_pairs
from ...records import PreferencePair
from ...transcript import ASSISTANT, ASSISTANT_MARKER, HUMAN, align_pair, parse_transcript
from ..db import Storage
from ..db.models import Annotator, GoldItem, Review
from ..domain import now

__all__ = [
    "GOLD_MODES",
    "GoldPair",
    "ImportResult",
    "GoldAccuracy",
    "GoldCounts",
    "gold_digest",
    "gold_pair",
    "read_gold",
    "import_gold",
    "gold_counts",
    "gold_accuracy",
    "unseen_gold",
    "gold_exists",
    "last_human",
    "gold_task_description",
]

GOLD_MODES = ("helpful", "red-team")


@dataclass(frozen=True, slots=True)
class GoldPair:
    """A gold item as stored: ``chosen`` is the right pick for ``mode``'s question."""

    prefix: str
    chosen: str
    rejected: str
    mode: str

    @property
    def digest(self) -> str:
        return gold_digest(self.prefix, self.chosen, self.rejected)


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What an import did: lines read, items added, and those already there (same digest)."""

    read: int
    added: int
    already: int


@dataclass(frozen=True, slots=True)
class GoldAccuracy:
    """One annotator's answered gold reviews and how many were right."""

    name: str
    answered: int
    correct: int

    @property
    def accuracy(self) -> float | None:
        return round(self.correct / self.answered, 4) if self.answered else None


@dataclass(frozen=True, slots=True)
class GoldCounts:
    """The gold items by mode and the gold reviews answered."""

    items: dict[str, int]
    reviews: int

    @property
    def total(self) -> int:
        return sum(self.items.values())


def gold_digest(prefix: str, chosen: str, rejected: str) -> str:
    """sha256 of the three texts (as one JSON array: no two triples share an encoding)."""
    return hashlib.sha256(orjson.dumps([prefix, chosen, rejected])).hexdigest()


def _response(text: str) -> str:
    # an HH response follows its marker after one space; the collection stores it without
    return text[1:] if text.startswith(" ") else text


def gold_pair(pair: PreferencePair, mode: str) -> GoldPair:
    """The gold item of an HH pair; ``ValueError`` naming the problem when it is none: the
    two transcripts must share everything up to their last ``"\\n\\nAssistant:"`` and differ
    in that final response only."""
    if pair.chosen == pair.rejected:
        raise ValueError("chosen and rejected are the same text: no known answer")
    al = align_pair(pair.chosen, pair.rejected)
    last = al.chosen_turns - 1
    prefix = pair.chosen[: al.prompt_end]
    if (
        al.prompt_end == 0
        or al.chosen_turns != al.rejected_turns
        or al.diverge_turn != last
        or al.diverge_role != ASSISTANT
        or not prefix.endswith(ASSISTANT_MARKER)
        or parse_transcript(prefix).preamble
    ):
        raise ValueError(
            "chosen and rejected differ before their last assistant response "
            "(a gold pair shares its conversation and differs in the final response only)"
        )
    turns = parse_transcript(prefix).turns
    if len(turns) < 2 or turns[-2].role != HUMAN:
        raise ValueError("the final response does not answer a human message")
    chosen = _response(pair.chosen[al.prompt_end :])
    rejected = _response(pair.rejected[al.prompt_end :])
    if not chosen.strip() or not rejected.strip():
        raise ValueError("a final response is empty")
    if chosen == rejected:
        raise ValueError("the two final responses are the same text")
    if mode == "red-team":  # the reviewer is asked for the MORE harmful: HH's rejected
        chosen, rejected = rejected, chosen
    return GoldPair(prefix, chosen, rejected, mode)


def read_gold(
    path: str | os.PathLike[str],
    mode: str = "helpful",
    *,
    refused: list[DataFormatError] | None = None,
) -> list[GoldPair]:
    """Every line of ``path`` (HH ``{"chosen", "rejected"}`` lines, gzipped or not) as a
    gold item. A line that is no pair (not JSON, a key missing) raises
    :class:`~hhrlhf.errors.DataFormatError` naming the file, the line and the problem; so
    does a pair that cannot be gold (:func:`gold_pair`), unless ``refused`` is given: then
    it is skipped and its error appended there (upstream's files hold a few)."""
    if mode not in GOLD_MODES:
        raise HHError(f"gold mode must be one of {', '.join(GOLD_MODES)}, not {mode!r}")
    if not os.path.isfile(path):
        raise HHError(f"{os.fspath(path)}: no such file")
    out = []
    for pair in read_pairs(path):
        try:
            out.append(gold_pair(pair, mode))
        except ValueError as exc:
            error = DataFormatError(path, (pair.index or 0) + 1, str(exc))
            if refused is None:
                error.hint = "nothing was imported; --skip-refused imports the other pairs"
                raise error from None
            refused.append(error)
    if not out:
        raise DataFormatError(path, None, "holds no pair that can be gold")
    return out


def import_gold(
    storage: Storage, pairs: list[GoldPair], *, source: str | None = None
) -> ImportResult:
    """Add the pairs not already there (by digest, in the file and in the database)."""
    stamp = now()
    with storage.write() as s:
        known = set(s.scalars(select(GoldItem.digest)))
        added = 0
        for p in pairs:
            if p.digest in known:
                continue
            known.add(p.digest)
            s.add(
                GoldItem(
                    prefix=p.prefix,
                    chosen=p.chosen,
                    rejected=p.rejected,
                    mode=p.mode,
                    digest=p.digest,
                    source=None if source is None else source[-500:],
                    created_at=stamp,
                )
            )
            added += 1
    return ImportResult(read=len(pairs), added=added, already=len(pairs) - added)


def gold_counts(storage: Storage) -> GoldCounts:
    """How many gold items of each mode, and the gold reviews answered."""
    with storage.read() as s:
        items: dict[str, int] = {
            mode: n
            for mode, n in s.execute(select(GoldItem.mode, func.count()).group_by(GoldItem.mode))
        }
        reviews = s.scalar(
            select(func.count())
            .select_from(Review)
            .where(Review.gold_id.is_not(None), Review.status == "done")
        )
    return GoldCounts({m: items.get(m, 0) for m in GOLD_MODES}, reviews or 0)


def gold_accuracy(storage: Storage) -> list[GoldAccuracy]:
    """Per annotator with an answered gold review, by name: answered and correct."""
    with storage.read() as s:
        rows = s.execute(
            select(Annotator.name, Review.pick)
            .join(Annotator, Review.reviewer_id == Annotator.id)
            .where(Review.gold_id.is_not(None), Review.status == "done")
        ).all()
    tally: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for name, pick in rows:
        tally[name][0] += 1
        tally[name][1] += pick == "a"
    return [GoldAccuracy(n, a, c) for n, (a, c) in sorted(tally.items())]


# -- gold in review (:mod:`.review`) -----------------------------------------------------


def unseen_gold(s: DBSession, reviewer_id: int) -> list[int]:
    """In the session ``s``: the gold items never given to this reviewer, by id."""
    given = select(Review.gold_id).where(
        Review.reviewer_id == reviewer_id, Review.gold_id.is_not(None)
    )
    return list(
        s.scalars(select(GoldItem.id).where(GoldItem.id.not_in(given)).order_by(GoldItem.id))
    )


def gold_exists(s: DBSession) -> bool:
    return s.scalar(select(GoldItem.id).limit(1)) is not None


def last_human(prefix: str) -> str:
    """The human message a gold item's responses answer (as a turn stores it)."""
    turns = parse_transcript(prefix).turns
    return turns[-2].content if len(turns) >= 2 else ""


#: a gold item's task as the review shows it: its first human message, up to this long
TASK_CHARS = 120


def gold_task_description(prefix: str) -> str:
    """What a gold item's review shows as the author's task (a gold item has none of its
    own): the first line of its first human message, cut at a word within
    :data:`TASK_CHARS`."""
    turns = parse_transcript(prefix).turns
    first = turns[0].content if turns else ""
    line = first.splitlines()[0].strip() if first.strip() else first.strip()
    if len(line) > TASK_CHARS:
        line = line[:TASK_CHARS].rsplit(" ", 1)[0].rstrip(" ,;:") + "…"
    return line or "Everyday questions"
