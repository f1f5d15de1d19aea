"""Reading upstream files: gzip or plain, JSONL or one JSON array, streamed, with precise errors.

The container is detected from the bytes, not the name: a gzip magic number means gzip
(the red-team file is named ``.jsonl.gz`` but holds one JSON array), and the first
non-blank byte decides JSONL (``{``) or JSON array (``[``). Lines are decoded with orjson;
arrays are decoded one element at a time, so memory stays flat on any file size
(:mod:`hhrlhf.json_array`). Opening, gzip and lines are :mod:`hhrlhf.file_stream`'s.

Every problem raises :class:`~hhrlhf.errors.DataFormatError` naming the file, the line
(JSONL) or record (array) and what is wrong. A :class:`Lenient` policy passed as ``lenient``
skips a bad row instead and records it, with its reason, in ``policy.skipped``; nothing is
dropped without a record of it. ``lenient=True, skipped=[...]`` still works: the policy is
built from them (:meth:`Lenient.of`), and the readers pass the one object on.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from .errors import DataFormatError, TruncatedStreamError
from .exports import refuse_export
from .file_stream import (
    _GZIP_ERRORS,
    _GZIP_MIN,
    MAX_LINE_BYTES,
    _damage_of,
    _row_error,
    _stream_error,
    is_gzip,
    iter_lines,
    line_too_long,
    max_line_bytes,
    open_data,
)
from .json_array import read_array
from .records import (
    RED_TEAM_KEYS,
    TASK_SCORE_KEY_CARD,
    TASK_SCORE_KEY_REAL,
    PreferencePair,
    RedTeamAttempt,
)

__all__ = [
    "Lenient",
    "SkippedRow",
    "StreamError",
    "iter_lines",
    "open_data",
    "is_gzip",
    "MAX_LINE_BYTES",
    "max_line_bytes",
    "line_too_long",
    "detect_container",
    "read_objects",
    "read_pairs",
    "read_attempts",
    "pair_from_object",
    "attempt_from_object",
]

_BOM = b"\xef\xbb\xbf"
_WS = b" \t\r\n"


@dataclass(frozen=True, slots=True)
class SkippedRow:
    """A row that lenient reading skipped: where it was and why."""

    path: str
    line: int | None
    problem: str
    unit: str = "line"

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, self.unit: self.line, "problem": self.problem}

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}, {self.unit} {self.line}"
        return f"{where}: {self.problem}"


@dataclass
class Lenient:
    """The lenient reading policy: skip bad rows, and record each with why, in ``skipped``.

    One object goes from the caller through every reader instead of a ``lenient`` flag and a
    ``skipped`` list. ``keep_readable``: a *cut* gzip stream (every line read is intact) is
    read up to its damage and recorded in ``lost`` instead of raising; a CRC error or other
    corruption still raises, since the lines read cannot be trusted.

    >>> policy = Lenient()
    >>> policy.skip("a.jsonl", 3, "invalid JSON")
    >>> [str(s) for s in policy.skipped]
    ['a.jsonl, line 3: invalid JSON']
    """

    skipped: list[SkippedRow] = field(default_factory=list)
    keep_readable: bool = False
    lost: list[TruncatedStreamError] = field(default_factory=list)

    @classmethod
    def of(
        cls, lenient: bool | Lenient | None = False, skipped: list[SkippedRow] | None = None
    ) -> Lenient | None:
        """The policy for the public ``lenient=``/``skipped=`` arguments (None: strict).

        ``lenient`` is a flag or a :class:`Lenient` already (returned as it is). With the
        flag, skipped rows are appended to the caller's ``skipped`` list when one is given.

        >>> Lenient.of(False) is None
        True
        >>> rows = []
        >>> Lenient.of(True, rows).skipped is rows
        True
        """
        if isinstance(lenient, Lenient):
            if skipped is not None and skipped is not lenient.skipped:
                raise ValueError("pass either a Lenient policy or a skipped list, not both")
            return lenient
        if not lenient:
            return None
        return cls(skipped if skipped is not None else [])

    def skip(self, path: str, line: int | None, problem: str, unit: str = "line") -> None:
        """Record a skipped row, unless the row is garbage from a damaged gzip stream: then
        the stream's damage is raised (lost data is never reported as bad rows)."""
        damage = _damage_of(path)
        if damage is not None:
            raise damage
        self.skipped.append(SkippedRow(path, line, problem, unit))


def _bom_problem(line: bytes | str) -> str | None:
    if line[:3] == _BOM or line[:1] == "\ufeff":
        return (
            "the line starts with a UTF-8 byte order mark (BOM, bytes EF BB BF); JSON Lines "
            "files must not have one: save the file as UTF-8 without a BOM"
        )
    return None


def detect_container(path: str | os.PathLike[str]) -> str:
    """``"jsonl"`` or ``"array"``, from the first non-blank byte; raises on an empty file."""
    path = str(path)
    if path.endswith(".gz"):
        try:
            size = os.path.getsize(path)
        except OSError:
            size = _GZIP_MIN
        if size < _GZIP_MIN and (size < 2 or is_gzip(path)):
            raise TruncatedStreamError(
                path,
                f"{size}-byte file where a gzip stream is expected (a gzip file is at least "
                f"{_GZIP_MIN} bytes long; the file was cut short)",
                last_good_line=0,
                rows_read=0,
            )
    try:
        stream = open_data(path)
    except OSError as exc:  # missing, unreadable, a directory: not a gzip problem
        raise DataFormatError(path, None, f"cannot open: {exc.strerror or exc}") from None
    try:
        with stream as f:
            # byte by byte through leading blanks only (usually none): a large read could
            # run into a truncated stream's end before the first record is seen
            first = f.read1(1)
            if not first:  # no content at all: an empty split, unless not even a gzip header
                if path.endswith(".gz") and os.path.getsize(path) == 0:
                    raise DataFormatError(path, None, "0-byte file: not a gzip stream")
                return "jsonl"
            while first and first in _WS:
                first = f.read1(1)
            if not first:
                raise DataFormatError(path, None, "empty file (blank lines only, no records)")
    except _GZIP_ERRORS as exc:
        raise _stream_error(path, exc, 0) from None
    if first == b"{":
        return "jsonl"
    if first == b"[":
        return "array"
    if first == _BOM[:1]:
        with open_data(path) as f:
            if f.read(3) == _BOM:
                raise DataFormatError(
                    path,
                    1,
                    "the file starts with a UTF-8 byte order mark (BOM, bytes EF BB BF); "
                    "hhrlhf does not skip it: save the file as UTF-8 without a BOM",
                )
    raise DataFormatError(
        path,
        1,
        f"expected a JSON object per line or one JSON array, file starts with {first!r}",
    )


def read_objects(
    path: str | os.PathLike[str],
    *,
    lenient: bool | Lenient | None = False,
    skipped: list[SkippedRow] | None = None,
    threaded: bool = False,
    lost: list[TruncatedStreamError] | None = None,
) -> Iterator[tuple[int, Any]]:
    """Yield ``(position, object)``: 1-based line for JSONL, 1-based record for an array.

    Only JSON syntax and container problems are handled here; record validation is the
    caller's (see :func:`read_pairs`). ``lenient`` (a :class:`Lenient` policy, or ``True``)
    skips undecodable JSONL lines; with ``keep_readable`` on the policy a cut stream lands
    in its ``lost`` list (as it does in a ``lost`` list passed here).

    A damaged stream raises :class:`~hhrlhf.errors.TruncatedStreamError`, lenient or not.
    Only when the caller passes a ``lost`` list is a *cut* stream (kind ``"truncated"``:
    every line read is intact) appended to it instead, and reading stops there; a CRC or
    other corruption still raises, since the lines read cannot be trusted.
    """
    path = str(path)
    policy = Lenient.of(lenient, skipped)
    if lost is None and policy is not None and policy.keep_readable:
        lost = policy.lost
    container = detect_container(path) if lost is None else _container_or_lost(path, lost)
    if container is None:
        return
    rows = _read_jsonl(path, policy, threaded) if container == "jsonl" else read_array(path)
    if lost is None:
        yield from rows
        return
    try:
        yield from rows
    except TruncatedStreamError as exc:
        if exc.kind != "truncated":
            raise
        lost.append(exc)


def _container_or_lost(path: str, lost: list[TruncatedStreamError]) -> str | None:
    try:
        return detect_container(path)
    except TruncatedStreamError as exc:
        if exc.kind != "truncated":
            raise
        lost.append(exc)
        return None


#: The former name of :class:`~hhrlhf.errors.TruncatedStreamError`, kept for callers.
StreamError = TruncatedStreamError


def _read_jsonl(path: str, policy: Lenient | None, threaded: bool) -> Iterator[tuple[int, Any]]:
    """A damaged stream raises :class:`TruncatedStreamError` in lenient mode too: the rows
    it held are lost, not skipped, and no count of them can be given."""
    loads = orjson.loads
    lineno = 0
    for lineno, line in iter_lines(path, threaded=threaded):
        try:
            obj = loads(line)
        except orjson.JSONDecodeError as exc:
            if not line.strip():
                continue  # a blank line holds no record
            problem = _bom_problem(line) or f"invalid JSON ({exc})"
            if not line.endswith(b"\n"):
                problem += "; the last line is incomplete (file cut short?)"
            if policy is not None:
                policy.skip(path, lineno, problem)
                continue
            raise _row_error(path, lineno, problem) from None
        yield lineno, obj


# --------------------------------------------------------------------------- validation


def type_name(v: Any) -> str:
    """How an error message names a JSON value's type (``null`` for None)."""
    return "null" if v is None else type(v).__name__


def pair_from_object(
    obj: Any, *, subset: str | None = None, split: str | None = None, index: int | None = None
) -> PreferencePair:
    """Validate one decoded row as a preference pair; raises ``ValueError`` with the problem."""
    if type(obj) is not dict:
        raise ValueError(f"expected a JSON object, got {type_name(obj)}")
    try:
        chosen = obj["chosen"]
        rejected = obj["rejected"]
    except KeyError as exc:
        raise ValueError(
            f"missing key {exc.args[0]!r} (a pair needs 'chosen' and 'rejected')"
        ) from None
    if type(chosen) is not str:
        raise ValueError(f"'chosen' must be a string, got {type_name(chosen)}")
    if type(rejected) is not str:
        raise ValueError(f"'rejected' must be a string, got {type_name(rejected)}")
    return PreferencePair(chosen, rejected, subset, split, index)


def read_pairs(
    path: str | os.PathLike[str],
    *,
    subset: str | None = None,
    split: str | None = None,
    lenient: bool | Lenient | None = False,
    skipped: list[SkippedRow] | None = None,
    threaded: bool = False,
) -> Iterator[PreferencePair]:
    """Stream :class:`PreferencePair` records from one file (``index`` = line - 1, or record - 1).

    ``lenient`` (a :class:`Lenient`, or ``True`` with a ``skipped`` list): skip bad rows,
    recording each."""
    path = str(path)
    policy = Lenient.of(lenient, skipped)
    unit = None
    first = True
    for pos, obj in read_objects(path, lenient=policy, threaded=threaded):
        if first:  # an hh export given back is named, not read as pairs without prompts
            refuse_export(path, pos, obj)
            first = False
        if type(obj) is dict:
            c = obj.get("chosen")
            r = obj.get("rejected")
            if type(c) is str and type(r) is str:  # the fast path
                yield PreferencePair(c, r, subset, split, pos - 1)
                continue
        if unit is None:
            unit = "line" if detect_container(path) == "jsonl" else "record"
        try:
            pair_from_object(obj)
        except ValueError as exc:
            if policy is not None:
                policy.skip(path, pos, str(exc), unit)
                continue
            raise _row_error(path, pos, str(exc), unit) from None


def _score(obj: dict[str, Any], key: str) -> float | None:
    """A harmlessness score: a number, or ``null`` (collected data exported without a scorer)."""
    return None if obj[key] is None else _number(obj, key)


def _number(obj: dict[str, Any], key: str) -> float:
    v = obj[key]
    if type(v) is float:
        return v
    if type(v) is int:
        return float(v)
    raise ValueError(f"{key!r} must be a number, got {type_name(v)}")


def attempt_from_object(obj: Any, *, index: int | None = None) -> RedTeamAttempt:
    """Validate one decoded red-team record; raises ``ValueError`` with the problem.

    Accepts the task score under the real key (``task_descripton_harmlessness_score``) or
    the dataset card's spelling, and exposes it as ``task_description_harmlessness_score``.
    """
    if type(obj) is not dict:
        raise ValueError(f"expected a JSON object, got {type_name(obj)}")
    score_key = TASK_SCORE_KEY_REAL if TASK_SCORE_KEY_REAL in obj else TASK_SCORE_KEY_CARD
    required = [score_key if k == TASK_SCORE_KEY_CARD else k for k in RED_TEAM_KEYS]
    missing = [k for k in required if k not in obj]
    if missing:
        raise ValueError(
            "missing key" + ("s " if len(missing) > 1 else " ") + ", ".join(map(repr, missing))
        )
    for key in ("transcript", "num_params", "model_type", "task_description"):
        if type(obj[key]) is not str:
            raise ValueError(f"{key!r} must be a string, got {type_name(obj[key])}")
    member = obj["red_team_member_id"]
    if type(member) not in (int, str):
        raise ValueError(
            f"'red_team_member_id' must be an int or a string, got {type_name(member)}"
        )
    if type(obj["is_upworker"]) is not bool:
        raise ValueError(
            f"'is_upworker' must be true or false, got {type_name(obj['is_upworker'])}"
        )
    tags = obj["tags"]
    if tags is not None and (type(tags) is not list or any(type(t) is not str for t in tags)):
        raise ValueError(f"'tags' must be null or a list of strings, got {type_name(tags)}")
    return RedTeamAttempt(
        transcript=obj["transcript"],
        min_harmlessness_score_transcript=_score(obj, "min_harmlessness_score_transcript"),
        num_params=obj["num_params"],
        model_type=obj["model_type"],
        rating=_number(obj, "rating"),
        task_description=obj["task_description"],
        task_description_harmlessness_score=_score(obj, score_key),
        red_team_member_id=member,
        is_upworker=obj["is_upworker"],
        tags=tags,
        index=index,
    )


def read_attempts(
    path: str | os.PathLike[str],
    *,
    lenient: bool | Lenient | None = False,
    skipped: list[SkippedRow] | None = None,
) -> Iterator[RedTeamAttempt]:
    """Stream :class:`RedTeamAttempt` records (the file may be a JSON array or JSONL).

    ``lenient`` (a :class:`Lenient`, or ``True`` with a ``skipped`` list): skip bad rows,
    recording each."""
    path = str(path)
    policy = Lenient.of(lenient, skipped)
    unit = "line" if detect_container(path) == "jsonl" else "record"
    for pos, obj in read_objects(path, lenient=policy):
        try:
            yield attempt_from_object(obj, index=pos - 1)
        except ValueError as exc:
            if policy is not None:
                policy.skip(path, pos, str(exc), unit)
                continue
            raise _row_error(path, pos, str(exc), unit) from None
