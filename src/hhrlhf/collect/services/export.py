"""Export collected comparisons in the upstream HH-RLHF layout, with a manifest of what was left out.

One line per comparison: ``chosen``/``rejected`` are the transcript up to the turn (earlier
assistant turns being the responses the conversation continued with) plus the response, so
:attr:`hhrlhf.records.PreferencePair.prompt` is the turn's prefix exactly.

- helpful comparisons go to ``<subset>/{train,test}.jsonl.gz`` (default ``helpful-base``);
- red-team comparisons go to ``<red_team_subset>`` (default ``harmless-base``) with the roles
  swapped: the annotator picked the MORE harmful response, so ``chosen`` is the other one;
- an edit is one more line, the edited text chosen over the original picked response; edits are
  kept whatever the strength (the annotator rewrote the response: the edit is taken as better);
- only pick comparisons with ``strength >= min_strength`` (default 2: the weakest point,
  "slightly better / unsure", is left out, as upstream);
- train/test by a stable hash of the conversation's ``uid``, so no conversation straddles them;
- a split with no rows gets no file (an empty file makes ``datasets.load_dataset("json",
  data_dir=...)`` fail): the manifest counts it as 0 rows and names it under ``empty_splits``;
- every line is checked before anything is written: its ``chosen`` and ``rejected`` (and a
  red-team attempt's ``transcript``) parse back, with :func:`hhrlhf.transcript.parse_transcript`,
  to exactly the turns stored for that comparison; otherwise the export stops with an error
  naming the conversation (:class:`ExportCheckError`), and nothing is written;
- finished red-team conversations also go to ``red-team-attempts/red_team_attempts.jsonl.gz``,
  ONE JSON array with the upstream keys and spelling (``task_descripton_harmlessness_score``):
  the transcript as continued, the rating, the task description, ``num_params``/``model_type``
  as recorded with the responses when they were generated (rows from before that was
  recorded: from the backend's config given to the export, else the backend's name and
  ``"unknown"``), ``red_team_member_id`` (the annotator's stable
  integer), ``is_upworker`` (annotator attribute, default false), ``tags`` null. Scores come
  from a preference model (``scorer``): the transcript's is the minimum over its assistant turns,
  each scored in its context; the task description's is the description scored as a response
  with no context. Without a scorer both are ``null``.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypedDict

import orjson

from ...errors import ExportCheckError, HHError, UnknownNameError
from ...outputs import check_writable, replace_dir, write_atomic
from ...subsets import SUBSETS
from ..config import BackendConfig
from ..db import Storage
from .attempts import RedTeamAttempt, load_scorer, red_team_attempts
from .export_select import Tally, exported_comparisons, split_of

__all__ = [
    "Manifest",
    "export_collection",
    "red_team_attempts",
    "split_of",
    "MANIFEST",
    "FORMAT",
    "RED_TEAM_ATTEMPTS",
    "ExportCheckError",
]

MANIFEST = "manifest.json"
RED_TEAM_ATTEMPTS = "red-team-attempts/red_team_attempts.jsonl.gz"
#: what ``num_params`` says when the conversation's backend has no ``num_params`` in the config
FORMAT = "hhrlhf-collect-export/1"
SPLITS = ("train", "test")

#: the lines of each ``(subset, split)`` file, each a JSON object and a newline
Rows = dict[tuple[str, str], list[bytes]]


class FileEntry(TypedDict):
    """A written file in the manifest: its rows, size and SHA-256."""

    rows: int
    bytes: int
    sha256: str


class AttemptsEntry(TypedDict):
    """The red-team attempts file in the manifest: its rows, the scorer, the conversations
    left out (by reason) and the backends without ``model_type``/``num_params``."""

    rows: int
    scorer: str | None
    left_out: dict[str, int]
    unconfigured_backends: list[str]


class _ManifestKeys(TypedDict):
    format: str
    min_strength: int
    test_fraction: float
    subsets: dict[str, dict[str, int]]
    empty_splits: list[str]
    rows: int
    comparisons: dict[str, int]
    conversations: dict[str, int]
    left_out: dict[str, int]
    left_out_reasons: dict[str, str]
    red_team_attempts: AttemptsEntry
    files: dict[str, FileEntry]


class Manifest(_ManifestKeys, total=False):
    """``manifest.json``: what the export wrote and what it left out, and why
    (``agreed_only``, ``accepted_only`` only when asked for: a plain export's manifest is
    unchanged)."""

    agreed_only: bool
    accepted_only: bool
    #: only when some conversation was collected under published guidelines
    guidelines: dict[str, Any]


@dataclass(frozen=True, slots=True)
class _Options:
    """Which comparisons become lines, and where they go (:func:`export_collection`)."""

    min_strength: int
    test_fraction: float
    subset: str
    red_team_subset: str
    include_unfinished: bool
    agreed_only: bool
    accepted_only: bool = False

    def check(self) -> None:
        _check_subset(self.subset, "--subset")
        _check_subset(self.red_team_subset, "--red-team-subset")
        if self.subset == self.red_team_subset:
            raise HHError("helpful and red-team comparisons need different subsets")
        if not 0 <= self.test_fraction <= 1:
            raise HHError(f"--test-fraction {self.test_fraction}: must be between 0 and 1")
        if self.min_strength < 1:
            raise HHError(f"--min-strength {self.min_strength}: must be at least 1")


def _check_subset(name: str, option: str) -> None:
    subset = SUBSETS.get(name)
    if subset is None or "test" not in getattr(subset, "splits", ()):
        known = [n for n, s in SUBSETS.items() if "test" in getattr(s, "splits", ())]
        # "expected one of: ...; did you mean ...?" as everywhere a name is looked up
        raise HHError(f"{option}: {UnknownNameError('preference subset', name, known)}")


def _gzip_bytes(lines: list[bytes]) -> bytes:
    buf = io.BytesIO()
    # mtime=0 and no file name: the same rows give the same bytes
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0) as gz:
        for line in lines:
            gz.write(line)
    return buf.getvalue()


def database_files(url: str) -> list[tuple[Path, str]]:
    """The files of the SQLite database at ``url`` (the db, its ``-wal`` and ``-shm``), which
    an export's folder may never be or hold; none for PostgreSQL, an in-memory database, or a
    URL that is no database's (opening it says what is wrong)."""
    from ..db.engine import sqlite_file

    try:
        db = sqlite_file(url)
    except Exception:  # SQLAlchemy's ArgumentError: said when the database is opened
        return []
    if db is None:
        return []
    return [(db, "the database")] + [
        (db.with_name(db.name + end), f"the database's {end[1:]} file") for end in ("-wal", "-shm")
    ]


def _model_name(model: Any) -> str | None:
    return None if model is None else type(model).__name__


def export_collection(
    storage: Storage,
    out_dir: str | os.PathLike[str],
    *,
    min_strength: int = 2,
    test_fraction: float = 0.05,
    subset: str = "helpful-base",
    red_team_subset: str = "harmless-base",
    include_unfinished: bool = False,
    agreed_only: bool = False,
    accepted_only: bool = False,
    force: bool = False,
    backends: Mapping[str, BackendConfig] | None = None,
    scorer: Any = None,
    comparison_ids: dict[tuple[str, str, int], int] | None = None,
    _in_place: bool = False,
) -> Manifest:
    """Write the export under ``out_dir``; returns the manifest (also written as ``manifest.json``).

    The files are written into a new folder beside ``out_dir`` and swapped in when all are
    written, so an export that fails or is interrupted leaves ``out_dir`` as it was (with
    ``force``: the old export, whole), never a mix of old and new files. ``out_dir`` may be
    new, empty, or (with ``force``) an earlier hhrlhf output holding nothing else
    (:mod:`hhrlhf.outputs`); it may never be or hold the SQLite database the export reads.

    ``backends`` (name -> :class:`~hhrlhf.collect.config.BackendConfig`) gives the red-team
    attempts their ``model_type``/``num_params``; ``scorer`` (a saved preference model's folder,
    or a model with ``score(prompts, responses)``) gives them their harmlessness scores.
    ``comparison_ids``, when given, is filled with the comparison of every line written, by
    ``(subset, split, index)`` (the lines are :func:`.export_select.exported_comparisons`).
    """
    options = _Options(
        min_strength,
        test_fraction,
        subset,
        red_team_subset,
        include_unfinished,
        agreed_only,
        accepted_only,
    )
    options.check()
    out_dir = Path(out_dir)
    if not _in_place:
        # a new folder beside out_dir, marked and swapped in when all is written; out_dir is
        # replaced only when it is an earlier hhrlhf output holding nothing else (and force)
        reads = database_files(storage.url)
        check_writable(out_dir, kind="dir", force=force, option="--out", reads=reads)
        with replace_dir(out_dir, command="hh collect export", reads=reads) as stage:
            return _export_in_place(
                storage,
                stage,
                **asdict(options),
                force=True,
                backends=backends,
                scorer=scorer,
                comparison_ids=comparison_ids,
                _in_place=True,
            )
    return _write_export(storage, out_dir, options, backends, scorer, comparison_ids)


def _write_export(
    storage: Storage,
    out_dir: Path,
    options: _Options,
    backends: Mapping[str, BackendConfig] | None,
    scorer: Any,
    comparison_ids: dict[tuple[str, str, int], int] | None,
) -> Manifest:
    """The export written straight into ``out_dir``: every line selected and checked (and
    the attempts scored) before the first file is written, the manifest last."""
    out_dir.mkdir(parents=True, exist_ok=True)
    storage.check_current()
    model = load_scorer(scorer)  # a bad --scorer fails before any file is written
    tally = Tally()
    rows = _select_rows(storage, options, tally, comparison_ids)
    empty = sorted(f"{name}/{sp}.jsonl.gz" for (name, sp), lines in rows.items() if not lines)
    for rel in empty:  # written in place with --force over an export that had rows there
        (out_dir / rel).unlink(missing_ok=True)
    # checked (and scored) before any file is written: a bad line writes nothing
    attempts, attempts_left_out, unconfigured = red_team_attempts(
        tally.red_team, backends=backends, scorer=model
    )
    files = _write_files(out_dir, rows, attempts)
    attempts_entry: AttemptsEntry = {
        "rows": len(attempts),
        "scorer": str(scorer) if isinstance(scorer, (str, os.PathLike)) else _model_name(model),
        "left_out": {
            "unfinished": attempts_left_out["unfinished"],
            "no_turns": attempts_left_out["no_turns"],
        },
        "unconfigured_backends": unconfigured,
    }
    manifest = _manifest(options, rows, empty, files, tally, attempts_entry)
    write_atomic(
        out_dir / MANIFEST, orjson.dumps(manifest, option=orjson.OPT_INDENT_2) + b"\n", sync=True
    )
    return manifest


def _select_rows(
    storage: Storage,
    options: _Options,
    tally: Tally,
    comparison_ids: dict[tuple[str, str, int], int] | None,
) -> Rows:
    """The lines of every ``(subset, split)`` file, in the export's order (``comparison_ids``
    filled on the way); a subset that got rows has both splits, an empty one no lines."""
    rows: Rows = {(options.subset, sp): [] for sp in SPLITS}
    for line in exported_comparisons(storage, **asdict(options), tally=tally):
        lines = rows.setdefault((line.subset, line.split), [])
        if comparison_ids is not None:
            comparison_ids[line.subset, line.split, len(lines)] = line.comparison_id
        lines.append(orjson.dumps({"chosen": line.chosen, "rejected": line.rejected}) + b"\n")
        tally.guidelines.add_line(f"{line.subset}/{line.split}.jsonl.gz", line.guidelines_version)
    for name in {s for s, _ in rows}:
        for sp in SPLITS:
            rows.setdefault((name, sp), [])
    return rows


def _write_files(out_dir: Path, rows: Rows, attempts: list[RedTeamAttempt]) -> dict[str, FileEntry]:
    """Each non-empty ``(subset, split)`` file and the attempts file (removed when there is
    none: ``--force`` over an export that had attempts), by their paths in ``out_dir``."""
    files: dict[str, FileEntry] = {}
    for (name, sp), lines in sorted(rows.items()):
        if lines:
            rel = f"{name}/{sp}.jsonl.gz"
            files[rel] = _write_gzip(out_dir / rel, lines, len(lines))
    if attempts:
        path = out_dir / RED_TEAM_ATTEMPTS
        rows_out = [a.to_dict(real_keys=True) for a in attempts]  # the real file's key spelling
        files[RED_TEAM_ATTEMPTS] = _write_gzip(path, [orjson.dumps(rows_out)], len(attempts))
    elif (out_dir / RED_TEAM_ATTEMPTS).exists():
        (out_dir / RED_TEAM_ATTEMPTS).unlink()
    return files


def _write_gzip(path: Path, lines: list[bytes], rows: int) -> FileEntry:
    data = _gzip_bytes(lines)
    write_atomic(path, data, sync=True)
    return {"rows": rows, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def _manifest(
    options: _Options,
    rows: Rows,
    empty: list[str],
    files: dict[str, FileEntry],
    tally: Tally,
    attempts: AttemptsEntry,
) -> Manifest:
    """What was written (``files``, the lines of each split) and what was left out, and why."""
    kinds, conversations = tally.kinds, tally.conversations
    manifest: Manifest = {
        "format": FORMAT,
        "min_strength": options.min_strength,
        "test_fraction": options.test_fraction,
        # only when asked for: a plain export's manifest is unchanged (here, in the key order
        # of the file; mypy does not read a ** entry in a TypedDict's literal)
        **({"agreed_only": True} if options.agreed_only else {}),  # type: ignore[typeddict-item]
        **({"accepted_only": True} if options.accepted_only else {}),  # type: ignore[typeddict-item]
        "subsets": {
            name: {sp: len(rows[name, sp]) for sp in SPLITS}
            for name in sorted({s for s, _ in rows})
        },
        "empty_splits": empty,
        "rows": sum(f["rows"] for rel, f in files.items() if rel != RED_TEAM_ATTEMPTS),
        "comparisons": {"pick": kinds["pick"], "edit": kinds["edit"]},
        "conversations": {
            "finished": conversations["finished"],
            "unfinished": conversations["unfinished"],
        },
        "left_out": _left_out(tally.left_out, options, tally.qualification),
        "left_out_reasons": _left_out_reasons(options, tally.qualification),
        "red_team_attempts": attempts,
        "files": files,
    }
    guidelines = tally.guidelines.manifest()
    if guidelines is not None:  # only when in use: a plain export's manifest is unchanged
        manifest["guidelines"] = guidelines
    return manifest


def _left_out(left_out: Counter[str], options: _Options, qualification: bool) -> dict[str, int]:
    return {reason: left_out[reason] for reason in _left_out_reasons(options, qualification)}


def _left_out_reasons(options: _Options, qualification: bool) -> dict[str, str]:
    """Each reason a comparison may be left out for with these options (``qualification``:
    a qualification round is on; only then is its reason in the manifest)."""
    reasons = {
        "weak": f"pick strength below {options.min_strength} "
        "(the weakest point: slightly better / unsure)",
        "unfinished": "the conversation was not finished",
        "cut": "a response was cut short (a speaker marker, the size or time limit, or Stop)",
        "identical": "both responses were the same text",
    }
    if options.agreed_only:
        reasons["unreviewed"] = "--agreed-only: the comparison was never reviewed"
        reasons["not_agreed"] = "--agreed-only: a review picked the other response"
    if options.accepted_only:
        reasons["no_verdict"] = "--accepted-only: no reviewer has judged it (an edit: its pick)"
        reasons["rejected"] = "--accepted-only: a reviewer rejected it (an edit: its pick)"
    if qualification:  # only with a round: a plain export's manifest is unchanged
        reasons["not_qualified"] = (
            "its annotator has not passed the qualification round (yet): counted once they pass"
        )
    return reasons


# the staged export writes in place through this name (a patched export_collection, as in
# tests counting exports, sees one call per export)
_export_in_place = export_collection
