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
from dataclasses import dataclass
from pathlib import Path

from .errors import HHError, NotCachedError, UnknownSubsetError
from .reader import SkippedRow, detect_container, read_attempts, read_objects, read_pairs
from .records import PreferencePair, RedTeamAttempt
from .subsets import DEFAULT, RED_TEAM, SUBSETS, FileSpec, Subset, resolve_subsets

__all__ = [
    "SAMPLE_DIR",
    "DataSource",
    "RecordList",
    "resolve_source",
    "load_dataset",
    "load_arrow",
    "iter_pairs",
    "iter_attempts",
    "load_pairs",
    "load_attempts",
]

#: The bundled sample, laid out exactly like upstream.
SAMPLE_DIR = Path(__file__).parent / "sample_data"


class RecordList(list):
    """The records of one split: a plain list, plus converters to the usual table libraries."""

    def to_pandas(self):
        from .convert.tables import to_pandas

        return to_pandas(self)

    def to_arrow(self):
        from .convert.tables import to_arrow

        return to_arrow(self)

    def to_hf(self):
        from .convert.tables import to_hf

        return to_hf(self)


@dataclass(frozen=True)
class DataSource:
    """Where data comes from: ``kind`` is ``"cache"``, ``"sample"``, ``"dir"`` or ``"file"``."""

    kind: str
    root: Path | None = None
    cache_dir: Path | None = None
    offline: bool | None = None
    source: str = "hub"
    revision: str | None = None

    @property
    def label(self) -> str:
        return (
            "sample"
            if self.kind == "sample"
            else "cache"
            if self.kind == "cache"
            else str(self.root)
        )

    def locate(self, spec: FileSpec, *, download: bool = True) -> Path:
        """The local path of one registry file, downloading it into the cache if allowed."""
        if self.kind == "file":
            return self.root
        if self.kind == "cache":
            from . import download as dl

            path = dl.cached_path(spec, cache_dir=self.cache_dir, revision=self.revision)
            if path.exists():
                return path
            if not download:
                raise NotCachedError(path)
            return dl.ensure_file(
                spec,
                cache_dir=self.cache_dir,
                source=self.source,
                revision=self.revision,
                offline=self.offline,
                progress=True,
            )
        base = self.root / spec.path
        for candidate in (base, base.with_suffix(""), base.with_suffix("").with_suffix(".json")):
            if candidate.exists():
                return candidate
        raise HHError(
            f"{base}: no such file (expected the upstream layout <subset>/<split>.jsonl.gz)"
        )

    def has(self, spec: FileSpec) -> bool:
        try:
            if self.kind == "cache":
                from . import download as dl

                return dl.cached_path(
                    spec, cache_dir=self.cache_dir, revision=self.revision
                ).exists()
            self.locate(spec, download=False)
            return True
        except HHError:
            return False

    def file_identity(self) -> tuple[str | None, str | None]:
        """For a single file: (subset, split) guessed from its path, e.g. ``harmless-base/test.jsonl.gz``."""
        assert self.kind == "file"
        name = self.root.name.split(".")[0]
        parent = self.root.parent.name
        subset = parent if parent in SUBSETS else None
        if name == "red_team_attempts":
            return RED_TEAM, "train"
        split = name if name in ("train", "test") else "train"
        return subset, split


def resolve_source(
    data: str | os.PathLike | DataSource | None = None,
    *,
    cache_dir: str | os.PathLike | None = None,
    offline: bool | None = None,
    source: str = "hub",
    revision: str | None = None,
) -> DataSource:
    """Turn ``--data`` (None, ``"sample"``, a directory or a file) into a :class:`DataSource`."""
    if isinstance(data, DataSource):
        return data
    if data is None or str(data) == "cache":
        return DataSource(
            "cache", None, Path(cache_dir) if cache_dir else None, offline, source, revision
        )
    if str(data) == "sample":
        return DataSource("sample", SAMPLE_DIR)
    path = Path(data).expanduser()
    if path.is_dir():
        return DataSource("dir", path)
    if path.is_file():
        return DataSource("file", path)
    raise HHError(f"{path}: no such file or directory (--data takes a path, 'sample' or 'cache')")


def _is_red_team_file(path: Path) -> bool:
    if "red_team" in path.name:
        return True
    # a JSON array is the red-team layout; JSONL files may hold either kind
    if detect_container(path) == "array":
        for _, obj in read_objects(path):
            return isinstance(obj, dict) and "transcript" in obj
    for _, obj in read_objects(path):
        return isinstance(obj, dict) and "transcript" in obj and "chosen" not in obj
    return False


def _files(
    src: DataSource, data_dir: str | None, split: str | None
) -> list[tuple[Subset | None, str, Path | FileSpec]]:
    """The (subset, split, file) triples to read, in registry order."""
    if src.kind == "file":
        subset_name, file_split = src.file_identity()
        if split is not None and split != file_split:
            raise HHError(f"{src.root}: this file is the {file_split!r} split, not {split!r}")
        subset = SUBSETS.get(subset_name) if subset_name else None
        return [(subset, file_split, src.root)]
    out = []
    for subset in resolve_subsets(data_dir or DEFAULT):
        for spec in subset.files:
            if split is None or spec.split == split:
                out.append((subset, spec.split, spec))
        if split is not None and split not in subset.splits:
            raise UnknownSubsetError(split, subset.splits)
    return out


def iter_pairs(
    data_dir: str | Iterable[str] | None = None,
    *,
    split: str | None = None,
    data: str | os.PathLike | DataSource | None = None,
    lenient: bool = False,
    skipped: list[SkippedRow] | None = None,
    fast: bool = True,
) -> Iterator[PreferencePair]:
    """Stream preference pairs (constant memory). ``data_dir`` may name several subsets.

    ``fast=True`` (the default) reads a block of lines at a time with
    :func:`hhrlhf.fastload.iter_file`; ``fast=False`` with :func:`~hhrlhf.reader.read_pairs`,
    a line at a time. The pairs, errors and lenient reports are the same either way.
    """
    if fast:
        from .fastload import iter_file as read
    else:
        read = read_pairs
    src = resolve_source(data)
    names = [data_dir] if isinstance(data_dir, str) or data_dir is None else list(data_dir)
    for name in names:
        if name == RED_TEAM:
            raise HHError("red-team-attempts holds attempts, not pairs: use iter_attempts()")
        for subset, split_name, f in _files(src, name, split):
            path = f if isinstance(f, Path) else src.locate(f)
            yield from read(
                path,
                subset=subset.name if subset else None,
                split=split_name,
                lenient=lenient,
                skipped=skipped,
            )


def iter_attempts(
    *,
    data: str | os.PathLike | DataSource | None = None,
    lenient: bool = False,
    skipped: list[SkippedRow] | None = None,
) -> Iterator[RedTeamAttempt]:
    """Stream the red-team attempts."""
    src = resolve_source(data)
    path = src.root if src.kind == "file" else src.locate(SUBSETS[RED_TEAM].files[0])
    yield from read_attempts(path, lenient=lenient, skipped=skipped)


def _pair_jobs(src: DataSource, data_dir, split: str | None) -> list:
    """``(path, subset, split)`` for every preference file to read, in ``iter_pairs`` order."""
    names = [data_dir] if isinstance(data_dir, str) or data_dir is None else list(data_dir)
    jobs = []
    for name in names:
        if name == RED_TEAM:
            raise HHError("red-team-attempts holds attempts, not pairs: use iter_attempts()")
        for subset, split_name, f in _files(src, name, split):
            path = f if isinstance(f, Path) else src.locate(f)
            jobs.append((path, subset.name if subset else None, split_name))
    return jobs


def load_pairs(
    data_dir=None, *, split=None, data=None, lenient=False, skipped=None, fast: bool = True
) -> RecordList:
    """All pairs of :func:`iter_pairs`, in the same order, as one list.

    ``fast=True`` (the default) reads with :mod:`hhrlhf.fastload` (1 MiB blocks decoded,
    aligned and built a block at a time), whose records, errors and lenient reports are
    identical to the streaming reader's; ``fast=False`` collects :func:`iter_pairs` with
    the reference reader.
    Files are located (and, for the cache, downloaded) before reading.
    """
    if not fast:
        return RecordList(
            iter_pairs(
                data_dir, split=split, data=data, lenient=lenient, skipped=skipped, fast=False
            )
        )
    from .fastload import load_files

    jobs = _pair_jobs(resolve_source(data), data_dir, split)
    out = RecordList()
    for pairs in load_files(jobs, lenient=lenient, skipped=skipped):
        out += pairs
    return out


def load_attempts(*, data=None, lenient=False, skipped=None) -> RecordList:
    return RecordList(iter_attempts(data=data, lenient=lenient, skipped=skipped))


def load_dataset(
    data_dir: str | None = None,
    *,
    split: str | None = None,
    data: str | os.PathLike | DataSource | None = None,
    lenient: bool = False,
    skipped: list[SkippedRow] | None = None,
    fast: bool = True,
) -> dict[str, RecordList] | RecordList:
    """Load like ``datasets.load_dataset("Anthropic/hh-rlhf", data_dir=...)``.

    Returns ``{"train": [...], "test": [...]}`` (red team: ``{"train": [...]}``), or the one
    list when ``split`` is given. ``data_dir=None`` is the four preference subsets together.
    ``fast`` as in :func:`load_pairs` (same records either way).
    """
    src = resolve_source(data)
    red = data_dir == RED_TEAM or (src.kind == "file" and _is_red_team_file(src.root))
    if red:
        if split not in (None, "train"):
            raise UnknownSubsetError(split, ("train",))
        records = load_attempts(data=src, lenient=lenient, skipped=skipped)
        return records if split else {"train": records}
    if split is not None:
        return load_pairs(
            data_dir, split=split, data=src, lenient=lenient, skipped=skipped, fast=fast
        )
    jobs = _pair_jobs(src, data_dir, None)
    out: dict[str, RecordList] = {}
    if fast:
        from .fastload import load_files

        loaded = load_files(jobs, lenient=lenient, skipped=skipped)
    else:
        loaded = (
            read_pairs(path, subset=subset, split=s, lenient=lenient, skipped=skipped)
            for path, subset, s in jobs
        )
    for (_, _, split_name), pairs in zip(jobs, loaded, strict=True):
        out.setdefault(split_name, RecordList()).extend(pairs)
    return out


def load_arrow(
    data_dir: str | Iterable[str] | None = None,
    *,
    split: str | None = None,
    data: str | os.PathLike | DataSource | None = None,
    columns: str = "dpo",
    lenient: bool = False,
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
    from .errors import require
    from .fastload import ARROW_COLUMNS, load_files_arrow, pairs_table

    pa = require("pyarrow", "hf", "load_arrow()")
    if columns not in ARROW_COLUMNS:
        raise HHError(f"columns must be one of {', '.join(ARROW_COLUMNS)}, not {columns!r}")
    src = resolve_source(data)
    if data_dir == RED_TEAM or (src.kind == "file" and _is_red_team_file(src.root)):
        raise HHError("red-team-attempts holds attempts, not pairs: load_arrow() reads pairs")
    jobs = _pair_jobs(src, data_dir, split)
    tables = load_files_arrow(jobs, columns=columns, lenient=lenient, skipped=skipped)
    out: dict[str, list] = {}
    for (_, _, split_name), table in zip(jobs, tables, strict=True):
        out.setdefault(split_name, []).append(table)
    merged = {name: pa.concat_tables(ts) for name, ts in out.items()}
    if split is not None:
        return merged.get(split, pairs_table([], columns))
    return merged
