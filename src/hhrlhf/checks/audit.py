"""The audit: every check over the selected files, with counts, reasons and excerpts.

Files are read line by line in lenient mode (:func:`hhrlhf.reader.read_objects`), so a line
that is not JSON becomes a ``bad_json`` finding instead of stopping the audit, and every row
of the input is accounted for: ``rows`` counts each decoded row and each bad line.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..layout import DataSource, resolve_source, select_files
from ..progress import progress as progress_bar
from ..reader import read_objects
from ..records import PreferencePair
from ..subsets import RED_TEAM
from .base import CorpusCheck, PairCheck, RowCheck, Source, SplitCheck
from .duplicates import DuplicatePairs, DuplicatePrompts
from .leak import TrainTestLeak
from .near_duplicates import NearDuplicateLeak
from .pair import PairClasses
from .redteam import RedTeamFields
from .rows import PairShape

__all__ = ["AuditFile", "AuditResult", "audit", "audit_files", "file_key"]


@dataclass(frozen=True, slots=True)
class AuditFile:
    """One file to audit. ``reference``: read only to compare against (never flagged)."""

    subset: str | None
    split: str
    path: Path
    red_team: bool = False
    reference: bool = False

    @property
    def key(self) -> str:
        return file_key(self.subset, self.split)


def file_key(subset, split) -> str:
    return f"{subset or 'file'}/{split}"


def audit_files(subsets=None, *, split: str | None = None, data=None, reference: bool = True):
    """The files an audit reads, in the order of :func:`hhrlhf.layout.select_files`.

    With ``split="test"`` and ``reference=True``, the train files of the same subsets are
    added as reference files (where there are any), so leaks into train can still be found.
    """
    src: DataSource = resolve_source(data)
    names = list(subsets) if subsets and not isinstance(subsets, str) else subsets
    picked = select_files(names, split=split, data=src)
    if split is None or split == "train" or not reference or src.kind == "file":
        return [AuditFile(f.subset, f.split, f.path, f.red_team) for f in picked]
    chosen = {f.key for f in picked}
    with_split = {f.subset for f in picked if not f.red_team}
    out = []
    for f in select_files(names, data=src):  # in order, each train file before its test file
        if f.key in chosen:
            out.append(AuditFile(f.subset, f.split, f.path, f.red_team))
        elif f.subset in with_split and f.split == "train":
            out.append(AuditFile(f.subset, f.split, f.path, f.red_team, True))
    return out


def _missing_for_leaks(files: list[AuditFile], label: str) -> str | None:
    """Why the leak checks cannot run on ``files`` (None when they can)."""
    pairs = [f for f in files if not f.red_team]
    if not pairs:
        return None
    if not any(f.split == "train" for f in pairs):
        return f"no train split in {label} to compare the test prompts with"
    if not any(f.split != "train" and not f.reference for f in pairs):
        return f"no test split in {label} to compare with the train prompts"
    return None


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
        from .registry import CLASSES

        c = Counter(name for names in self.flags.values() for name in names)
        return {name: c.get(name, 0) for name in CLASSES}

    def file_counts(self) -> dict[str, dict[str, int]]:
        out: dict[str, Counter] = {k: Counter() for k in self.files}
        for source, names in self.flags.items():
            out.setdefault(file_key(source[0], source[1]), Counter()).update(list(names))
        return {k: dict(sorted(v.items())) for k, v in out.items()}

    def to_json(self) -> dict:
        fc = self.file_counts()
        return {
            "counts": self.counts,
            "rows": self.rows,
            "flagged_rows": len(self.flags),
            "files": {
                k: {"rows": f["rows"], "path": f["path"], "counts": fc.get(k, {})}
                for k, f in self.files.items()
            },
            "near_duplicates": self.near_duplicates,
            "skipped": dict(self.skipped),
            **({"lost": [_lost_json(e) for e in self.lost]} if self.lost else {}),
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


def _lost_json(exc) -> dict:
    """What a cut file lost, for JSON: the file, lines read, the last good line, why."""
    return {
        "path": exc.path,
        "rows_read": exc.rows_read,
        "last_good_line": exc.last_good_line,
        "problem": exc.problem,
    }


def _excerpt(text: str, n: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= n else flat[: n - 1] + "\u2026"


def audit(
    subsets: Iterable[str] | None = None,
    *,
    split: str | None = None,
    data: str | os.PathLike | DataSource | None = None,
    near_duplicates: bool = True,
    threshold: float = 0.8,
    num_perm: int = 128,
    progress: Callable[[str], None] | None = None,
    keep_readable: bool = False,
) -> AuditResult:
    """Run every check over the selected files (see :data:`hhrlhf.checks.CLASSES`).

    A damaged gzip stream raises :class:`~hhrlhf.errors.TruncatedStreamError`; with
    ``keep_readable`` a cut file is audited up to its damage and recorded in ``lost``."""
    src = resolve_source(data)
    files = audit_files(subsets, split=split, data=src)
    missing = _missing_for_leaks(files, src.label)
    row_check: RowCheck = PairShape()
    red_check: RowCheck = RedTeamFields()
    pair_checks: list[PairCheck] = [PairClasses()]
    split_checks: list[SplitCheck] = [DuplicatePairs(), DuplicatePrompts()]
    corpus: list[CorpusCheck] = []
    result = AuditResult()
    if missing is None:
        corpus.append(TrainTestLeak())
    else:
        result.skipped["train_test_leak"] = missing
    if near_duplicates and missing is None:
        near = NearDuplicateLeak(threshold, num_perm)
        corpus.append(near)
    elif near_duplicates:
        result.skipped["near_duplicate_leak"] = missing
    for f in files:
        if progress:
            progress(f"checking {f.key}" + (" (reference)" if f.reference else ""))
        lost = result.lost if keep_readable else None
        if f.red_team:
            _audit_red_team(f, red_check, result, lost)
        else:
            _audit_pairs(f, row_check, pair_checks, split_checks, corpus, result, lost)
    for check in corpus:
        if progress:
            progress(f"finishing {check.name}")
        for finding in check.finish():
            result.add(finding.source, finding.name, finding.detail)
    if near_duplicates and missing is None:
        result.near_duplicates = {
            "threshold": threshold,
            "num_perm": num_perm,
            "bands": near.bands,
            "rows_per_band": near.rows,
        }
    return result


def _audit_pairs(
    f: AuditFile, row_check, pair_checks, split_checks, corpus, result, lost=None
) -> None:
    skipped: list = []
    n = 0
    for check in split_checks:
        check.start()
    ref = f.reference
    rows = read_objects(f.path, lenient=True, skipped=skipped, lost=lost)
    for pos, obj in progress_bar(rows, desc=f"check {f.key}", unit="rows"):
        index = pos - 1
        source = (f.subset, f.split, index)
        if (
            type(obj) is dict
            and type(obj.get("chosen")) is str
            and type(obj.get("rejected")) is str
        ):
            pair = PreferencePair(obj["chosen"], obj["rejected"], f.subset, f.split, index)
        else:
            pair = None
        n += 1
        if pair is None:
            if not ref:
                for name, detail in row_check.check_row(obj):
                    result.add(source, name, detail, _excerpt(detail))
            continue
        if not ref:
            for check in (*pair_checks, *split_checks):
                for name, detail in check.check_pair(pair):
                    result.add(source, name, detail, _excerpt(pair.chosen))
        for check in corpus:
            check.observe(pair, reference=ref)
        if not ref and (f.subset, f.split, index) in result.flags:
            result.excerpts.setdefault(source, _excerpt(pair.chosen))
        elif not ref and f.split == "test" and pair.prompt_end:
            # leak findings arrive later; keep a short excerpt for the report
            result.excerpts.setdefault(source, _excerpt(pair.chosen))
    if ref:
        return
    for s in skipped:
        n += 1
        result.add(
            (f.subset, f.split, (s.line or 1) - 1), "bad_json", s.problem, _excerpt(s.problem)
        )
    result.rows += n
    result.files[f.key] = {"rows": n, "path": str(f.path)}


def _audit_red_team(f: AuditFile, red_check, result, lost=None) -> None:
    n = 0
    for pos, obj in progress_bar(
        read_objects(f.path, lenient=True, lost=lost), desc=f"check {f.key}", unit="rows"
    ):
        n += 1
        source = (f.subset or RED_TEAM, f.split, pos - 1)
        problems = red_check.check_row(obj)
        if problems:
            text = obj.get("transcript") if type(obj) is dict else None
            excerpt = _excerpt(text) if type(text) is str else _excerpt(str(obj))
            for name, detail in problems:
                result.add(source, name, detail, excerpt)
    result.rows += n
    result.files[file_key(f.subset or RED_TEAM, f.split)] = {"rows": n, "path": str(f.path)}
