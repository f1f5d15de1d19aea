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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from ...errors import ExportCheckError, HHError, UnknownNameError
from ...outputs import check_writable, replace_dir, write_atomic
from ...subsets import SUBSETS
from ..config import BackendConfig
from .attempts import load_scorer, red_team_attempts
from .export_select import Tally, exported_comparisons, split_of

__all__ = [
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


def _model_name(model) -> str | None:
    return None if model is None else type(model).__name__


def export_collection(
    storage,
    out_dir: str | os.PathLike,
    *,
    min_strength: int = 2,
    test_fraction: float = 0.05,
    subset: str = "helpful-base",
    red_team_subset: str = "harmless-base",
    include_unfinished: bool = False,
    agreed_only: bool = False,
    force: bool = False,
    backends: Mapping[str, BackendConfig] | None = None,
    scorer=None,
    comparison_ids: dict[tuple[str, str, int], int] | None = None,
    _in_place: bool = False,
) -> dict:
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
    _check_subset(subset, "--subset")
    _check_subset(red_team_subset, "--red-team-subset")
    if subset == red_team_subset:
        raise HHError("helpful and red-team comparisons need different subsets")
    if not 0 <= test_fraction <= 1:
        raise HHError(f"--test-fraction {test_fraction}: must be between 0 and 1")
    if min_strength < 1:
        raise HHError(f"--min-strength {min_strength}: must be at least 1")
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
                min_strength=min_strength,
                test_fraction=test_fraction,
                subset=subset,
                red_team_subset=red_team_subset,
                include_unfinished=include_unfinished,
                agreed_only=agreed_only,
                force=True,
                backends=backends,
                scorer=scorer,
                comparison_ids=comparison_ids,
                _in_place=True,
            )
    out_dir.mkdir(parents=True, exist_ok=True)
    storage.check_current()
    model = load_scorer(scorer)  # a bad --scorer fails before any file is written
    tally = Tally()
    rows: dict[tuple[str, str], list[bytes]] = {(subset, sp): [] for sp in SPLITS}
    selected = exported_comparisons(
        storage,
        min_strength=min_strength,
        test_fraction=test_fraction,
        subset=subset,
        red_team_subset=red_team_subset,
        include_unfinished=include_unfinished,
        agreed_only=agreed_only,
        tally=tally,
    )
    for line in selected:
        lines = rows.setdefault((line.subset, line.split), [])
        if comparison_ids is not None:
            comparison_ids[line.subset, line.split, len(lines)] = line.comparison_id
        lines.append(orjson.dumps({"chosen": line.chosen, "rejected": line.rejected}) + b"\n")
    left_out, kinds, conversations = tally.left_out, tally.kinds, tally.conversations
    # a subset that got rows has both splits in the manifest; an empty one gets no file
    for name in {s for s, _ in rows}:
        for sp in SPLITS:
            rows.setdefault((name, sp), [])
    empty = sorted(f"{name}/{sp}.jsonl.gz" for (name, sp), lines in rows.items() if not lines)
    for rel in empty:  # written in place with --force over an export that had rows there
        (out_dir / rel).unlink(missing_ok=True)

    # checked (and scored) before any file is written: a bad line writes nothing
    attempts, attempts_left_out, unconfigured = red_team_attempts(
        tally.red_team, backends=backends, scorer=model
    )
    files: dict[str, dict[str, Any]] = {}
    for (name, sp), lines in sorted(rows.items()):
        rel = f"{name}/{sp}.jsonl.gz"
        if not lines:
            continue
        data = _gzip_bytes(lines)
        write_atomic(out_dir / rel, data, sync=True)
        files[rel] = {
            "rows": len(lines),
            "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
    if attempts:
        data = _gzip_bytes([orjson.dumps(attempts)])
        write_atomic(out_dir / RED_TEAM_ATTEMPTS, data, sync=True)
        files[RED_TEAM_ATTEMPTS] = {
            "rows": len(attempts),
            "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
    elif (out_dir / RED_TEAM_ATTEMPTS).exists():  # --force over an export that had attempts
        (out_dir / RED_TEAM_ATTEMPTS).unlink()
    manifest = {
        "format": FORMAT,
        "min_strength": min_strength,
        "test_fraction": test_fraction,
        # only when asked for: a plain export's manifest is unchanged
        **({"agreed_only": True} if agreed_only else {}),
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
        "left_out": {
            "weak": left_out["weak"],
            "unfinished": left_out["unfinished"],
            "cut": left_out["cut"],
            "identical": left_out["identical"],
            **(
                {"unreviewed": left_out["unreviewed"], "not_agreed": left_out["not_agreed"]}
                if agreed_only
                else {}
            ),
        },
        "left_out_reasons": {
            "weak": f"pick strength below {min_strength} (the weakest point: slightly better / unsure)",
            "unfinished": "the conversation was not finished",
            "cut": "a response was cut short (a speaker marker, the size or time limit, or Stop)",
            "identical": "both responses were the same text",
            **(
                {
                    "unreviewed": "--agreed-only: the comparison was never reviewed",
                    "not_agreed": "--agreed-only: a review picked the other response",
                }
                if agreed_only
                else {}
            ),
        },
        "red_team_attempts": {
            "rows": len(attempts),
            "scorer": (
                str(scorer) if isinstance(scorer, (str, os.PathLike)) else _model_name(model)
            ),
            "left_out": {
                "unfinished": attempts_left_out["unfinished"],
                "no_turns": attempts_left_out["no_turns"],
            },
            "unconfigured_backends": unconfigured,
        },
        "files": files,
    }
    write_atomic(
        out_dir / MANIFEST, orjson.dumps(manifest, option=orjson.OPT_INDENT_2) + b"\n", sync=True
    )
    return manifest


# the staged export writes in place through this name (a patched export_collection, as in
# tests counting exports, sees one call per export)
_export_in_place = export_collection
