"""Quality checks: one module per check, the shared contract in :mod:`.base`.

``CHECKS`` maps each check's name to its class; ``CLASSES`` maps every class a check can
flag to its :class:`~hhrlhf.checks.base.CheckClass` (severity and meaning). ``audit()``
runs them all:

>>> from hhrlhf.checks import CLASSES
>>> CLASSES["duplicate_prompt"].severity
'info'
"""

from __future__ import annotations

from collections.abc import Iterable

from .audit import AuditResult, audit, audit_files
from .base import Check, CheckClass, Finding
from .near_duplicates import MinHasher
from .registry import CHECKS, CLASSES

__all__ = [
    "CHECKS",
    "CLASSES",
    "DEFAULT_DROP",
    "Check",
    "CheckClass",
    "Finding",
    "AuditResult",
    "audit",
    "audit_files",
    "MinHasher",
    "check_class_names",
]

#: What ``hh clean`` drops when no ``--drop`` is given: every ``error`` class.
DEFAULT_DROP: tuple[str, ...] = tuple(n for n, k in CLASSES.items() if k.severity == "error")


def check_class_names(names: Iterable[str]) -> list[str]:
    """Validate class names (comma-separated items allowed); raises listing the valid ones."""
    from ..errors import UnknownSubsetError

    out = []
    for item in names:
        for name in filter(None, (s.strip() for s in item.split(","))):
            if name not in CLASSES:
                raise UnknownSubsetError(name, list(CLASSES))
            out.append(name)
    return out
