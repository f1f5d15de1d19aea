"""The registry of checks: adding a check is one new module and one line in ``CHECKS``.

``CHECKS`` maps each check's name to its class, in the order the runner calls them (and so
the order of a flagged row's classes in a report); ``CLASSES`` maps every class a check can
flag to its :class:`~hhrlhf.checks.base.CheckClass`, read from ``CHECKS`` on each use, so
the classes of a registered check are valid ``--drop`` names, counted in every report and,
when their severity is ``error``, dropped by default (:func:`default_drop`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from ..errors import UnknownNameError
from .base import Check, CheckClass
from .duplicates import DuplicatePairs, DuplicatePrompts
from .invisible import InvisibleCharacters
from .leak import TrainTestLeak
from .near_duplicates import NearDuplicateLeak
from .pair import PairClasses
from .redteam import RedTeamFields
from .rows import PairShape

__all__ = ["CHECKS", "CLASSES", "DEFAULT_DROP", "check_class_names", "default_drop"]

CHECKS: dict[str, type[Check]] = {
    c.name: c
    for c in (
        PairShape,
        PairClasses,
        InvisibleCharacters,
        DuplicatePairs,
        DuplicatePrompts,
        TrainTestLeak,
        NearDuplicateLeak,
        RedTeamFields,
    )
}


class ClassMap(Mapping[str, CheckClass]):
    """Every class the registered checks can flag, name -> :class:`CheckClass`, in registry
    order; read from ``CHECKS`` on each use, so a check registered later is in it too."""

    def _classes(self) -> dict[str, CheckClass]:
        return {k.name: k for c in CHECKS.values() for k in c.classes}

    def __getitem__(self, name: str) -> CheckClass:
        return self._classes()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._classes())

    def __len__(self) -> int:
        return len(self._classes())

    def __repr__(self) -> str:
        return f"CLASSES({list(self)})"


CLASSES: Mapping[str, CheckClass] = ClassMap()


def default_drop() -> tuple[str, ...]:
    """What ``hh clean`` drops when no ``--drop`` is given: every ``error`` class."""
    return tuple(n for n, k in CLASSES.items() if k.severity == "error")


#: :func:`default_drop` of the built-in checks.
DEFAULT_DROP: tuple[str, ...] = default_drop()


def check_class_names(names: Iterable[str]) -> list[str]:
    """Validate class names (comma-separated items allowed); raises listing the valid ones."""
    out = []
    for item in names:
        for name in filter(None, (s.strip() for s in item.split(","))):
            if name not in CLASSES:
                raise UnknownNameError("check class", name, list(CLASSES))
            out.append(name)
    return out
