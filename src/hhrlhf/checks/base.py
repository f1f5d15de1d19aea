"""The shared contract of every quality check.

A check names the classes it can flag (:class:`CheckClass`: name, severity, what it
means) and says, for each flagged row, which class and why (a short ``detail``), so that
reasons can be counted, reported and used to drop rows. Checks come in four shapes, by what
they need to see:

* :class:`RowCheck` looks at one decoded JSON row before it is a record;
* :class:`PairCheck` looks at one :class:`~hhrlhf.records.PreferencePair`;
* :class:`SplitCheck` remembers what it saw in one file (duplicates);
* :class:`CorpusCheck` sees every selected file and answers at the end (leaks).

``severity`` is ``"error"`` (the row is wrong; ``hh clean`` drops it by default),
``"warning"`` (worth knowing; kept unless asked) or ``"info"`` (counted, not a problem).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = [
    "SEVERITIES",
    "CheckClass",
    "Source",
    "Finding",
    "Check",
    "RowCheck",
    "PairCheck",
    "SplitCheck",
    "CorpusCheck",
]

SEVERITIES = ("error", "warning", "info")

#: Where a row is: (subset, split, index); index is the 0-based row (line - 1 for JSONL).
Source = tuple


@dataclass(frozen=True, slots=True)
class CheckClass:
    """A reason a check can give: its name, severity, and what it means."""

    name: str
    severity: str
    description: str


@dataclass(frozen=True, slots=True)
class Finding:
    """One class flagged on one row, with why (``detail``: a short, human-readable reason)."""

    source: Source
    name: str
    detail: str = ""


class Check:
    """Base of every check: ``classes`` lists the :class:`CheckClass` values it can flag."""

    name: ClassVar[str]
    classes: ClassVar[tuple[CheckClass, ...]]

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


class RowCheck(Check):
    """Checks a decoded row; returns ``[(class, detail), ...]`` (empty when the row is fine)."""

    def check_row(self, obj: Any) -> list[tuple[str, str]]:
        raise NotImplementedError


class PairCheck(Check):
    def check_pair(self, pair) -> Iterable[tuple[str, str]]:
        raise NotImplementedError


class SplitCheck(Check):
    """Stateful over one file: ``start()`` before its first pair, ``check_pair`` for each."""

    def start(self) -> None:
        raise NotImplementedError

    def check_pair(self, pair) -> Iterable[tuple[str, str]]:
        raise NotImplementedError


class CorpusCheck(Check):
    """Sees every pair of every selected file (``observe``), then flags rows in ``finish``.

    ``reference`` is True for pairs read only as a reference (train files read for leak
    detection when the audit is limited to ``--split test``): never flagged, still compared.
    """

    def observe(self, pair, *, reference: bool = False) -> None:
        raise NotImplementedError

    def finish(self) -> list[Finding]:
        raise NotImplementedError
