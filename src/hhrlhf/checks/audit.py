"""The audit's file front end: reads the selected files and feeds :class:`~.runner.CheckRunner`.

Files are read line by line in lenient mode (:func:`hhrlhf.reader.read_objects`), so a line
that is not JSON becomes a ``bad_json`` finding instead of stopping the audit, and every row
of the input is accounted for: ``rows`` counts each decoded row and each bad line. The
checks themselves run in :mod:`.runner`, which needs no files (:func:`~.runner.run_checks`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..layout import DataSource, resolve_source, select_files
from ..progress import progress as progress_bar
from ..reader import Lenient, read_objects
from ..subsets import RED_TEAM
from .base import CheckOptions
from .runner import AuditResult, CheckRunner, build_checks, file_key, missing_for_leaks

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
    missing = missing_for_leaks(
        ((f.subset, f.split, f.red_team, f.reference) for f in files), src.label
    )
    options = CheckOptions(near_duplicates, threshold, num_perm)
    runner = CheckRunner(build_checks(options), missing=missing)
    for f in files:
        if progress:
            progress(f"checking {f.key}" + (" (reference)" if f.reference else ""))
        policy = Lenient(keep_readable=keep_readable)
        runner.start_file(
            f.subset or RED_TEAM if f.red_team else f.subset, f.split, reference=f.reference
        )
        rows = progress_bar(
            read_objects(f.path, lenient=policy), desc=f"check {f.key}", unit="rows"
        )
        for pos, obj in rows:
            if f.red_team:
                runner.red_team_row(pos - 1, obj)
            else:
                runner.row(pos - 1, obj)
        if not f.red_team:
            for s in policy.skipped:
                runner.bad_line(s.line, s.problem)
        runner.end_file(str(f.path))
        runner.result.lost.extend(policy.lost)
    return runner.finish(progress)
