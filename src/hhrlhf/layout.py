"""Which files to read: the one file selection behind the library and every command.

``data`` says where the files are (see :func:`resolve_source`):

- ``None`` (or ``"cache"``): the download cache, holding the registry's files
  (:data:`hhrlhf.subsets.SUBSETS`), a missing one downloaded on first use unless offline;
- ``"sample"``: the small benign sample bundled with the package;
- a directory of subset folders, ``<subset>/<split>.jsonl.gz`` (or ``.jsonl``, or a ``.json``
  array), as upstream lays them out. Any folder name is a subset; only upstream's file names
  are read: ``train`` and ``test`` (the splits) and ``red_team_attempts`` (the ``train``
  split of the attempts, as in ``red-team-attempts/red_team_attempts.jsonl.gz``). Any other
  data file in a subset folder (``notes.jsonl``, a ``train.jsonl`` beside ``train.jsonl.gz``)
  is ignored and named in an :class:`IgnoredFilesWarning` (see :func:`ignored_files`);
- a single file. Its subset and split come from its path when it is laid out like upstream
  (``.../harmless-base/test.jsonl.gz``), otherwise from what the caller says (``subsets`` and
  ``split``; on the command line SUBSET or ``--subset``, and ``--split``); a split that
  neither says is an error, never a guess.

:func:`select_files` turns ``(subsets, split, data)`` into :class:`DataFile` entries, in
order: upstream registry subsets first, then other subsets sorted by name; ``train``, ``test``,
then other splits sorted. Asking for a subset or a split that is not there is an
:class:`~hhrlhf.errors.UnknownNameError` naming what is there.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .errors import HHError, NoDataError, NotCachedError, UnknownNameError
from .subsets import DEFAULT, PREFERENCE_SUBSETS, RED_TEAM, SUBSETS, FileSpec

__all__ = [
    "SAMPLE_DIR",
    "SUFFIXES",
    "DataFile",
    "DataSource",
    "resolve_source",
    "scan",
    "ignored_files",
    "IgnoredFilesWarning",
    "file_identity",
    "select_files",
    "preferred_split",
    "why_no_data",
]

#: The bundled sample, laid out exactly like upstream.
SAMPLE_DIR = Path(__file__).parent / "sample_data"
#: File names a split may have, in order of preference when several exist.
SUFFIXES = (".jsonl.gz", ".jsonl", ".json")
#: The file name (without suffix) of the red-team attempts.
RED_TEAM_STEM = "red_team_attempts"
#: The file names (without suffix) a directory's subset folders are read for, as upstream
#: names its files; any other data file there is ignored (and named).
UPSTREAM_STEMS = ("train", "test", RED_TEAM_STEM)


class IgnoredFilesWarning(UserWarning):
    """A data directory holds data files that are not read: not named as upstream names
    them, or a second copy of a split in another container. ``files`` lists them."""

    def __init__(self, root: Path, files: list[Path]) -> None:
        self.root = root
        self.files = files
        names = ", ".join(f.relative_to(root).as_posix() for f in files)
        super().__init__(
            f"{root}: ignored {len(files)} file(s) that are not upstream's names "
            f"(<subset>/train.jsonl.gz, <subset>/test.jsonl.gz, "
            f"red-team-attempts/{RED_TEAM_STEM}.jsonl.gz) or a second copy of a split: {names}"
        )


@dataclass(frozen=True, slots=True)
class DataFile:
    """One file to read: its subset (None when a single file does not say), split and path.

    ``rel`` is the path as upstream names it (``harmless-base/test.jsonl.gz``), or the file's
    own name for a single file; ``red_team`` marks the red-team attempts.
    """

    subset: str | None
    split: str
    path: Path
    rel: str
    red_team: bool = False

    @property
    def key(self) -> str:
        return f"{self.subset or 'file'}/{self.split}"


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
        """The cache path of one registry file, downloading it into the cache if allowed."""
        if self.kind != "cache":
            raise HHError(f"{self.label}: locate() is for the cache; use select_files()")
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
    raise NoDataError(path, "no such file or directory (--data takes a path, 'sample' or 'cache')")


def _split_name(filename: str) -> tuple[str, int] | None:
    """(split, preference) of a file name such as ``test.jsonl.gz``; None if not a data file."""
    if filename.startswith("."):
        return None
    for rank, suffix in enumerate(SUFFIXES):
        if filename.endswith(suffix) and len(filename) > len(suffix):
            stem = filename[: -len(suffix)]
            return ("train" if stem == RED_TEAM_STEM else stem), rank
    return None


def _split_order(splits) -> list[str]:
    first = [s for s in ("train", "test") if s in splits]
    return first + sorted(s for s in splits if s not in first)


def _subset_order(names) -> list[str]:
    known = [n for n in SUBSETS if n in names]
    return known + sorted(n for n in names if n not in SUBSETS)


def _scan(root: Path) -> tuple[dict[str, dict[str, Path]], list[Path]]:
    """What :func:`scan` returns, and the data files in subset folders that it leaves out."""
    found: dict[str, dict[str, tuple[int, Path]]] = {}
    ignored: list[Path] = []
    try:
        folders = [d for d in root.iterdir() if d.is_dir() and not d.name.startswith(".")]
    except OSError as exc:
        raise NoDataError(root, f"cannot list the directory ({exc.strerror or exc})") from None
    for folder in folders:
        splits: dict[str, tuple[int, Path]] = {}
        for f in sorted(folder.iterdir()):
            named = _split_name(f.name)
            if named is None or not f.is_file():
                continue
            if f.name[: -len(SUFFIXES[named[1]])] not in UPSTREAM_STEMS:
                ignored.append(f)
                continue
            split, rank = named
            if split in splits:  # one file per split: the preferred container wins
                kept, dropped = sorted([splits[split], (rank, f)])
                splits[split] = kept
                ignored.append(dropped[1])
            else:
                splits[split] = (rank, f)
        if splits:
            found[folder.name] = splits
    tables = {
        name: {s: found[name][s][1] for s in _split_order(found[name])}
        for name in _subset_order(found)
    }
    return tables, sorted(ignored)


def scan(root: str | os.PathLike) -> dict[str, dict[str, Path]]:
    """``{subset: {split: path}}`` of the data files in a directory's subset folders, in order
    (only upstream's file names: see :func:`ignored_files` for the rest)."""
    return _scan(Path(root))[0]


def ignored_files(root: str | os.PathLike) -> list[Path]:
    """The data files (``.jsonl.gz``, ``.jsonl``, ``.json``) in a directory's subset folders
    that are not read: not upstream's names, or a split's second copy in another container.

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> (root / "harmless-base").mkdir()
    >>> for name in ("test.jsonl.gz", "test.jsonl", "notes.jsonl"):
    ...     _ = (root / "harmless-base" / name).write_text("")
    >>> [p.name for p in ignored_files(root)]
    ['notes.jsonl', 'test.jsonl']
    """
    return _scan(Path(root))[1]


def _available(src: DataSource) -> Mapping[str, Mapping[str, Path | FileSpec]]:
    if src.kind == "cache" or src.root is None:  # only the cache has no root
        return {name: {f.split: f for f in s.files} for name, s in SUBSETS.items()}
    found, ignored = _scan(src.root)
    if ignored:
        warnings.warn(IgnoredFilesWarning(src.root, ignored), stacklevel=3)
    return found


def _is_red_team_file(path: Path) -> bool:
    """A single file holds red-team attempts: by its name, or by its first record."""
    from .reader import detect_container, read_objects

    if RED_TEAM_STEM in path.name:
        return True
    container = detect_container(path)
    for _, obj in read_objects(path):
        if not isinstance(obj, dict) or "transcript" not in obj:
            return False
        return container == "array" or "chosen" not in obj
    return False


def file_identity(path: str | os.PathLike) -> tuple[str | None, str | None]:
    """(subset, split) that a single file's path says, each None when the path does not say.

    ``.../harmless-base/test.jsonl.gz`` is ``("harmless-base", "test")``;
    ``.../red_team_attempts.jsonl.gz`` is ``("red-team-attempts", "train")``; a file named
    ``train.jsonl`` or ``test.jsonl`` elsewhere names its split but not its subset.
    """
    path = Path(path)
    named = _split_name(path.name)
    stem = path.name.split(".")[0]
    if path.name.startswith(RED_TEAM_STEM):
        return RED_TEAM, "train"
    parent = path.parent.name
    if parent in SUBSETS and named is not None:
        return parent, named[0]
    return None, (stem if stem in ("train", "test") else None)


def _names(subsets) -> list[str]:
    if subsets is None or isinstance(subsets, str):
        return [subsets or DEFAULT]
    return list(subsets) or [DEFAULT]


def _single_file(src: DataSource, subsets, split: str | None) -> list[DataFile]:
    path = src.root
    assert path is not None
    subset, file_split = file_identity(path)
    asked = [n for n in _names(subsets) if n not in (DEFAULT, "all")]
    if subset is not None and asked and subset not in asked:
        raise HHError(
            f"{path}: this file is {subset}/{file_split or '?'}, not {' or '.join(asked)}; "
            "drop the subset name or pass the file of that subset"
        )
    if subset is None and len(asked) == 1:
        subset = asked[0]
    elif subset is None and len(asked) > 1:
        raise HHError(f"{path}: one file is one subset; name one, not {', '.join(asked)}")
    if file_split is not None and split is not None and split != file_split:
        raise UnknownNameError("split", split, [file_split], where=str(path))
    file_split = file_split or split
    red = subset == RED_TEAM or _is_red_team_file(path)
    if red:
        subset = subset or RED_TEAM
        file_split = file_split or "train"
    if file_split is None:
        raise HHError(
            f"{path}: the file name does not say which split it is; pass the split "
            "(--split train, or split='train'), or name the file <subset>/<split>.jsonl.gz"
        )
    found = [DataFile(subset, file_split, path, path.name, red)]
    _refuse_exports(found)
    return found


def _split_files(folder: Path) -> list[str]:
    """The names of upstream's split files right inside ``folder`` (a subset folder's)."""
    try:
        names = sorted(f.name for f in folder.iterdir() if f.is_file())
    except OSError:
        return []
    return [n for n in names if _split_name(n) and n.split(".")[0] in UPSTREAM_STEMS]


def why_no_data(src: DataSource) -> str:
    """Why a directory holds no subsets: it is one (its parent is the data), or it is empty."""
    if src.root is not None and (held := _split_files(src.root)):
        return (
            f"this folder is a subset (it holds {', '.join(held)}): pass its parent, "
            f"{src.root.parent}, or one of its files"
        )
    return (
        "no data files found (expected <subset>/<split>.jsonl.gz, e.g. harmless-base/test.jsonl.gz)"
    )


def select_files(
    subsets: str | list[str] | tuple[str, ...] | None = None,
    *,
    split: str | None = None,
    data: str | os.PathLike | DataSource | None = None,
    download: bool = True,
) -> list[DataFile]:
    """The files to read for ``subsets`` (names, ``"default"`` or ``"all"``) and ``split``.

    ``"default"`` (or nothing) is every preference subset there (every subset but the
    red-team attempts); ``"all"`` adds the attempts. A subset or split named but not there
    raises :class:`~hhrlhf.errors.UnknownNameError` listing what is there. With the cache, a
    file not yet downloaded is downloaded (``download=False``: raises
    :class:`~hhrlhf.errors.NotCachedError` instead).
    """
    src = resolve_source(data)
    if src.kind == "file":
        return _single_file(src, subsets, split)
    available = _available(src)
    where = None if src.kind == "cache" else src.label
    if not available:
        raise NoDataError(src.label, why_no_data(src))
    picked: list[str] = []
    named: list[str] = []
    for name in _names(subsets):
        if name == DEFAULT:
            group = (
                list(PREFERENCE_SUBSETS)
                if src.kind == "cache"
                else [n for n in available if n != RED_TEAM]
            )
        elif name == "all":
            group = list(available)
        elif name in available:
            group = [name]
            named.append(name)
        else:
            known = list(available) + ([DEFAULT, "all"] if where is None else [])
            raise UnknownNameError("subset", name, known, where=where)
        picked += [n for n in group if n not in picked]
    if not picked:
        raise UnknownNameError("preference subset", DEFAULT, list(available), where=where)
    if split is not None:
        there = _split_order({s for n in picked for s in available[n]})
        if split not in there:
            raise UnknownNameError("split", split, there, where=where or src.label)
        for name in named:
            if split not in available[name]:
                raise UnknownNameError(
                    "split",
                    split,
                    list(available[name]),
                    where=f"{src.label}/{name}" if where else name,
                )
    out = []
    for name in picked:
        for s, f in available[name].items():
            if split is not None and s != split:
                continue
            if isinstance(f, Path):
                rel = f"{name}/{f.name}"
                path = f
            else:
                rel = f.path
                path = src.locate(f, download=download)
            out.append(DataFile(name, s, path, rel, name == RED_TEAM))
    if src.kind == "dir":
        _refuse_exports(out)
    return out


def _refuse_exports(files: list[DataFile]) -> None:
    """An ``hh export`` output given as data is named (:mod:`hhrlhf.exports`), not read: each
    file's first row is looked at (one that cannot be read is left to the reader to report)."""
    from .exports import refuse_export
    from .reader import read_objects

    for f in files:
        if f.red_team:
            continue
        rows = read_objects(f.path)
        try:
            first = next(rows, None)
        except (HHError, OSError, ValueError):
            continue
        finally:
            close = getattr(rows, "close", None)  # a generator: its open file closes now
            if close is not None:
                close()
        if first is not None:
            refuse_export(f.path, *first)


def preferred_split(files: list[DataFile], preferred: str) -> str | None:
    """``preferred`` when some of ``files`` are of that split, else None (every split there)."""
    return preferred if any(f.split == preferred for f in files) else None
