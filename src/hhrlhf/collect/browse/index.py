"""The data browser's index: any HH-format data (the cache, the sample, a folder, or the app's
own database as :func:`collected_index`) read once, with each pair's classes (the ones
``hh check`` counts), its human-turn count and response lengths, so a filtered page is a scan
over small tuples, and every pair's text casefolded in one buffer, so a text search is
``bytes.find`` over it (``_TextIndex``)."""

from __future__ import annotations

import time
from array import array
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from ...errors import Invalid, NotFound
from ...records import PAIR_CLASSES, PreferencePair, RedTeamAttempt
from .reports import ReportGate, _keep

if TYPE_CHECKING:
    import os

    from ...layout import DataSource
    from ...redteam.query import AttemptQuery
    from ..db import Storage

MAX_LIMIT = 200
#: the flag filter's values (collected data): a class of ``hh collect flag``, or no flag
FLAG_FILTERS = ("likely_mislabelled", "ambiguous", "clear", "unflagged")

#: per pair: (subset, split, classes, human_turns, len(chosen) - len(rejected))
PairMeta = tuple[str | None, str | None, tuple[str, ...], int, int]
#: a pair's place in its data: (subset, split, row)
PairKey = tuple[str | None, str | None, int | None]


class FileRows(TypedDict):
    """One file of the data: its subset (None when a single file names none), split, rows
    and the rows of each pair class (empty for the red-team attempts)."""

    subset: str | None
    split: str
    rows: int
    classes: dict[str, int]


@dataclass
class DataIndex:
    """Pairs and attempts of one data source, with what the filters need precomputed."""

    label: str
    pairs: list[PreferencePair] = field(default_factory=list)
    meta: list[PairMeta] = field(default_factory=list)
    attempts: list[RedTeamAttempt] = field(default_factory=list)
    files: list[FileRows] = field(default_factory=list)
    seconds: float = 0.0
    _by_key: dict[PairKey, int] = field(default_factory=dict, repr=False)
    _text: _TextIndex | None = field(default=None, repr=False)
    _found: dict[PairQuery, list[int]] = field(default_factory=dict, repr=False)
    #: the red-team reports' numbers (``report.json``), by the attempts' query
    reports: dict[AttemptQuery, dict[str, Any]] = field(default_factory=dict, repr=False)
    #: the red-team report pages drawn, by (query, plots)
    report_pages: dict[tuple[AttemptQuery, bool], str] = field(default_factory=dict, repr=False)
    #: at most REPORT_SLOTS reports computed at once (the rest: the cache, or 503)
    report_gate: ReportGate = field(default_factory=lambda: ReportGate(), repr=False)
    #: collected data: the ``hh collect flag`` flag of each flagged pair, by its row here
    flags: dict[int, dict[str, Any]] = field(default_factory=dict, repr=False)

    @classmethod
    def load(cls, data: str | os.PathLike[str] | DataSource) -> DataIndex:
        from ...fastload import load_files
        from ...layout import resolve_source, select_files
        from ...reader import read_attempts

        start = time.perf_counter()
        src = resolve_source(data)
        files = select_files("all", data=src, download=False)
        index = cls(label=src.label)
        pair_files = [f for f in files if not f.red_team]
        loaded = load_files([(f.path, f.subset, f.split) for f in pair_files])
        for f, pairs in zip(pair_files, loaded, strict=True):
            counts: Counter[str] = Counter()
            for p in pairs:
                classes = tuple(sorted(p.classes))
                counts.update(classes)
                index._by_key[(p.subset, p.split, p.index)] = len(index.pairs)
                index.pairs.append(p)
                index.meta.append(
                    (
                        p.subset,
                        p.split,
                        classes,
                        p.human_turns,
                        len(p.chosen) - len(p.rejected),
                    )
                )
            index.files.append(
                {"subset": f.subset, "split": f.split, "rows": len(pairs), "classes": dict(counts)}
            )
        for f in files:
            if f.red_team:
                index.attempts = list(read_attempts(f.path))
                index.files.append(
                    {
                        "subset": f.subset,
                        "split": f.split,
                        "rows": len(index.attempts),
                        "classes": {},
                    }
                )
        index._text = _TextIndex.build(index.pairs)
        index.seconds = time.perf_counter() - start
        return index

    def pair(self, subset: str, split: str, row: int) -> PreferencePair:
        at = self._by_key.get((subset, split, row))
        if at is None and subset == "file":  # one file that names no subset
            at = self._by_key.get((None, split, row))
        if at is None:
            raise NotFound(f"no pair {subset}/{split}/{row} in {self.label}")
        return self.pairs[at]

    def flag_of(self, p: PreferencePair) -> dict[str, Any] | None:
        """The pair's mislabel flag (collected data flagged by ``hh collect flag``), or None."""
        return self.flags.get(self._by_key.get((p.subset, p.split, p.index), -1))

    def query(
        self, q: PairQuery, offset: int = 0, limit: int = 50
    ) -> tuple[int, list[PreferencePair]]:
        """(total matches, the pairs in ``[offset, offset + limit)``), in file order."""
        rows = self._rows(q)
        return len(rows), [self.pairs[i] for i in rows[offset : offset + limit]]

    def _rows(self, q: PairQuery) -> list[int]:
        """Every row that ``q`` matches; the last few queries are kept (paging is free)."""
        kept = self._found.get(q)
        if kept is not None:
            return kept
        needle = q.q.casefold() if q.q else None
        rows: Sequence[int] = range(len(self.pairs))
        if needle is not None and self._text is not None and self._text.can_search(needle):
            rows = self._text.search(needle, q.where)
            needle = None  # decided
        pairs, meta = self.pairs, self.meta
        found: list[int] = []
        for i in rows:
            subset, split, classes, turns, longer = meta[i]
            if q.subset and subset != q.subset:
                continue
            if q.split and split != q.split:
                continue
            if q.cls and q.cls not in classes:
                continue
            if q.turns is not None and turns != q.turns:
                continue
            if q.chosen == "longer" and longer <= 0:
                continue
            if q.chosen == "shorter" and longer >= 0:
                continue
            if q.flag and (self.flags[i]["class"] if i in self.flags else "unflagged") != q.flag:
                continue
            if needle is not None and not _holds(pairs[i], needle, q.where):
                continue
            found.append(i)
        _keep(self._found, q, found, 32)
        return found


#: red-team reports computed at the same time, per data source; more requests for reports not
#: in the cache are answered 503 with Retry-After, so they cannot take every thread of the pool
def _holds(p: PreferencePair, needle: str, where: str) -> bool:
    """Whether the pair's text holds ``needle`` (casefolded) ``where``: the plain scan."""
    e = p.prompt_end
    texts: tuple[str, ...]
    if where == "prompt":
        texts = (p.chosen[:e],)
    elif where == "responses":
        texts = (p.chosen[e:], p.rejected[e:])
    else:
        texts = (p.chosen, p.rejected[e:])
    return any(needle in t.casefold() for t in texts)


class _TextIndex:
    """Every pair's text, casefolded, in one UTF-8 buffer: a search is ``bytes.find``.

    Pair ``i`` is ``prompt + chosen_response + NUL + rejected_response + NUL`` from
    ``starts[i]``; ``prompt_ends[i]`` is where its prompt ends. A hit maps to its pair by bisection, and the search goes on
    from the next pair, so a word in every pair costs one find per pair. The matches are
    the ones a scan of each pair's strings gives: the prompt and the chosen response are
    one string (as ``chosen`` is), the rejected response another.
    """

    SEP = "\0"

    def __init__(self, blob: bytearray, starts: array[int], prompt_ends: array[int]) -> None:
        self.blob, self.starts, self.prompt_ends = blob, starts, prompt_ends

    @classmethod
    def build(cls, pairs: Iterable[PreferencePair]) -> _TextIndex:
        # one growing buffer and two int arrays: a list of every piece joined at the end held
        # the text twice at its peak, and its freed pieces stayed in the worker's memory
        blob, starts, prompt_ends = bytearray(), array("q"), array("q")
        for p in pairs:
            e = p.prompt_end
            starts.append(len(blob))
            blob += p.chosen[:e].casefold().encode("utf-8", "surrogatepass")
            prompt_ends.append(len(blob))
            blob += p.chosen[e:].casefold().encode("utf-8", "surrogatepass")
            blob += b"\0"
            blob += p.rejected[e:].casefold().encode("utf-8", "surrogatepass")
            blob += b"\0"
        starts.append(len(blob))
        return cls(blob, starts, prompt_ends)

    def can_search(self, needle: str) -> bool:
        return self.SEP not in needle

    def search(self, needle: str, where: str = "any") -> list[int]:
        """The rows whose text holds ``needle`` (casefolded) ``where``: any, prompt, responses."""
        from bisect import bisect_right

        pat = needle.encode("utf-8", "surrogatepass")
        blob, starts, prompt_ends = self.blob, self.starts, self.prompt_ends
        find, n = blob.find, len(pat)
        rows: list[int] = []
        pos = find(pat)
        while pos >= 0:
            i = bisect_right(starts, pos) - 1
            if where == "prompt" and pos + n > prompt_ends[i]:
                pos = find(pat, starts[i + 1])  # past the prompt: none later in this pair
                continue
            if where == "responses" and pos < prompt_ends[i]:
                pos = find(pat, prompt_ends[i])
                continue
            rows.append(i)
            pos = find(pat, starts[i + 1])
        return rows


@dataclass(frozen=True)
class PairQuery:
    """The pair-list filters; every one optional. ``where``: any, prompt or responses."""

    subset: str | None = None
    split: str | None = None
    cls: str | None = None
    turns: int | None = None
    chosen: str | None = None
    q: str | None = None
    where: str = "any"
    flag: str | None = None

    def __post_init__(self) -> None:
        if self.cls and self.cls not in PAIR_CLASSES:
            raise Invalid(f"unknown class {self.cls!r}; known: {', '.join(PAIR_CLASSES)}")
        if self.chosen not in (None, "longer", "shorter"):
            raise Invalid(f"chosen must be longer or shorter, got {self.chosen!r}")
        if self.where not in ("any", "prompt", "responses"):
            raise Invalid(f"where must be any, prompt or responses, got {self.where!r}")
        if self.flag and self.flag not in FLAG_FILTERS:
            raise Invalid(f"unknown flag {self.flag!r}; known: {', '.join(FLAG_FILTERS)}")


def pair_json(p: PreferencePair) -> dict[str, Any]:
    return p.to_view()


def collected_index(storage: Storage) -> DataIndex:
    """The app's own database as HH data: exactly what ``hh collect export`` would write, with
    the unfinished conversations and the weakest comparisons kept, so nothing is hidden; each
    pair ``hh collect flag`` flagged with its flag (:attr:`DataIndex.flags`)."""
    import tempfile

    from ..services.export import export_collection
    from ..services.flags import stored_flags

    ids: dict[tuple[str, str, int], int] = {}
    with tempfile.TemporaryDirectory(prefix="hh-collected-") as tmp:
        export_collection(storage, tmp, min_strength=1, include_unfinished=True, comparison_ids=ids)
        index = DataIndex.load(tmp)
    index.label = "collected"
    flags = stored_flags(storage)
    for key, comparison in ids.items():
        at = index._by_key.get(key)
        if at is not None and comparison in flags:
            index.flags[at] = flags[comparison].as_row()
    return index
