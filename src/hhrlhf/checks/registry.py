"""The check registry: ``CHECKS`` (name -> check class) and ``CLASSES`` (name -> the class
of problem a check can flag), in their own module so that the package and its runner both
import them from here."""

from __future__ import annotations

from .base import Check, CheckClass
from .duplicates import DuplicatePairs, DuplicatePrompts
from .leak import TrainTestLeak
from .near_duplicates import NearDuplicateLeak
from .pair import PairClasses
from .redteam import RedTeamFields
from .rows import PairShape

__all__ = ["CHECKS", "CLASSES"]

CHECKS: dict[str, type[Check]] = {
    c.name: c
    for c in (
        PairShape,
        PairClasses,
        DuplicatePairs,
        DuplicatePrompts,
        TrainTestLeak,
        NearDuplicateLeak,
        RedTeamFields,
    )
}

CLASSES: dict[str, CheckClass] = {k.name: k for c in CHECKS.values() for k in c.classes}
