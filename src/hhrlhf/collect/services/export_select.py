"""Which stored comparisons the export turns into lines, and what each line says: the one
selection :func:`.export.export_collection` writes and ``hh collect flag`` flags.

:func:`exported_comparisons` yields one :class:`Exported` per line, in the export's order
(each ``(subset, split)`` file's lines in the order yielded, so a line's ``index`` in its
file is its position among the lines of that file), and counts what it leaves out and why in
a :class:`Tally`.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from ...transcript import ASSISTANT, HUMAN, Turn
from ..db import Storage
from . import transcripts
from .export_check import check_line, stored_turns
from .guidelines import GuidelinesTally
from .qualification import counted_member_ids
from .transcripts import ExportComparison, ExportConversation, ExportTurn
from .verdicts import Judged, judged_comparisons

__all__ = ["Exported", "Tally", "exported_comparisons", "split_of"]


def split_of(uid: str, test_fraction: float) -> str:
    """``"test"`` for a stable ``test_fraction`` share of conversations, else ``"train"``."""
    h = int.from_bytes(hashlib.sha256(uid.encode("utf-8")).digest()[:8], "big")
    return "test" if h / 2**64 < test_fraction else "train"


class Exported(NamedTuple):
    """One line of the export: the comparison it comes from and where it goes."""

    comparison_id: int
    subset: str
    split: str
    chosen: str
    rejected: str
    #: the guidelines' version its conversation was collected under (None: none)
    guidelines_version: int | None = None


@dataclass
class Tally:
    """What a selection saw besides its lines: left out (by reason), kinds, conversations, and
    the red-team conversations (for the attempts file)."""

    left_out: Counter[str] = field(default_factory=Counter)
    #: a qualification round is on: its reason (``not_qualified``) is in the manifest
    qualification: bool = False
    kinds: Counter[str] = field(default_factory=Counter)
    conversations: Counter[str] = field(default_factory=Counter)
    red_team: list[ExportConversation] = field(default_factory=list)
    #: the guidelines' versions of the conversations and the lines (the manifest's entry)
    guidelines: GuidelinesTally = field(default_factory=GuidelinesTally)


def _agreement(storage: Storage) -> tuple[set[tuple[int, int]], set[tuple[int, int]]]:
    from .review import agreed_turns, review_units

    units = review_units(storage)
    reviewed = {(u.conversation_id, u.turn_index) for u in units}
    return agreed_turns(units), reviewed


def _reason(
    conv: ExportConversation,
    turn: ExportTurn,
    comp: ExportComparison,
    min_strength: int,
    include_unfinished: bool,
    agreement: tuple[set[tuple[int, int]], set[tuple[int, int]]] | None,
    unaccepted: str | None = None,
    counted: set[int] | None = None,
) -> str | None:
    """Why the comparison is left out, or None when it is a line (``unaccepted``: why
    ``accepted_only`` leaves it out, :func:`_as_judged`)."""
    if conv.status != "finished" and not include_unfinished:
        return "unfinished"
    if counted is not None and conv.annotator.member_id not in counted:
        return "not_qualified"
    if agreement is not None:
        key = (conv.id, turn.index)
        if key not in agreement[0]:
            return "not_agreed" if key in agreement[1] else "unreviewed"
    involved = [comp.rejected_slot] + ([comp.chosen_slot] if comp.kind == "pick" else [])
    if any(turn.candidates[s].cut for s in involved if s):
        return "cut"
    if comp.chosen_text == comp.rejected_text:
        return "identical"  # before "weak": an identical pair is stored as strength 1
    if unaccepted is not None:  # after "cut" and "identical": those are never judged
        return unaccepted
    if comp.kind == "pick" and comp.strength < min_strength:
        return "weak"
    return None


def _as_judged(
    turn: ExportTurn, comp: ExportComparison, judged: Mapping[int, Judged]
) -> ExportComparison | str:
    """The comparison as its verdict leaves it (a fix applied: the fixed pick and strength,
    chosen and rejected swapped when the fix picks the other response), or why
    ``accepted_only`` leaves it out (``no_verdict``, ``rejected``). An edit follows the
    verdict on its turn's pick."""
    pick_id = next((c.id for c in turn.comparisons if c.kind == "pick"), None)
    verdict = judged.get(comp.id if comp.kind == "pick" else pick_id or -1)
    if verdict is None:
        return "no_verdict"
    if verdict.verdict == "reject":
        return "rejected"
    if comp.kind != "pick" or verdict.fixed_pick is None or verdict.fixed_strength is None:
        return comp
    if verdict.fixed_pick == comp.pick:
        return replace(comp, strength=verdict.fixed_strength)
    return replace(
        comp,
        pick=verdict.fixed_pick,
        strength=verdict.fixed_strength,
        chosen_slot=comp.rejected_slot,
        rejected_slot=comp.chosen_slot,
        chosen_text=comp.rejected_text,
        rejected_text=comp.chosen_text,
    )


def _line(conv: ExportConversation, turn: ExportTurn, comp: ExportComparison) -> tuple[str, str]:
    """``(chosen, rejected)`` of the comparison's line, checked against the stored turns."""
    better, worse = comp.chosen_text, comp.rejected_text
    if conv.mode == "red-team" and comp.kind == "pick":
        better, worse = worse, better  # the annotator picked the MORE harmful response
    prefix = turn.prefix
    chosen, rejected = f"{prefix} {better}", f"{prefix} {worse}"
    earlier = stored_turns(conv, turn.index)
    earlier.append(Turn(HUMAN, f" {turn.human}"))
    for text, response, side in ((chosen, better, "chosen"), (rejected, worse, "rejected")):
        expected = [*earlier, Turn(ASSISTANT, f" {response}")]
        check_line(conv, turn.index, text, expected, f"{side} text")
    return chosen, rejected


def exported_comparisons(
    storage: Storage,
    *,
    min_strength: int = 2,
    test_fraction: float = 0.05,
    subset: str = "helpful-base",
    red_team_subset: str = "harmless-base",
    include_unfinished: bool = False,
    agreed_only: bool = False,
    accepted_only: bool = False,
    tally: Tally | None = None,
) -> Iterator[Exported]:
    """The export's lines with these options (those of :func:`.export.export_collection`),
    in its order; every line checked (:mod:`.export_check`)."""
    tally = tally if tally is not None else Tally()
    agreement = _agreement(storage) if agreed_only else None
    judged = judged_comparisons(storage) if accepted_only else None
    counted = counted_member_ids(storage)  # None: no qualification round, everyone counts
    tally.qualification = counted is not None
    for conv in transcripts.iter_conversations_for_export(storage):
        red = conv.mode == "red-team"
        if red:
            tally.red_team.append(conv)
        tally.conversations["finished" if conv.status == "finished" else "unfinished"] += 1
        tally.guidelines.conversations[conv.guidelines_version] += 1
        target = red_team_subset if red else subset
        split = split_of(conv.uid, test_fraction)
        for turn in conv.turns:
            for stored in turn.comparisons:
                comp = stored if judged is None else _as_judged(turn, stored, judged)
                if isinstance(comp, str):
                    unaccepted, comp = comp, stored
                else:
                    unaccepted = None
                why = _reason(
                    conv,
                    turn,
                    comp,
                    min_strength,
                    include_unfinished,
                    agreement,
                    unaccepted,
                    counted,
                )
                if why is not None:
                    tally.left_out[why] += 1
                    continue
                chosen, rejected = _line(conv, turn, comp)
                tally.kinds[comp.kind] += 1
                yield Exported(comp.id, target, split, chosen, rejected, conv.guidelines_version)
