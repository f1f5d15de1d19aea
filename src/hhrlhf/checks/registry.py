"""The registry of checks: adding a check is one new module and one line in ``CHECKS``.

``CHECKS`` maps each check's name to its class, in the order the runner calls them (and so
the order of a flagged row's classes in a report); ``CLASSES`` maps every class a check can
flag to its :class:`~hhrlhf.checks.base.CheckClass`.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import UnknownNameError
from .base import Check, CheckClass
from .duplicates import DuplicatePairs, DuplicatePrompts
from .leak import TrainTestLeak
from .near_duplicates import NearDuplicateLeak
from .pair import PairClasses
from .redteam import RedTeamFields
from .rows import PairShape

__all__ = ["CHECKS", "CLASSES", "DEFAULT_DROP", "check_class_names"]

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

#: What ``hh clean`` drops when no ``--drop`` is given: every ``error`` class.
DEFAULT_DROP: tuple[str, ...] = tuple(n for n, k in CLASSES.items() if k.severity == "error")


def check_class_names(names: Iterable[str]) -> list[str]:
    """Validate class names (comma-separated items allowed); raises listing the valid ones."""
    out = []
    for item in names:
        for name in filter(None, (s.strip() for s in item.split(","))):
            if name not in CLASSES:
                raise UnknownNameError("check class", name, list(CLASSES))
            out.append(name)
    return out
