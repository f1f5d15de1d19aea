"""The check runner: every registered check over records, with no I/O.

:func:`run_checks` works on records the caller already has (pairs loaded with
:func:`hhrlhf.load_dataset`, attempts, rows a web app holds); :func:`hhrlhf.checks.audit`
is the front end that reads files and feeds the same :class:`CheckRunner`, adding what only
a file can have (lines that are not JSON, cut files). Both return an :class:`AuditResult`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..records import PreferencePair, RedTeamAttempt
from ..subsets import RED_TEAM
from .base import Check, CheckOptions, Source
from .registry import CHECKS, CLASSES

__all__ = ["AuditResult", "CheckRunner", "build_checks", "file_key", "run_checks"]


def file_key(subset, split) -> str:
    return f"{subset or 'file'}/{split}"


def excerpt(text: str, n: int = 100) -> str:
    """``text`` on one line, cut to ``n`` characters (an ellipsis marks the cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= n else flat[: n - 1] + "\u2026"


@dataclass
class AuditResult:
    """What an audit found: ``flags[source] = {class: detail}``, rows per file, excerpts."""

    rows: int = 0
    files: dict[str, dict] = field(default_factory=dict)
    flags: dict[Source, dict[str, str]] = field(default_factory=dict)
    excerpts: dict[Source, str] = field(default_factory=dict)
    near_duplicates: dict | None = None
    #: checks that could not run on the data at hand: ``{check: why}``
    skipped: dict[str, str] = field(default_factory=dict)
    #: Cut files read up to their damage (``audit(keep_readable=True)`` only).
    lost: list = field(default_factory=list)

    def add(self, source: Source, name: str, detail: str = "", excerpt: str | None = None):
        self.flags.setdefault(source, {})[name] = detail
        if excerpt is not None and source not in self.excerpts:
            self.excerpts[source] = excerpt

    @property
    def counts(self) -> dict[str, int]:
        """Rows flagged per class (every known class, 0 when absent)."""
        c = Counter(name for names in self.flags.values() for name in names)
        return {name: c.get(name, 0) for name in CLASSES}

    def file_counts(self) -> dict[str, dict[str, int]]:
        out: dict[str, Counter] = {k: Counter() for k in self.files}
        for source, names in self.flags.items():
            out.setdefault(file_key(source[0], source[1]), Counter()).update(list(names))
        return {k: dict(sorted(v.items())) for k, v in out.items()}

    def rows_of(self, name: str) -> list[str]:
        """``subset/split/index`` of every row flagged with class ``name``, in order."""
        return [f"{s[0]}/{s[1]}/{s[2]}" for s, names in self.flags.items() if name in names]

    def to_json(self) -> dict:
        fc = self.file_counts()
        return {
            "counts": self.counts,
            # the rows strict chat templates reject (hh export --merge-consecutive joins them)
            "non_alternating_rows": self.rows_of("non_alternating"),
            "rows": self.rows,
            "flagged_rows": len(self.flags),
            "files": {
                k: {"rows": f["rows"], "path": f["path"], "counts": fc.get(k, {})}
                for k, f in self.files.items()
            },
            "near_duplicates": self.near_duplicates,
            "skipped": dict(self.skipped),
            **({"lost": [e.lost_json() for e in self.lost]} if self.lost else {}),
        }

    def report_rows(self) -> Iterable[dict]:
        """One dict per flagged row: source, classes, details, a short excerpt."""
        for source, names in self.flags.items():
            yield {
                "source": {"subset": source[0], "split": source[1], "index": source[2]},
                "classes": sorted(names),
                "details": {k: v for k, v in sorted(names.items()) if v},
                "excerpt": self.excerpts.get(source, ""),
            }

    def classes_of(self, source: Source) -> dict[str, str]:
        return self.flags.get(source, {})


def build_checks(options: CheckOptions | None = None) -> list[Check]:
    """One instance of every registered check the options leave on, in registry order."""
    options = options or CheckOptions()
    return [c for c in (cls.create(options) for cls in CHECKS.values()) if c is not None]


def missing_for_leaks(files: Iterable[tuple[str | None, str, bool, bool]], label: str):
    """Why the train/test checks cannot run (None when they can).

    ``files``: ``(subset, split, red_team, reference)`` for each file or group of records."""
    pairs = [f for f in files if not f[2]]
    if not pairs:
        return None
    if not any(f[1] == "train" for f in pairs):
        return f"no train split in {label} to compare the test prompts with"
    if not any(f[1] != "train" and not f[3] for f in pairs):
        return f"no test split in {label} to compare with the train prompts"
    return None


class CheckRunner:
    """Feeds rows to the checks, one file (or group of records) at a time.

    Call :meth:`start_file`, then :meth:`row` for each decoded row (or :meth:`pair` /
    :meth:`red_team_row` when the caller has already sorted them), :meth:`end_file`, and
    :meth:`finish` once at the end. ``missing``: why the train/test checks cannot run on the
    data at hand (they are then left out and named in ``result.skipped``).
    """

    def __init__(self, checks: list[Check], *, missing: str | None = None):
        self.result = AuditResult()
        if missing is not None:
            for c in checks:
                if c.needs_train_and_test:
                    self.result.skipped[c.name] = missing
            checks = [c for c in checks if not c.needs_train_and_test]
        self.checks = checks
        self._by_kind: dict[str, list[Check]] = {"row": [], "pair": [], "red_team": []}
        for c in checks:
            self._by_kind[c.looks_at].append(c)
        self._file: tuple = (None, None, False)
        self._n = 0

    def start_file(self, subset: str | None, split: str, *, reference: bool = False) -> None:
        """A new file (or group) begins; ``reference`` rows are compared with, never flagged."""
        self._file = (subset, split, reference)
        self._n = 0
        for c in self.checks:
            c.start()

    def row(self, index: int, obj: Any) -> None:
        """A decoded preference row (a pair when it has string ``chosen`` and ``rejected``)."""
        subset, split, _ = self._file
        if (
            type(obj) is dict
            and type(obj.get("chosen")) is str
            and type(obj.get("rejected")) is str
        ):
            self.pair(PreferencePair(obj["chosen"], obj["rejected"], subset, split, index))
            return
        self._n += 1
        if self._file[2]:
            return
        source = (subset, split, index)
        for c in self._by_kind["row"]:
            for name, detail in c.check(obj):
                self.result.add(source, name, detail, excerpt(detail))

    def pair(self, pair: PreferencePair) -> None:
        self._n += 1
        if self._file[2]:
            for c in self._by_kind["pair"]:
                c.reference(pair)
            return
        source = (pair.subset, pair.split, pair.index)
        for c in self._by_kind["pair"]:
            for name, detail in c.check(pair):
                self.result.add(source, name, detail, excerpt(pair.chosen))
        if source in self.result.flags or (pair.split == "test" and pair.prompt_end):
            # leak findings arrive later; keep a short excerpt for the report
            self.result.excerpts.setdefault(source, excerpt(pair.chosen))

    def bad_line(self, line: int | None, problem: str) -> None:
        """A line the reader could not decode (``bad_json``)."""
        self._n += 1
        if self._file[2]:
            return
        subset, split, _ = self._file
        self.result.add((subset, split, (line or 1) - 1), "bad_json", problem, excerpt(problem))

    def red_team_row(self, index: int, obj: Any) -> None:
        """A decoded red-team row."""
        self._n += 1
        subset, split, _ = self._file
        source = (subset or RED_TEAM, split, index)
        for c in self._by_kind["red_team"]:
            problems = list(c.check(obj))
            if problems:
                text = obj.get("transcript") if type(obj) is dict else None
                cut = excerpt(text) if type(text) is str else excerpt(str(obj))
                for name, detail in problems:
                    self.result.add(source, name, detail, cut)

    def end_file(self, path: str = "") -> None:
        """The file is done: its rows are counted (reference files are not)."""
        subset, split, reference = self._file
        if reference:
            return
        self.result.rows += self._n
        self.result.files[file_key(subset, split)] = {"rows": self._n, "path": path}

    def finish(self, progress=None) -> AuditResult:
        """Collects the findings of the checks that compare across files."""
        for c in self.checks:
            if not c.needs_train_and_test and type(c).finish is Check.finish:
                continue
            if progress:
                progress(f"finishing {c.name}")
            for finding in c.finish():
                self.result.add(finding.source, finding.name, finding.detail)
            settings = c.settings()
            if settings is not None:
                self.result.near_duplicates = settings
        return self.result


def run_checks(
    records: Iterable[PreferencePair | RedTeamAttempt | dict],
    *,
    options: CheckOptions | None = None,
    label: str = "the records",
) -> AuditResult:
    """Every registered check over ``records`` the caller already has (no file is read).

    Pairs are grouped by their ``(subset, split)``, in the order first seen, and their
    ``index`` names them in the result; :class:`~hhrlhf.records.RedTeamAttempt` values (or
    red-team rows as dicts with a ``transcript``) are checked as red-team rows, indexed by
    their position when they carry no ``index``. A dict with ``chosen``/``rejected`` is a
    preference row: checked as a pair when both are strings, as a bad row otherwise.
    """
    groups: dict[tuple, list] = {}
    for pos, rec in enumerate(records):
        if isinstance(rec, PreferencePair):
            groups.setdefault((rec.subset, rec.split, False), []).append(rec)
        elif isinstance(rec, RedTeamAttempt):
            index = pos if rec.index is None else rec.index
            groups.setdefault((RED_TEAM, "train", True), []).append(
                (index, rec.to_dict(real_keys=True))
            )
        elif type(rec) is dict and "transcript" in rec:
            groups.setdefault((RED_TEAM, "train", True), []).append((pos, rec))
        else:
            groups.setdefault((None, "file", False), []).append((pos, rec))
    missing = missing_for_leaks(((s, sp, red, False) for s, sp, red in groups), label)
    runner = CheckRunner(build_checks(options), missing=missing)
    for (subset, split, red), items in groups.items():
        runner.start_file(subset, split)
        for item in items:
            if red:
                runner.red_team_row(*item)
            elif isinstance(item, PreferencePair):
                runner.pair(item)
            else:
                runner.row(*item)
        runner.end_file()
    return runner.result if not runner.checks else runner.finish()
