"""Loading whole subsets: ``load_dataset`` (as on the dataset card) and streaming iterators.

``data`` says where the files are:

- ``None``: the cache (see :func:`hhrlhf.download.cache_dir`), downloading a missing file
  on first use like ``datasets`` does, unless offline mode is on;
- ``"sample"``: the small benign sample bundled with the package (no network);
- a directory laid out like upstream (``<subset>/<split>.jsonl.gz``, or ``.jsonl``);
- a single ``.jsonl`` / ``.jsonl.gz`` / ``.json`` file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

from .errors import HHError, RecordKindError, UnknownNameError
from .layout import SAMPLE_DIR, DataFile, DataSource, resolve_source, select_files
from .reader import Lenient, SkippedRow, read_attempts, read_pairs
from .records import RED_TEAM_KEYS, PreferencePair, RedTeamAttempt
from .subsets import RED_TEAM

__all__ = [
    "SAMPLE_DIR",
    "DataSource",
    "DatasetDict",
    "RecordList",
    "resolve_source",
    "load_dataset",
    "load_arrow",
    "iter_pairs",
    "iter_attempts",
    "load_pairs",
    "load_attempts",
]


#: The columns of a split of preference pairs: the fields a table holds (``column_names``),
#: then what each pair computes (the turn-level prompt and responses, and so on).
PAIR_COLUMNS = ("chosen", "rejected", "subset", "split", "index")
PAIR_DERIVED_COLUMNS = (
    "prompt",
    "chosen_response",
    "rejected_response",
    "human_turns",
    "classes",
)
ATTEMPT_COLUMNS = (*RED_TEAM_KEYS, "index")


class RecordList(list):
    """The records of one split: a list of records, datasets-like where that is cheap.

    Like a ``datasets.Dataset``: ``len``, ``rl["prompt"]`` (a column, as a list),
    ``rl[2:5]`` (a slice, still a :class:`RecordList`), ``column_names``, ``num_rows``,
    ``select``, ``filter``, ``shuffle(seed=)`` and ``to_hf(format=...)`` (a real
    ``datasets.Dataset`` in a trainer's format). Unlike one: ``rl[0]`` and iteration give
    the records themselves (:class:`~hhrlhf.records.PreferencePair`), not dicts, and the
    records live in memory (``to_hf`` for Arrow and ``map``). Its ``repr`` is one short line
    (subset, split, rows, fields), never the records.
    """

    subset: str | None = None
    split: str | None = None

    def __init__(self, records=(), *, subset: str | None = None, split: str | None = None):
        super().__init__(records)
        self.subset = subset
        self.split = split

    def _like(self, records) -> RecordList:
        return RecordList(records, subset=self.subset, split=self.split)

    @property
    def fields(self) -> list[str]:
        if not self:
            return []
        first = self[0]
        if isinstance(first, PreferencePair):
            return ["chosen", "rejected"]
        if hasattr(first, "to_dict"):
            return list(first.to_dict(real_keys=True))
        return list(first) if isinstance(first, dict) else []

    @property
    def column_names(self) -> list[str]:
        """The columns ``to_hf()`` gives (pairs: chosen, rejected, subset, split, index)."""
        if not self:
            return []
        first = list.__getitem__(self, 0)
        if isinstance(first, PreferencePair):
            return list(PAIR_COLUMNS)
        if isinstance(first, RedTeamAttempt):
            return list(ATTEMPT_COLUMNS)
        return list(first) if isinstance(first, dict) else []

    @property
    def num_rows(self) -> int:
        return len(self)

    def _columns(self) -> list[str]:
        names = self.column_names
        if self and isinstance(list.__getitem__(self, 0), PreferencePair):
            names += PAIR_DERIVED_COLUMNS
        return names

    def __getitem__(self, key):
        if isinstance(key, str):
            return self.column(key)
        if isinstance(key, slice):
            return self._like(list.__getitem__(self, key))
        return list.__getitem__(self, key)

    def column(self, name: str) -> list:
        """One column as a list, as ``rl[name]`` gives it: a field (``chosen``, ``index``,
        a red-team key) or, for pairs, ``prompt``, ``chosen_response``, ``rejected_response``,
        ``human_turns`` or ``classes``. An unknown name raises
        :class:`~hhrlhf.errors.UnknownNameError` listing the columns."""
        known = self._columns()
        if not self:
            return []
        if name not in known:
            raise UnknownNameError("column", name, known)
        first = list.__getitem__(self, 0)
        if isinstance(first, dict):
            return [r[name] for r in self]
        return [getattr(r, name) for r in self]

    def select(self, indices: Iterable[int]) -> RecordList:
        """The records at ``indices``, in that order (``datasets.Dataset.select``)."""
        return self._like(list.__getitem__(self, i) for i in indices)

    def filter(self, function) -> RecordList:
        """The records for which ``function(record)`` is true."""
        return self._like(r for r in self if function(r))

    def shuffle(self, seed: int | None = None) -> RecordList:
        """A shuffled copy (:class:`random.Random` with ``seed``: the same seed gives the same
        order here, not the order ``datasets`` gives for that seed)."""
        import random

        out = self._like(self)
        random.Random(seed).shuffle(out)
        return out

    def __add__(self, other):
        return self._like(list(self) + list(other))

    def copy(self) -> RecordList:
        return self._like(self)

    def __repr__(self) -> str:
        return (
            f"RecordList(subset={self.subset!r}, split={self.split!r}, rows={len(self)}, "
            f"fields={self.fields!r})"
        )

    def to_pandas(self, format=None, *, source: bool = True):
        """A ``pandas.DataFrame``: every field, or the rows of an export ``format``."""
        from .convert.tables import to_pandas

        return to_pandas(self, format=format, source=source)

    def to_arrow(self, format=None, *, source: bool = True):
        """A ``pyarrow.Table``: every field, or the rows of an export ``format``."""
        from .convert.tables import to_arrow

        return to_arrow(self, format=format, source=source)

    def to_hf(self, format=None, *, source: bool = True):
        """A ``datasets.Dataset``: every field, or the rows of an export ``format`` (``"dpo"``,
        ``"trl-standard"``, ``"trl-conversational"``, ...), as a trainer takes them;
        ``source=False`` leaves out subset, split and index."""
        from .convert.tables import to_hf

        return to_hf(self, format=format, source=source)


class DatasetDict(dict):
    """``{split: RecordList}``, as ``load_dataset`` returns it, with a short ``repr``.

    Like ``datasets.DatasetDict``: ``dd["test"]``, ``column_names`` and ``num_rows`` per
    split, and ``to_hf(format=...)``, a real ``datasets.DatasetDict`` of every split in a
    trainer's format.
    """

    @property
    def column_names(self) -> dict[str, list[str]]:
        return {k: v.column_names for k, v in self.items()}

    @property
    def num_rows(self) -> dict[str, int]:
        return {k: len(v) for k, v in self.items()}

    def to_hf(self, format=None, *, source: bool = True):
        """A ``datasets.DatasetDict`` of every split (see :meth:`RecordList.to_hf`)."""
        from .errors import require

        datasets = require("datasets", "hf", "to_hf()")
        return datasets.DatasetDict(
            {
                k: (v if isinstance(v, RecordList) else RecordList(v)).to_hf(format, source=source)
                for k, v in self.items()
            }
        )

    def __repr__(self) -> str:
        inner = "".join(
            f"\n    {k}: {{rows: {len(v)}, fields: {v.fields if isinstance(v, RecordList) else []}}}"
            for k, v in self.items()
        )
        return "DatasetDict({" + inner + ("\n" if inner else "") + "})"


def _names(data_dir) -> list:
    return [data_dir] if isinstance(data_dir, str) or data_dir is None else list(data_dir)


def _pair_files(src: DataSource, data_dir, split: str | None) -> list[DataFile]:
    """The preference files to read, in order; the red-team attempts are refused."""
    files = []
    for name in _names(data_dir):
        if name == RED_TEAM:
            raise RecordKindError(
                "red-team-attempts holds attempts, not pairs: use iter_attempts()",
                holds="attempts",
                wanted="pairs",
            )
        for f in select_files(name, split=split, data=src):
            if f.red_team:
                if src.kind == "file":
                    raise RecordKindError(
                        f"{f.path}: holds red-team attempts, not pairs",
                        holds="attempts",
                        wanted="pairs",
                    )
                continue
            if f not in files:
                files.append(f)
    return files


def iter_pairs(
    data_dir: str | Iterable[str] | None = None,
    *,
    split: str | None = None,
    data: str | os.PathLike | DataSource | None = None,
    lenient: bool | Lenient | None = False,
    skipped: list[SkippedRow] | None = None,
    fast: bool = True,
) -> Iterator[PreferencePair]:
    """Stream preference pairs (constant memory). ``data_dir`` may name several subsets.

    ``fast=True`` (the default) reads a block of lines at a time with
    :func:`hhrlhf.fastload.iter_file`; ``fast=False`` with :func:`~hhrlhf.reader.read_pairs`,
    a line at a time. The pairs, errors and lenient reports are the same either way.
    """
    policy = Lenient.of(lenient, skipped)
    if fast:
        from .fastload import iter_file as read
    else:
        read = read_pairs
    for f in _pair_files(resolve_source(data), data_dir, split):
        yield from read(f.path, subset=f.subset, split=f.split, lenient=policy)


def _attempts_file(src: DataSource, split: str | None = None) -> DataFile:
    files = select_files(RED_TEAM if src.kind != "file" else None, split=split, data=src)
    if src.kind == "file" and not files[0].red_team:
        raise RecordKindError(
            f"{src.root}: holds preference pairs, not red-team attempts",
            holds="pairs",
            wanted="attempts",
        )
    return files[0]


def iter_attempts(
    *,
    data: str | os.PathLike | DataSource | None = None,
    lenient: bool | Lenient | None = False,
    skipped: list[SkippedRow] | None = None,
) -> Iterator[RedTeamAttempt]:
    """Stream the red-team attempts."""
    policy = Lenient.of(lenient, skipped)
    f = _attempts_file(resolve_source(data))
    yield from read_attempts(f.path, lenient=policy)


def _pair_jobs(src: DataSource, data_dir, split: str | None) -> list:
    """``(path, subset, split)`` for every preference file to read, in ``iter_pairs`` order."""
    return [(f.path, f.subset, f.split) for f in _pair_files(src, data_dir, split)]


def load_pairs(
    data_dir=None,
    *,
    split=None,
    data=None,
    lenient: bool | Lenient | None = False,
    skipped=None,
    fast: bool = True,
) -> RecordList:
    """All pairs of :func:`iter_pairs`, in the same order, as one list.

    ``fast=True`` (the default) reads with :mod:`hhrlhf.fastload` (1 MiB blocks decoded,
    aligned and built a block at a time), whose records, errors and lenient reports are
    identical to the streaming reader's; ``fast=False`` collects :func:`iter_pairs` with
    the reference reader.
    Files are located (and, for the cache, downloaded) before reading.
    """
    policy = Lenient.of(lenient, skipped)
    src = resolve_source(data)
    jobs = _pair_jobs(src, data_dir, split)
    subsets = {s for _, s, _ in jobs}
    out = RecordList(
        subset=subsets.pop() if len(subsets) == 1 else None,
        split=split if split is not None else (jobs[0][2] if src.kind == "file" else None),
    )
    if not fast:
        out += iter_pairs(data_dir, split=split, data=src, lenient=policy, fast=False)
        return out
    from .fastload import load_files

    for pairs in load_files(jobs, lenient=policy):
        out += pairs
    return out


def load_attempts(*, data=None, lenient: bool | Lenient | None = False, skipped=None) -> RecordList:
    policy = Lenient.of(lenient, skipped)
    return RecordList(iter_attempts(data=data, lenient=policy), subset=RED_TEAM, split="train")


def _stream_jobs(src: DataSource, data_dir, split: str | None) -> list:
    """``(path, subset, split, red_team)`` of the files ``load_dataset`` reads, in order."""
    if data_dir == RED_TEAM or src.kind == "file":
        first = select_files(data_dir, split=split, data=src)[0]
        if first.red_team:
            return [(str(first.path), first.subset, first.split, True)]
    return [(str(f.path), f.subset, f.split, False) for f in _pair_files(src, data_dir, split)]


def load_dataset(
    data_dir: str | None = None,
    *,
    split: str | None = None,
    data: str | os.PathLike | DataSource | None = None,
    lenient: bool | Lenient | None = False,
    skipped: list[SkippedRow] | None = None,
    fast: bool = True,
    streaming: bool = False,
    format: str | None = None,
    source: bool = True,
):
    """Load like ``datasets.load_dataset("Anthropic/hh-rlhf", data_dir=...)``.

    Returns ``{"train": [...], "test": [...]}`` (red team: ``{"train": [...]}``), or the one
    list when ``split`` is given. ``data_dir=None`` is the four preference subsets together.
    ``fast`` as in :func:`load_pairs` (same records either way).

    ``streaming=True`` (needs ``hhrlhf[hf]``) reads nothing yet and returns a
    ``datasets.IterableDatasetDict`` (an ``IterableDataset`` when ``split`` is given) sharded
    by file, in export ``format`` when given, with the rows of
    ``load_dataset(...).to_hf(format=..., source=...)``: see :mod:`hhrlhf.streaming`.
    """
    policy = Lenient.of(lenient, skipped)
    src = resolve_source(data)
    if streaming or format is not None or not source:
        if not streaming:
            raise HHError(
                "format= and source= go with streaming=True; a loaded dataset takes them in "
                ".to_hf(format=..., source=...)"
            )
        if policy is not None:
            raise HHError(
                "lenient reading records skipped rows in this process, and a streaming "
                "dataset is read where it is iterated: load it without streaming=True"
            )
        from .streaming import stream_dataset

        jobs = _stream_jobs(src, data_dir, split)
        return stream_dataset(jobs, split=split, label=src.label, format=format, source=source)
    if data_dir == RED_TEAM or src.kind == "file":
        first = select_files(data_dir, split=split, data=src)[0]
        if first.red_team:
            records = RecordList(
                read_attempts(first.path, lenient=policy),
                subset=first.subset,
                split=first.split,
            )
            return records if split else DatasetDict({first.split: records})
    if split is not None:
        return load_pairs(data_dir, split=split, data=src, lenient=policy, fast=fast)
    jobs = _pair_jobs(src, data_dir, None)
    out = DatasetDict()
    if fast:
        from .fastload import load_files

        loaded: Iterable[Iterable[PreferencePair]] = load_files(jobs, lenient=policy)
    else:
        loaded = (
            read_pairs(path, subset=subset, split=s, lenient=policy) for path, subset, s in jobs
        )
    subsets = {subset for _, subset, _ in jobs}
    one = subsets.pop() if len(subsets) == 1 else None
    for (_, _, split_name), pairs in zip(jobs, loaded, strict=True):
        out.setdefault(split_name, RecordList(subset=one, split=split_name)).extend(pairs)
    return out


def load_arrow(
    data_dir: str | Iterable[str] | None = None,
    *,
    split: str | None = None,
    data: str | os.PathLike | DataSource | None = None,
    columns: str = "dpo",
    lenient: bool | Lenient | None = False,
    skipped: list[SkippedRow] | None = None,
):
    """Load preference pairs straight into ``pyarrow`` tables (needs ``hhrlhf[hf]``).

    Returns ``{split: pyarrow.Table}``, or the one table when ``split`` is given. With
    ``columns="dpo"`` (the default) a table holds ``prompt``, ``chosen``, ``rejected`` as
    the dpo format writes them (the prompt ends with ``"\n\nAssistant:"``, each response
    keeps its leading space, ``prompt + chosen`` is the upstream transcript); with
    ``columns="raw"``, the upstream ``chosen`` and ``rejected``. Then ``subset``, ``split``
    and ``index`` (the 0-based line). ``datasets.Dataset(table)`` makes it a trainer's
    dataset.

    Rows, errors and lenient reports are those of :func:`load_dataset`. Where the native
    block parser is built, the strings go from the decompressed bytes into Arrow buffers
    without a Python ``str`` per row.
    """
    policy = Lenient.of(lenient, skipped)
    from .errors import require, require_installed
    from .fastload import ARROW_COLUMNS, load_files_arrow, pairs_table

    # installed or a clear error now; imported while the files are parsed (load_files_arrow)
    require_installed("pyarrow", "hf", "load_arrow()")
    if columns not in ARROW_COLUMNS:
        raise UnknownNameError("columns", columns, list(ARROW_COLUMNS))
    src = resolve_source(data)
    jobs = _pair_jobs(src, data_dir, split)  # refuses the red-team attempts
    tables = load_files_arrow(jobs, columns=columns, lenient=policy)
    pa = require("pyarrow", "hf", "load_arrow()")
    out: dict[str, list] = {}
    for (_, _, split_name), table in zip(jobs, tables, strict=True):
        out.setdefault(split_name, []).append(table)
    merged = {name: pa.concat_tables(ts) for name, ts in out.items()}
    if split is not None:
        return merged.get(split, pairs_table([], columns))
    return merged
