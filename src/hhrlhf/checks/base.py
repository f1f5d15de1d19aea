"""The shared contract of every quality check.

A check names the classes it can flag (:class:`CheckClass`: name, severity, what it
means) and answers one question, :meth:`Check.check`: is this item flagged, and why? It
returns ``[(class, detail), ...]`` (empty when the item is fine). ``looks_at`` says what the
item is:

* ``"row"``: a decoded preference row that is not a pair (not an object, or ``chosen`` /
  ``rejected`` missing or not strings);
* ``"pair"``: a :class:`~hhrlhf.records.PreferencePair`;
* ``"red_team"``: a decoded red-team row.

Checks that remember what they saw override the optional hooks: :meth:`Check.start` (a new
file begins: duplicates are per file), :meth:`Check.reference` (a pair read only to compare
against, never flagged: the train files read for leak detection when the audit is limited to
``--split test``) and :meth:`Check.finish` (flag rows once everything was seen: leaks).
``needs_train_and_test`` marks checks that compare test prompts with train prompts: the
runner skips them, saying why, when the data lacks either split.

``severity`` is ``"error"`` (the row is wrong; ``hh clean`` drops it by default),
``"warning"`` (worth knowing; kept unless asked) or ``"info"`` (counted, not a problem).

Adding a check is one new module with a :class:`Check` subclass and one line in
:data:`hhrlhf.checks.CHECKS`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = [
    "SEVERITIES",
    "CheckClass",
    "CheckOptions",
    "Source",
    "Finding",
    "Check",
]

SEVERITIES = ("error", "warning", "info")

#: Where a row is: (subset, split, index); index is the 0-based row (line - 1 for JSONL).
Source = tuple[str | None, str | None, int | None]


@dataclass(frozen=True, slots=True)
class CheckClass:
    """A reason a check can give: its name, severity, and what it means."""

    name: str
    severity: str
    description: str


@dataclass(frozen=True, slots=True)
class CheckOptions:
    """The options an audit passes to :meth:`Check.create` (near-duplicate settings)."""

    near_duplicates: bool = True
    threshold: float = 0.8
    num_perm: int = 128


@dataclass(frozen=True, slots=True)
class Finding:
    """One class flagged on one row, with why (``detail``: a short, human-readable reason)."""

    source: Source
    name: str
    detail: str = ""


class Check(ABC):
    """Base of every check: ``classes`` lists the :class:`CheckClass` values it can flag."""

    name: ClassVar[str]
    classes: ClassVar[tuple[CheckClass, ...]]
    #: What :meth:`check` is given: ``"row"``, ``"pair"`` or ``"red_team"``.
    looks_at: ClassVar[str] = "pair"
    #: Compares test prompts with train prompts (skipped when the data lacks either).
    needs_train_and_test: ClassVar[bool] = False

    @classmethod
    def create(cls, options: CheckOptions) -> Check | None:
        """The check to run with ``options``, or None when the options turn it off."""
        return cls()

    @abstractmethod
    def check(self, item: Any) -> Iterable[tuple[str, str]]:
        """``[(class, detail), ...]`` for ``item`` (empty when it is fine)."""

    def start(self) -> None:  # noqa: B027 - an optional hook
        """A new file begins (checks that remember rows per file reset here)."""

    def reference(self, pair: Any) -> None:  # noqa: B027 - an optional hook
        """A pair read only to compare against: remembered, never flagged."""

    def finish(self) -> Iterable[Finding]:
        """Rows flagged once every file was seen (checks that compare across files)."""
        return ()

    def settings(self) -> dict[str, Any] | None:
        """The settings a report shows with the findings (the near-duplicate parameters)."""
        return None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"
