"""Cleaning: a copy of the data without the flagged rows, and a record of every row dropped.

:func:`clean` audits the selected files (:func:`hhrlhf.checks.audit`), then copies them
into ``out`` in the upstream layout (``<subset>/<split>.jsonl.gz``, and the red-team file as
one JSON array). A kept JSONL row is copied byte for byte, so cleaning a file with nothing to
drop gives back its exact lines. Next to the data it writes:

* ``dropped.jsonl``: one line per dropped row: where it was, every reason it was dropped
  for, and the row itself (or, for a line that is not JSON, its text);
* ``manifest.json``: input rows, kept, dropped, dropped per reason (a row dropped for two
  reasons counts under both), per file and in total, and the sha256 of every file written.

A damaged compressed stream (cut short, CRC error) is lost data, not a dropped row: the
audit raises :class:`~hhrlhf.errors.TruncatedStreamError` before anything is written, so
a clean never stands for a file it could not read whole. Only with ``keep_readable=True``
is a *cut* file (every line read intact) cleaned up to its damage: the manifest then
records under ``lost`` (per file and in total) the lines read, the last good line and
that the rest is unreadable, apart from the dropped rows. A CRC error always raises.

``flagged`` (the rows of ``hh pm flag`` to act on, :func:`hhrlhf.reward.flag.read_flags`)
drops those pairs too, each in ``dropped.jsonl`` with its class as the reason and its margin
and ``p_mislabelled`` as the detail; with ``flip=True`` they are kept with chosen and rejected
swapped instead (``flipped`` in the manifest lists each), the weaker choice: removing
doubtful pairs did better than reversing them in PrefCleanBench, and a flag is a model's
disagreement, not proof of a reversed label.

``rows == kept + dropped`` holds for every file and for the total; the function checks it
before returning and raises if it ever does not.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import orjson

from .checks import AuditResult, audit, check_class_names, default_drop
from .checks.audit import audit_files, file_key
from .download import sha256_file
from .errors import HHError, OutputError, TruncatedStreamError
from .reader import iter_lines, read_objects
from .subsets import RED_TEAM, SUBSETS

__all__ = ["clean", "CleanResult"]

CleanResult = dict


def _gzip_writer(path: Path):
    from isal import igzip

    return igzip.open(path, "wb")


def _out_path(subset: str | None, split: str, src: Path) -> str:
    if subset == RED_TEAM:
        return SUBSETS[RED_TEAM].files[0].path
    return f"{split}.jsonl.gz" if subset is None else f"{subset}/{split}.jsonl.gz"


def clean(
    subsets: Iterable[str] | None = None,
    *,
    out: str | os.PathLike,
    split: str | None = None,
    data=None,
    drop: Iterable[str] | None = None,
    threshold: float = 0.8,
    result: AuditResult | None = None,
    progress=None,
    keep_readable: bool = False,
    flagged: dict | None = None,
    flip: bool = False,
) -> dict:
    """Write the cleaned copy, ``dropped.jsonl`` and ``manifest.json``; return the manifest.

    ``drop`` names the classes to drop (default :func:`hhrlhf.checks.default_drop`, every
    ``error`` class). Near-duplicate detection runs only when ``near_duplicate_leak`` is
    dropped. ``result`` reuses an audit already run on the same selection.
    """
    drop_set = set(check_class_names(drop)) if drop is not None else set(default_drop())
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise OutputError(out, "directory is not empty; choose a new --out directory")
    if result is None:
        result = audit(
            subsets,
            split=split,
            data=data,
            near_duplicates="near_duplicate_leak" in drop_set,
            threshold=threshold,
            progress=progress,
            keep_readable=keep_readable,
        )
    flips = _apply_flags(result, flagged or {}, drop_set, flip)
    out.mkdir(parents=True, exist_ok=True)
    files = [f for f in audit_files(subsets, split=split, data=data, reference=False)]
    manifest_files: dict[str, dict] = {}
    checksums: dict[str, str] = {}
    dropped_path = out / "dropped.jsonl"
    total: Counter[str] = Counter()
    by_reason: Counter[str] = Counter()
    with open(dropped_path, "wb") as dropped:
        for f in files:
            rel = _out_path(f.subset, f.split, f.path)
            if progress:
                progress(f"writing {rel}")
            stats = _clean_one(f, out / rel, result, drop_set, dropped, keep_readable, flips)
            checksums[rel] = sha256_file(out / rel)
            stats["input"] = str(f.path)
            manifest_files[rel] = stats
            total.update({k: stats[k] for k in ("rows", "kept", "dropped")})
            by_reason.update(stats["dropped_by_reason"])
    checksums["dropped.jsonl"] = sha256_file(dropped_path)
    manifest = _manifest(data, drop_set, total, by_reason, manifest_files, checksums)
    if flips:
        manifest["flipped"] = [
            {"subset": k[0], "split": k[1], "index": k[2], "reason": v} for k, v in flips.items()
        ]
    skipped = {k: v for k, v in result.skipped.items() if k in drop_set}
    if skipped:  # a class asked to be dropped whose check could not run on this data
        manifest["skipped"] = skipped
    if total["rows"] != total["kept"] + total["dropped"]:  # pragma: no cover - guarded above
        raise HHError("row accounting failed: rows != kept + dropped")
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def _clean_one(f, target: Path, result: AuditResult, drop_set, dropped, keep_readable, flips):
    """Clean one audited file into ``target`` (dropped rows to ``dropped``); its manifest
    entry, checked: rows read = kept + dropped = the rows the audit saw."""
    target.parent.mkdir(parents=True, exist_ok=True)
    subset = f.subset or (RED_TEAM if f.red_team else None)
    clean_file = _clean_array if f.red_team else _clean_jsonl
    lost: list = []
    stats = clean_file(
        f.path,
        target,
        subset,
        f.split,
        result,
        drop_set,
        dropped,
        lost if keep_readable else None,
        **({"flips": flips} if flips else {}),
    )
    if lost:
        stats["lost"] = lost[0].lost_json(path=False)
    expected = result.files.get(file_key(subset, f.split), {}).get("rows")
    if stats["rows"] != stats["kept"] + stats["dropped"] or (
        expected is not None and expected != stats["rows"]
    ):
        raise HHError(
            f"{f.path}: row accounting failed (audit saw {expected}, clean read "
            f"{stats['rows']}, kept {stats['kept']}, dropped {stats['dropped']})"
        )
    return stats


def _manifest(data, drop_set, total: Counter, by_reason: Counter, files: dict, checksums: dict):
    """The manifest's totals, per-file entries and checksums."""
    return {
        "input": str(data) if data is not None else "cache",
        "drop": sorted(drop_set),
        "rows": total["rows"],
        "kept": total["kept"],
        "dropped": total["dropped"],
        "dropped_by_reason": dict(sorted(by_reason.items())),
        **(
            {"lost": {k: v["lost"] for k, v in files.items() if "lost" in v}}
            if any("lost" in v for v in files.values())
            else {}
        ),
        "files": files,
        "sha256": checksums,
    }


def _apply_flags(result: AuditResult, flagged: dict, drop_set: set, flip: bool) -> dict:
    """Add the pairs of ``hh pm flag`` to drop (their class a reason) to ``result`` and
    ``drop_set``, or, with ``flip``, return them (source -> reason) to flip; a flagged pair
    that is not in the audited files is an error (the flags belong to other data)."""
    flips = {}
    for source, row in flagged.items():
        info = result.files.get(file_key(source[0], source[1]))
        if info is None or source[2] >= info.get("rows", 0):
            raise HHError(
                f"the flags name pair {source[0]}/{source[1]}/{source[2]}, which is not in "
                "the data being cleaned (flags of other data?)"
            )
        detail = f"hh pm flag: margin {row['margin']:.3f}, p_mislabelled {row['p_mislabelled']:.3f}"
        if flip:
            flips[source] = f"{row['class']} ({detail})"
        else:
            result.add(source, row["class"], detail)
            drop_set.add(row["class"])
    return flips


def _lines(path, lost: list | None):
    """:func:`iter_lines`; a cut stream goes to ``lost`` (when given) and ends the lines."""
    try:
        yield from iter_lines(path)
    except TruncatedStreamError as exc:
        if lost is None or exc.kind != "truncated":
            raise
        lost.append(exc)


def _reasons(result: AuditResult, source, drop_set) -> dict[str, str]:
    return {k: v for k, v in result.classes_of(source).items() if k in drop_set}


def _record(dropped, source, line, reasons, row=None, raw=None) -> None:
    entry = {
        "source": {"subset": source[0], "split": source[1], "index": source[2]},
        "line": line,
        "reasons": sorted(reasons),
        "details": {k: v for k, v in sorted(reasons.items()) if v},
    }
    if raw is not None:
        entry["raw"] = raw
    else:
        entry["row"] = row
    dropped.write(
        orjson.dumps(entry, option=orjson.OPT_APPEND_NEWLINE | orjson.OPT_SERIALIZE_NUMPY)
    )


def _clean_jsonl(path, target, subset, split, result, drop_set, dropped, lost, flips=None) -> dict:
    """Copy the kept lines of a JSONL file byte for byte (a pair of ``flips`` with chosen and
    rejected swapped); ``lost`` (when given) takes a cut stream instead of raising."""
    rows = kept = dropped_n = flipped = 0
    reasons_count: Counter[str] = Counter()
    with _gzip_writer(target) as w:
        for lineno, line in _lines(path, lost):
            if not line.strip():
                continue  # a blank line holds no row (the reader skips it too)
            rows += 1
            source = (subset, split, lineno - 1)
            reasons = _reasons(result, source, drop_set)
            if not reasons:
                if flips and source in flips:
                    line, flipped = _flipped(line), flipped + 1
                w.write(line if line.endswith(b"\n") else line + b"\n")
                kept += 1
                continue
            dropped_n += 1
            reasons_count.update(list(reasons))
            try:
                _record(dropped, source, lineno, reasons, row=orjson.loads(line))
            except orjson.JSONDecodeError:
                _record(dropped, source, lineno, reasons, raw=line.decode("utf-8", "replace"))
    return {
        "rows": rows,
        "kept": kept,
        "dropped": dropped_n,
        "dropped_by_reason": dict(sorted(reasons_count.items())),
        **({"flipped": flipped} if flips else {}),
    }


def _flipped(line: bytes) -> bytes:
    """The JSONL row with its ``chosen`` and ``rejected`` swapped."""
    row = orjson.loads(line)
    row["chosen"], row["rejected"] = row["rejected"], row["chosen"]
    return orjson.dumps(row, option=orjson.OPT_APPEND_NEWLINE)


def _clean_array(path, target, subset, split, result, drop_set, dropped, lost, flips=None) -> dict:
    rows = kept = dropped_n = 0
    reasons_count: Counter[str] = Counter()
    with _gzip_writer(target) as w:
        w.write(b"[")
        for pos, obj in read_objects(path, lost=lost):
            rows += 1
            source = (subset, split, pos - 1)
            reasons = _reasons(result, source, drop_set)
            if reasons:
                dropped_n += 1
                reasons_count.update(list(reasons))
                _record(dropped, source, pos, reasons, row=obj)
                continue
            w.write((", " if kept else "").encode() + json.dumps(obj, ensure_ascii=False).encode())
            kept += 1
        w.write(b"]")
    return {
        "rows": rows,
        "kept": kept,
        "dropped": dropped_n,
        "dropped_by_reason": dict(sorted(reasons_count.items())),
    }
