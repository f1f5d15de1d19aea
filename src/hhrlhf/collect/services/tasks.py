"""Task prompts: imported from a file (``hh collect tasks import``) or added in
``/admin/campaign``, listed with how often each was served, disabled. Handing them out is
:mod:`.assign`'s.

A file is JSON lines (``{"text", "mode", "repeat", "tags"}``; ``mode`` helpful by default,
``repeat`` 1) or, named ``*.csv``, CSV with the header ``text,mode,repeat,tags`` (tags
``;``-separated). A task whose text and mode are already a task's (earlier in the file or in
the database) is skipped, and said so: importing a file twice adds nothing.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select

from ...errors import Conflict, DataFormatError, Invalid, NotFound
from ..config import Settings
from ..db import Storage
from ..db.models import Task
from ..domain import MODES, Mode, iso, now
from ..textrules import text_problem

__all__ = [
    "ImportReport",
    "NewTask",
    "TaskInfo",
    "add_task",
    "import_tasks",
    "list_tasks",
    "read_task_file",
    "set_task_disabled",
]

#: the longest task text by default (the app's ``max_task_chars``)
MAX_CHARS = Settings.max_task_chars
#: the longest tag, and the most tags a task may have
TAG_CHARS, MAX_TAGS = 100, 50
CSV_HEADER = ["text", "mode", "repeat", "tags"]


@dataclass(frozen=True)
class NewTask:
    """A task read from a file (``line``: where), not yet stored."""

    text: str
    mode: str = Mode.HELPFUL
    repeat: int = 1
    tags: tuple[str, ...] = ()
    line: int = 0


@dataclass(frozen=True)
class TaskInfo:
    id: int
    text: str
    mode: str
    repeat: int
    served: int
    tags: tuple[str, ...]
    disabled: bool
    created_at: str | None

    @property
    def left(self) -> int:
        """Conversations it may still be handed to (0 once disabled)."""
        return 0 if self.disabled else max(0, self.repeat - self.served)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "text": self.text,
            "mode": self.mode,
            "repeat": self.repeat,
            "served": self.served,
            "tags": list(self.tags),
            "disabled": self.disabled,
            "created_at": self.created_at,
        }


@dataclass(frozen=True)
class ImportReport:
    """What an import did: tasks ``imported`` (none on a dry run), ``skipped`` lines (each a
    ``FILE, line N: ...`` note), ``errors`` (bad lines, each named the same way; a strict
    import with any imports nothing)."""

    imported: int
    skipped: tuple[str, ...]
    errors: tuple[str, ...]
    dry_run: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "imported": self.imported,
            "skipped": list(self.skipped),
            "errors": list(self.errors),
            "dry_run": self.dry_run,
        }


def _row(t: NewTask, created: datetime) -> Task:
    return Task(
        text=t.text,
        mode=t.mode,
        repeat=t.repeat,
        tags=list(t.tags),
        served=0,
        disabled=False,
        created_at=created,
    )


def _info(t: Task) -> TaskInfo:
    return TaskInfo(
        t.id,
        t.text,
        t.mode,
        t.repeat,
        t.served,
        tuple(t.tags or ()),
        t.disabled,
        iso(t.created_at),
    )


def check_task(
    text: Any, mode: Any, repeat: Any, tags: Any, *, max_chars: int = MAX_CHARS
) -> NewTask:
    """A valid task, or :class:`Invalid` naming the problem."""
    if text is None:
        raise Invalid("the task has no text")
    if not isinstance(text, str):
        raise Invalid(f"text must be a string, not {type(text).__name__}")
    if not text.strip():
        raise Invalid("the task's text is empty")
    text = text.strip()
    if len(text) > max_chars:
        raise Invalid(f"the task's text is {len(text):,} characters; at most {max_chars:,}")
    problem = text_problem(text)
    if problem:
        raise Invalid(f"the task's text {problem}")
    if mode not in MODES:
        raise Invalid(f"mode {mode!r}; expected one of: {', '.join(MODES)}")
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise Invalid(f"repeat must be a whole number >= 1, not {repeat!r}")
    if not isinstance(tags, list | tuple) or len(tags) > MAX_TAGS:
        raise Invalid(f"tags must be a list of at most {MAX_TAGS} strings")
    clean = []
    for tag in tags:
        if not isinstance(tag, str) or not tag.strip() or len(tag) > TAG_CHARS:
            raise Invalid(f"a tag must be a string of 1-{TAG_CHARS} characters, not {tag!r}")
        if text_problem(tag):
            raise Invalid(f"the tag {tag!r} {text_problem(tag)}")
        clean.append(tag.strip())
    return NewTask(text, str(mode), repeat, tuple(clean))


def _jsonl_rows(content: str) -> list[tuple[int, Any]]:
    return [(n, line) for n, line in enumerate(content.splitlines(), 1) if line.strip()]


def _parse_jsonl(line: str) -> dict[str, Any]:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise Invalid(f"not JSON ({exc.msg})") from None
    if not isinstance(obj, dict):
        raise Invalid("expected a JSON object")
    extra = set(obj) - set(CSV_HEADER)
    if extra:
        raise Invalid(f"unknown key {sorted(extra)[0]!r} (expected {', '.join(CSV_HEADER)})")
    return obj


def _csv_rows(content: str, path: Path) -> list[tuple[int, Any]]:
    reader = csv.reader(io.StringIO(content, newline=""))
    names = [h.strip() for h in next(reader, [])]
    if "text" not in names or len(set(names)) != len(names) or set(names) - set(CSV_HEADER):
        raise DataFormatError(path, 1, f"the header must be {','.join(CSV_HEADER)}")
    out: list[tuple[int, Any]] = []
    for cells in reader:
        if any(c.strip() for c in cells):
            out.append((reader.line_num, (names, cells)))
    return out


def _parse_csv(row: tuple[list[str], list[str]]) -> dict[str, Any]:
    names, cells = row
    if len(cells) != len(names):
        raise Invalid(f"{len(cells)} fields; the header has {len(names)}")
    obj: dict[str, Any] = dict(zip(names, cells, strict=True))
    obj["mode"] = obj.get("mode") or Mode.HELPFUL
    repeat = (obj.get("repeat") or "1").strip()
    try:
        obj["repeat"] = int(repeat)
    except ValueError:
        raise Invalid(f"repeat must be a whole number >= 1, not {repeat!r}") from None
    obj["tags"] = [t for t in (obj.get("tags") or "").split(";") if t.strip()]
    return obj


def read_task_file(
    path: str | Path, *, max_chars: int = MAX_CHARS
) -> tuple[list[NewTask], list[tuple[int | None, str]]]:
    """The file's tasks and its bad lines: (line, problem)."""
    path = Path(path)
    try:
        content = path.read_text(encoding="utf-8-sig")  # a spreadsheet's CSV may start with a BOM
    except FileNotFoundError:
        raise DataFormatError(path, None, "no such file") from None
    except UnicodeDecodeError as exc:
        raise DataFormatError(path, None, f"not UTF-8 text ({exc.reason})") from None
    is_csv = path.suffix.lower() == ".csv"
    rows = _csv_rows(content, path) if is_csv else _jsonl_rows(content)
    tasks: list[NewTask] = []
    errors: list[tuple[int | None, str]] = []
    for line, raw in rows:
        try:
            obj = _parse_csv(raw) if is_csv else _parse_jsonl(raw)
            t = check_task(
                obj.get("text"),
                obj.get("mode", Mode.HELPFUL),
                obj.get("repeat", 1),
                obj.get("tags", []),
                max_chars=max_chars,
            )
        except Invalid as exc:
            errors.append((line, str(exc)))
            continue
        tasks.append(NewTask(t.text, t.mode, t.repeat, t.tags, line))
    if not rows:
        errors.append((None, "no tasks in the file"))
    return tasks, errors


def import_tasks(
    storage: Storage,
    path: str | Path,
    *,
    max_chars: int = MAX_CHARS,
    strict: bool = True,
    dry_run: bool = False,
) -> ImportReport:
    """Import a task file. Strict (the default): any bad line stops it, nothing imported
    (:class:`DataFormatError` naming the first; the report's ``errors`` are not reached).
    Not strict: the good lines are imported and the bad ones reported."""
    tasks, bad = read_task_file(path, max_chars=max_chars)
    if bad and strict:
        more = f" (and {len(bad) - 1} more bad lines; nothing imported)" if len(bad) > 1 else ""
        raise DataFormatError(path, bad[0][0], bad[0][1] + (more or " (nothing imported)"))
    errors = [str(DataFormatError(path, line, problem)) for line, problem in bad]
    skipped: list[str] = []
    with storage.write() as s:
        stored = {
            (text, mode): tid
            for tid, text, mode in s.execute(select(Task.id, Task.text, Task.mode))
        }
        seen: dict[tuple[str, str], int] = {}
        fresh: list[NewTask] = []
        for t in tasks:
            key = (t.text, t.mode)
            if key in seen:
                skipped.append(
                    f"{path}, line {t.line}: skipped: the same text and mode as line {seen[key]}"
                )
            elif key in stored:
                skipped.append(f"{path}, line {t.line}: skipped: already task {stored[key]}")
            else:
                seen[key] = t.line
                fresh.append(t)
        if not dry_run:
            created = now()
            s.add_all(_row(t, created) for t in fresh)
    return ImportReport(len(fresh), tuple(skipped), tuple(errors), dry_run)


def add_task(
    storage: Storage,
    text: str,
    mode: str = Mode.HELPFUL,
    repeat: int = 1,
    tags: list[str] | tuple[str, ...] = (),
    *,
    max_chars: int = MAX_CHARS,
) -> TaskInfo:
    """One task (the admin page's form); a task of the same text and mode is a Conflict."""
    t = check_task(text, mode, repeat, list(tags), max_chars=max_chars)
    with storage.write() as s:
        same = s.scalar(select(Task.id).where(Task.text == t.text, Task.mode == t.mode))
        if same is not None:
            raise Conflict(f"task {same} already has this text and mode")
        row = _row(t, now())
        s.add(row)
        s.flush()
        return _info(row)


def list_tasks(storage: Storage) -> list[TaskInfo]:
    """Every task, oldest first."""
    with storage.read() as s:
        return [_info(t) for t in s.scalars(select(Task).order_by(Task.id))]


def set_task_disabled(storage: Storage, task_id: int, disabled: bool = True) -> TaskInfo:
    """A disabled task is handed to nobody new (conversations already on it keep it)."""
    with storage.write() as s:
        t = s.get(Task, task_id)
        if t is None:
            raise NotFound(f"task {task_id} not found")
        t.disabled = disabled
        s.flush()
        return _info(t)
