"""Pairwise votes: the :class:`Vote` record, the battles-file reader and the column store.

A *battles file* is JSON lines (optionally gzip) in the layout of LMArena's public battle
exports, one vote per line::

    {"model_a": "otter", "model_b": "heron", "winner": "model_a", "tstamp": 1714000000.5,
     "length_a": 812, "length_b": 455}

``winner`` is ``"model_a"``, ``"model_b"``, ``"tie"`` or ``"tie (bothbad)"`` (both tie
kinds count as half a win each way). Response lengths are optional: flat ``length_a`` /
``length_b`` (characters) or LMArena's ``conv_metadata`` object with
``sum_assistant_a_tokens`` / ``sum_assistant_b_tokens``. ``tstamp`` (Unix seconds) is optional.
Other fields are ignored.

Votes are stored column-wise (:class:`VoteColumns`): a million votes are a few arrays of
small integers, not a million objects. This module needs no third-party package.
"""

from __future__ import annotations

import math
import os
from array import array
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import DataFormatError
from ..reader import read_objects, type_name

__all__ = ["Vote", "VoteColumns", "WINNERS", "read_battles", "collect_votes"]

#: ``winner`` value -> outcome code: 0 model_a won, 1 model_b won, 2 tie.
WINNERS: dict[str, int] = {"model_a": 0, "model_b": 1, "tie": 2, "tie (bothbad)": 2}


@dataclass(frozen=True, slots=True)
class Vote:
    """One pairwise vote. ``group`` ties votes that are not independent (the turns of one
    conversation) for the bootstrap; ``ref`` says where the vote came from (a line number,
    a ``{"conversation", "turn"}`` mapping) and is what a robustness report lists."""

    model_a: str
    model_b: str
    winner: str
    length_a: float | None = None
    length_b: float | None = None
    tstamp: float | None = None
    group: Hashable | None = None
    ref: Any = None


class VoteColumns:
    """Votes column-wise: model indices, outcome codes, lengths (NaN when unknown), times.

    ``refs`` is ``None`` when a vote's reference is its 0-based position (a battles file's
    0-based line numbers are kept in ``lines``); ``groups`` is ``None`` when every vote is
    its own group (the vote bootstrap)."""

    def __init__(self, source: str = "<votes>") -> None:
        self.source = source
        self.unit = "vote"  # what a position counts in errors: "line" for a file
        self.models: list[str] = []
        self._index: dict[str, int] = {}
        self.a = array("i")
        self.b = array("i")
        self.outcome = array("b")
        self.length_a = array("d")
        self.length_b = array("d")
        self.tstamp = array("d")
        self.lines = array("q")
        self.groups: list[Hashable] | None = None
        self.refs: list[Any] | None = None

    def __len__(self) -> int:
        return len(self.outcome)

    def model(self, name: str) -> int:
        i = self._index.get(name)
        if i is None:
            i = self._index[name] = len(self.models)
            self.models.append(name)
        return i

    @property
    def ties(self) -> int:
        return self.outcome.count(2)

    @property
    def has_lengths(self) -> bool:
        return len(self) > 0 and not any(math.isnan(v) for v in self.length_a)

    def ref(self, k: int) -> Any:
        """Where vote ``k`` came from: its 0-based line, or the ``ref`` it was given."""
        return self.refs[k] if self.refs is not None else self.lines[k]


_NAN = float("nan")
#: the largest response length taken (characters or tokens); past it a length is an error
MAX_LENGTH = 1e15
#: the ``tstamp`` range taken: 1970-01-01 to the end of 9999 (what a date can show)
MAX_TSTAMP = 253_402_300_799.0


def _length(obj: dict, flat: str, tokens: str) -> float:
    v = obj.get(flat)
    if v is None:
        meta = obj.get("conv_metadata")
        if isinstance(meta, dict):
            v = meta.get(tokens)
    if v is None:
        return _NAN
    if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= MAX_LENGTH:
        raise ValueError(f"{flat} must be a number from 0 to {MAX_LENGTH:.0e}, got {v!r}")
    return float(v)


def _tstamp(t: Any) -> float:
    if t is None:
        return _NAN
    if isinstance(t, bool) or not isinstance(t, int | float) or not 0 <= t <= MAX_TSTAMP:
        raise ValueError(
            f"tstamp must be Unix seconds from 0 to {MAX_TSTAMP:.0f} (1970 to 9999), got {t!r}"
        )
    return float(t)


def _add(cols: VoteColumns, obj: Any, where: int, path: str, unit: str) -> None:
    if not isinstance(obj, dict):
        raise DataFormatError(
            path, where, f"expected a JSON object, got {type_name(obj)}", unit=unit
        )
    a, b, winner = obj.get("model_a"), obj.get("model_b"), obj.get("winner")
    for key, v in (("model_a", a), ("model_b", b)):
        if not isinstance(v, str) or not v:
            got = "missing" if v is None else repr(v)
            raise DataFormatError(
                path, where, f"{key} must be a non-empty string ({got})", unit=unit
            )
    if a == b:
        raise DataFormatError(path, where, f"model {a!r} is compared with itself", unit=unit)
    code = WINNERS.get(winner) if isinstance(winner, str) else None
    if code is None:
        raise DataFormatError(
            path,
            where,
            f"unknown winner {winner!r} (expected one of {', '.join(map(repr, WINNERS))})",
            unit=unit,
        )
    try:
        la = _length(obj, "length_a", "sum_assistant_a_tokens")
        lb = _length(obj, "length_b", "sum_assistant_b_tokens")
        t = _tstamp(obj.get("tstamp"))
    except ValueError as exc:
        raise DataFormatError(path, where, str(exc), unit=unit) from None
    cols.a.append(cols.model(str(a)))  # checked above: non-empty strings
    cols.b.append(cols.model(str(b)))
    cols.outcome.append(code)
    cols.length_a.append(la)
    cols.length_b.append(lb)
    cols.tstamp.append(t)


def read_battles(path: str | os.PathLike) -> VoteColumns:
    """Read a battles file (JSON lines, optionally gzip) into :class:`VoteColumns`.

    Raises :class:`~hhrlhf.errors.DataFormatError` naming the file and the 1-based line on
    malformed JSON, a missing model, a model compared with itself, an unknown winner or a
    bad length. ``lines`` holds each vote's 0-based line number (blank lines are skipped).
    """
    path = str(path)
    cols = VoteColumns(path)
    cols.unit = "line"
    # the usual line takes the inline path below (no call per line beyond the JSON decoder);
    # anything else (a new model, a missing or odd field) goes through _add, which checks
    # everything and raises the error naming the line
    index = cols._index
    a_add, b_add, o_add = cols.a.append, cols.b.append, cols.outcome.append
    la_add, lb_add, t_add = cols.length_a.append, cols.length_b.append, cols.tstamp.append
    line_add = cols.lines.append
    winners, nan, number = WINNERS, _NAN, (int, float)
    top, latest = MAX_LENGTH, MAX_TSTAMP
    for lineno, obj in read_objects(path):
        line_add(lineno - 1)
        try:
            ia = index[obj["model_a"]]
            ib = index[obj["model_b"]]
            code = winners[obj["winner"]]
            la = obj.get("length_a")
            lb = obj.get("length_b")
            if la is None and lb is None and "conv_metadata" in obj:
                meta = obj["conv_metadata"]
                la = meta.get("sum_assistant_a_tokens")
                lb = meta.get("sum_assistant_b_tokens")
            t = obj.get("tstamp")
            if (
                ia == ib
                or (la is None) is not (lb is None)
                or (la is not None and not (la.__class__ in number and lb.__class__ in number))
                or (t is not None and (t.__class__ not in number or not 0 <= t <= latest))
            ):
                raise TypeError
            if la is None:
                la = lb = nan
            elif not (0 <= la <= top and 0 <= lb <= top):
                raise TypeError
        except (KeyError, TypeError, AttributeError):
            _add(cols, obj, lineno, path, "line")
            continue
        a_add(ia)
        b_add(ib)
        o_add(code)
        la_add(la)
        lb_add(lb)
        t_add(nan if t is None else t)
    return cols


def _table_rows(table: Any) -> Iterable[dict] | None:
    """Rows of a pandas DataFrame or a pyarrow Table, else None."""
    if hasattr(table, "to_pylist") and hasattr(table, "column_names"):  # pyarrow.Table
        return table.to_pylist()
    if hasattr(table, "to_dict") and hasattr(table, "columns") and hasattr(table, "iloc"):
        return table.to_dict("records")  # pandas.DataFrame
    return None


def collect_votes(votes: Any, *, source: str = "<votes>") -> VoteColumns:
    """Votes from an iterable of :class:`Vote` (or dicts in the battles layout), a pandas
    DataFrame or a pyarrow Table (columns ``model_a``, ``model_b``, ``winner`` and optional
    ``length_a``, ``length_b``, ``tstamp``). A :class:`VoteColumns` is returned as is.

    Bad votes raise :class:`~hhrlhf.errors.DataFormatError` naming the 1-based vote.
    Votes with a ``group`` are resampled by group in the bootstrap (all or none must have one).
    """
    if isinstance(votes, VoteColumns):
        return votes
    rows = _table_rows(votes)
    cols = VoteColumns(source)
    groups: list[Hashable] = []
    refs: list[Any] = []
    grouped = 0
    for k, v in enumerate(votes if rows is None else rows):
        if isinstance(v, Vote):
            obj = {
                "model_a": v.model_a,
                "model_b": v.model_b,
                "winner": v.winner,
                "length_a": v.length_a,
                "length_b": v.length_b,
                "tstamp": v.tstamp,
            }
            group, ref = v.group, v.ref
        else:
            obj, group, ref = v, None, None
            if isinstance(v, dict):
                obj = {key: (None if _is_missing(x) else x) for key, x in v.items()}
        _add(cols, obj, k + 1, source, "vote")
        cols.lines.append(k)
        groups.append(group)
        refs.append(k if ref is None else ref)
        grouped += group is not None
    if grouped and grouped != len(cols):
        raise DataFormatError(source, None, "some votes have a group and some do not", unit="vote")
    if grouped:
        cols.groups = groups
    if any(r != k for k, r in enumerate(refs)):
        cols.refs = refs
    return cols


def _is_missing(x: Any) -> bool:
    """A table's missing value (None, or pandas' NaN)."""
    return x is None or (isinstance(x, float) and math.isnan(x))
