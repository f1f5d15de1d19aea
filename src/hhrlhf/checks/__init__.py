"""Quality checks: one module per check, the shared contract in :mod:`.base`.

``CHECKS`` (in :mod:`.registry`) maps each check's name to its class; ``CLASSES`` maps
every class a check can flag to its :class:`~hhrlhf.checks.base.CheckClass` (severity and
meaning). :func:`run_checks` runs them all over records the caller has (no I/O);
:func:`audit` reads the selected files and runs them:

>>> from hhrlhf.checks import CLASSES
>>> CLASSES["duplicate_prompt"].severity
'info'
"""

from __future__ import annotations

from .audit import AuditFile, audit, audit_files
from .base import Check, CheckClass, CheckOptions, Finding
from .near_duplicates import MinHasher
from .registry import CHECKS, CLASSES, DEFAULT_DROP, check_class_names, default_drop
from .runner import AuditResult, CheckRunner, build_checks, run_checks

__all__ = [
    "CHECKS",
    "CLASSES",
    "DEFAULT_DROP",
    "Check",
    "CheckClass",
    "CheckOptions",
    "CheckRunner",
    "Finding",
    "AuditFile",
    "AuditResult",
    "audit",
    "audit_files",
    "build_checks",
    "run_checks",
    "MinHasher",
    "check_class_names",
    "default_drop",
]
