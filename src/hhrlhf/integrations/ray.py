"""HH-RLHF on Ray Data: read, score, check and export pairs on many cores or many machines.

Needs ``pip install 'hhrlhf[ray]'``; importing this module without Ray raises
:class:`~hhrlhf.errors.MissingExtraError` naming it. Tested with Ray 2.60.

* :func:`read_pairs` and :func:`read_redteam` read with hhrlhf's own readers, **one read task
  per file**: a ``.jsonl.gz`` cannot be split (a gzip stream is read from its start), so a
  job is as parallel as its files are many. HH is eight preference files; a larger corpus
  should be written as many files (``ds.repartition(n).write_json(...)`` or any writer
  that writes a file per block). The errors are the library's, raised in the read task and
  re-raised by Ray on the driver (a cut ``.gz`` is a
  :class:`~hhrlhf.errors.TruncatedStreamError`, never a silently short dataset).
* :func:`score_pairs` adds ``chosen_score``, ``rejected_score`` and ``margin`` with a saved
  preference model loaded once per actor (:class:`PairScorer`); :func:`check_pairs` adds
  the per-pair check classes (``flags``, ``flag_details``); :func:`to_format` turns rows into
  any export format's rows; :func:`write_upstream` writes upstream's layout. Each uses the
  same code as one process, so the values are the same: the same rows, bit-identical
  scores, the same export rows.

``read_pairs`` gives each file's rows in the file's order; files may interleave, and a map on
several workers may finish blocks out of order. ``DataContext.get_current().execution_options
.preserve_order = True``, set before the dataset is built, keeps one process's order.

Every node must see the files and the model directory at the same path (a shared file
system, or the paths copied to each node), and have hhrlhf installed (``ray job submit
--runtime-env-json '{"pip": ["hhrlhf[ray,reward]"]}'``).

>>> import ray
>>> from hhrlhf.integrations import ray as hray
>>> ray.init(num_cpus=2)  # doctest: +SKIP
>>> ds = hray.score_pairs(hray.read_pairs("sample"), "pm/", concurrency=(1, 2))  # doctest: +SKIP
>>> hray.to_format(ds, "dpo").write_json("out/")  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ..errors import HHError, MissingExtraError, require

_FEATURE = "hhrlhf.integrations.ray"
try:
    import ray.data
    from ray.data import Datasource, ReadTask
    from ray.data.block import BlockMetadata
except ImportError as exc:
    raise MissingExtraError("ray", "ray", _FEATURE) from exc
pa = require("pyarrow", "ray", _FEATURE)

__all__ = [
    "PAIR_COLUMNS",
    "SCORE_COLUMNS",
    "FLAG_COLUMNS",
    "read_pairs",
    "read_redteam",
    "PairScorer",
    "score_pairs",
    "check_pairs",
    "pair_check_names",
    "to_format",
    "write_upstream",
]

#: The columns of :func:`read_pairs`: where the pair is, the turn-level split of the
#: transcripts (``prompt + chosen_response == chosen``) and the upstream transcripts.
PAIR_COLUMNS = (
    "subset",
    "split",
    "index",
    "prompt",
    "chosen_response",
    "rejected_response",
    "chosen",
    "rejected",
)
#: What :func:`score_pairs` adds (``margin = chosen_score - rejected_score``).
SCORE_COLUMNS = ("chosen_score", "rejected_score", "margin")
#: What :func:`check_pairs` adds: the classes flagged on each pair, and why, in step.
FLAG_COLUMNS = ("flags", "flag_details")

_PAIR_SCHEMA = pa.schema(
    [(name, pa.int64() if name == "index" else pa.string()) for name in PAIR_COLUMNS]
)
#: Rows a read task puts in one block (a few megabytes of text).
BLOCK_ROWS = 4096


# --------------------------------------------------------------------------- reading


class _FileDatasource(Datasource):  # type: ignore[misc]  # Ray's names are Any here
    """One read task per file: ``read(path, subset, split)`` yields its blocks."""

    def __init__(
        self, name: str, jobs: Sequence[tuple[str, str | None, str]], read: Any, schema: Any
    ) -> None:
        self._name = name
        self._jobs = list(jobs)
        self._read = read
        self._schema = schema

    def get_name(self) -> str:
        return self._name

    def estimate_inmemory_data_size(self) -> int:
        # gzip'd text is about a quarter of its size; each pair is held twice (split + whole)
        return sum(8 * os.path.getsize(path) for path, _, _ in self._jobs)

    def get_read_tasks(
        self, parallelism: int, per_task_row_limit: int | None = None, **_: Any
    ) -> list[Any]:
        tasks = []
        for path, subset, split in self._jobs:
            meta = BlockMetadata(
                num_rows=None, size_bytes=None, input_files=(path,), exec_stats=None
            )
            read = functools.partial(self._read, path, subset, split)
            tasks.append(
                ReadTask(read, meta, schema=self._schema, per_task_row_limit=per_task_row_limit)
            )
        return tasks


def _pairs_table(pairs: Sequence[Any]) -> Any:
    """The :data:`PAIR_COLUMNS` table of :class:`~hhrlhf.records.PreferencePair` records."""
    cols = {name: [getattr(p, name) for p in pairs] for name in PAIR_COLUMNS}
    return pa.table(cols, schema=_PAIR_SCHEMA)


def _read_pair_file(
    path: str, subset: str | None, split: str, rows: int = BLOCK_ROWS
) -> Iterator[Any]:
    """A file's pairs, ``rows`` at a time, read by :func:`hhrlhf.fastload.iter_file` (the
    reference reader's pairs and errors, at the block parser's speed)."""
    from ..fastload import iter_file

    batch: list[Any] = []
    sent = False
    for pair in iter_file(path, subset=subset, split=split):
        batch.append(pair)
        if len(batch) == rows:
            yield _pairs_table(batch)
            batch, sent = [], True
    if batch or not sent:
        yield _pairs_table(batch)


def _splits(splits: str | Iterable[str] | None) -> list[str | None]:
    if splits is None or isinstance(splits, str):
        return [splits]
    return list(splits) or [None]


def read_pairs(
    data: str | os.PathLike[str] | None = None,
    subsets: str | Sequence[str] | None = None,
    splits: str | Sequence[str] | None = None,
    *,
    rows_per_block: int = BLOCK_ROWS,
) -> Any:
    """The preference pairs of ``data`` as a ``ray.data.Dataset``, one row per pair.

    ``data`` takes the CLI's ``--data`` forms: ``"sample"``, a folder laid out like upstream
    (a download, a collected export), a single file, or None for the cache. ``subsets`` and
    ``splits`` (a name or a list; None: every preference subset and split) select files as
    :func:`hhrlhf.select_files` does, and a name that is not there is an
    :class:`~hhrlhf.errors.UnknownNameError` now, before Ray runs anything. Columns:
    :data:`PAIR_COLUMNS`. One read task per file (see the module's notes), which yields
    blocks of ``rows_per_block`` rows.
    """
    from ..dataset import _pair_files
    from ..layout import resolve_source

    src = resolve_source(data)
    files = []
    for split in _splits(splits):
        files += [f for f in _pair_files(src, subsets, split) if f not in files]
    jobs = [(str(f.path), f.subset, f.split) for f in files]
    read = functools.partial(_read_pair_file, rows=rows_per_block)
    source = _FileDatasource("HHPairs", jobs, read, _PAIR_SCHEMA)
    return ray.data.read_datasource(source, override_num_blocks=len(jobs))


def _read_attempt_file(path: str, subset: str | None, split: str) -> Iterator[Any]:
    """The red-team attempts of a file (one JSON array, or JSONL), decoded a record at a time
    by :func:`hhrlhf.read_attempts`, as the table ``load_attempts(...).to_arrow()`` gives
    (one column type for the whole file), in blocks of :data:`BLOCK_ROWS` rows."""
    from ..convert.tables import to_arrow
    from ..reader import read_attempts

    table = to_arrow(list(read_attempts(path)))
    for start in range(0, max(table.num_rows, 1), BLOCK_ROWS):
        yield table.slice(start, BLOCK_ROWS)


def read_redteam(data: str | os.PathLike[str] | None = None) -> Any:
    """The red-team attempts of ``data`` (``--data`` forms, as :func:`read_pairs`) as a
    ``ray.data.Dataset``: the ten fields and ``index``, one row per attempt.

    Ray's own ``read_json`` reads upstream's file (one JSON array) as one row; this reads it
    with hhrlhf's reader, an element at a time, with its errors.
    """
    from ..dataset import _attempts_file
    from ..layout import resolve_source

    f = _attempts_file(resolve_source(data))
    source = _FileDatasource(
        "HHRedTeam", [(str(f.path), f.subset, f.split)], _read_attempt_file, None
    )
    return ray.data.read_datasource(source, override_num_blocks=1)


# --------------------------------------------------------------------------- batches


def _column(batch: Any, name: str) -> list[Any]:
    if name not in batch.column_names:
        raise HHError(
            f"the dataset has no {name!r} column (columns: {', '.join(batch.column_names)})"
        )
    values: list[Any] = batch.column(name).to_pylist()
    return values


def _pairs_of(batch: Any) -> list[Any]:
    """The batch's rows as :class:`~hhrlhf.records.PreferencePair` (aligned again, as one
    process aligns them); subset, split and index when the batch has them."""
    from ..records import PreferencePair

    n = batch.num_rows
    chosen, rejected = _column(batch, "chosen"), _column(batch, "rejected")
    where = [
        _column(batch, k) if k in batch.column_names else [None] * n
        for k in ("subset", "split", "index")
    ]
    return list(map(PreferencePair, chosen, rejected, *where))


def _attempts_of(batch: Any) -> list[Any]:
    from ..records import RED_TEAM_KEYS, RedTeamAttempt

    cols = {k: _column(batch, k) for k in (*RED_TEAM_KEYS, "index") if k in batch.column_names}
    return [RedTeamAttempt(**{k: v[i] for k, v in cols.items()}) for i in range(batch.num_rows)]


class PairScorer:
    """A ``map_batches`` callable class: loads the saved preference model ``model`` once (per
    actor) and adds :data:`SCORE_COLUMNS` to batches of pairs (Arrow tables with ``chosen``
    and ``rejected``). The scores are the model's ``score_pairs`` on the same pairs: a
    response's score depends on it and its prompt only, so they are bit-identical to
    scoring the whole dataset in one process."""

    def __init__(self, model: str | os.PathLike[str]) -> None:
        from ..reward import load_model

        self.model = load_model(model)

    def __call__(self, batch: Any) -> Any:
        import numpy as np

        pairs = _pairs_of(batch)
        chosen, rejected = (np.asarray(s, dtype=float) for s in self.model.score_pairs(pairs))
        for name, values in zip(SCORE_COLUMNS, (chosen, rejected, chosen - rejected), strict=True):
            batch = batch.append_column(name, pa.array(values, pa.float64()))
        return batch


def score_pairs(
    ds: Any,
    model: str | os.PathLike[str],
    *,
    concurrency: int | tuple[int, int] = 1,
    batch_size: int = 1024,
    num_cpus: float = 1,
) -> Any:
    """``ds`` with :data:`SCORE_COLUMNS` added by the saved preference model in directory
    ``model`` (``hh pm train``), on ``concurrency`` actors of ``num_cpus`` each (``(min,
    max)``: a pool Ray grows as work queues). The model directory is checked now
    (:class:`~hhrlhf.errors.ModelFormatError`), and must be at the same path on every node.

    A fixed pool holds its CPUs from the start: when it takes every CPU of the cluster, the
    read tasks feeding it never get one and the job waits for ever. Leave them a CPU, give
    ``(1, n)``, or ``materialize()`` the pairs first."""
    from ..reward.saved import read_model_json

    path = os.path.abspath(os.fspath(model))
    read_model_json(path)
    if isinstance(concurrency, tuple):
        pool = ray.data.ActorPoolStrategy(min_size=concurrency[0], max_size=concurrency[1])
    else:
        pool = ray.data.ActorPoolStrategy(size=concurrency)
    return ds.map_batches(
        PairScorer,
        fn_constructor_args=(path,),
        batch_format="pyarrow",
        batch_size=batch_size,
        compute=pool,
        num_cpus=num_cpus,
    )


@functools.cache
def _pair_checks() -> tuple[Any, ...]:
    """The registered checks that judge one pair on its own (no state across rows, files or
    splits: duplicates and train/test leaks need a whole file or both splits, so ``hh
    check`` runs them), in registry order."""
    from ..checks import CheckOptions, build_checks
    from ..checks.base import Check

    def alone(c: Check) -> bool:
        kind = type(c)
        return (
            c.looks_at == "pair"
            and not c.needs_train_and_test
            and all(getattr(kind, h) is getattr(Check, h) for h in ("start", "reference", "finish"))
        )

    return tuple(c for c in build_checks(CheckOptions(near_duplicates=False)) if alone(c))


def pair_check_names() -> list[str]:
    """The names of the checks :func:`check_pairs` runs."""
    return [c.name for c in _pair_checks()]


def _check_batch(batch: Any) -> Any:
    flags: list[list[str]] = []
    details: list[list[str]] = []
    for pair in _pairs_of(batch):
        found: dict[str, str] = {}  # as the runner records them: first class first
        for check in _pair_checks():
            for name, detail in check.check(pair):
                found[name] = detail
        flags.append(list(found))
        details.append(list(found.values()))
    strings = pa.list_(pa.string())
    batch = batch.append_column(FLAG_COLUMNS[0], pa.array(flags, strings))
    return batch.append_column(FLAG_COLUMNS[1], pa.array(details, strings))


def check_pairs(ds: Any) -> Any:
    """``ds`` with :data:`FLAG_COLUMNS`: the classes ``hh check`` flags on each pair by
    itself (:func:`pair_check_names`: the structural classes and invisible characters) and
    their details, as :func:`hhrlhf.checks.run_checks` records them."""
    return ds.map_batches(_check_batch, batch_format="pyarrow")


def _format_batch(batch: Any, fmt: Any, source: bool, merge_consecutive: bool) -> Any:
    from ..convert.formats import format_rows
    from ..convert.tables import arrow_table

    records = _pairs_of(batch) if "chosen" in batch.column_names else _attempts_of(batch)
    rows = list(format_rows(records, fmt, source=source, merge_consecutive=merge_consecutive))
    return arrow_table(rows)


def to_format(ds: Any, fmt: str, *, source: bool = True, merge_consecutive: bool = False) -> Any:
    """``ds`` (pairs, or red-team attempts) as the rows of export format ``fmt`` (``"dpo"``,
    ``"trl-conversational"``, ... :data:`hhrlhf.convert.FORMATS`), the rows ``hh export``
    writes: then ``write_json`` or ``write_parquet``. ``source=False`` leaves out subset,
    split and index; ``merge_consecutive`` as in ``hh export --merge-consecutive``."""
    from ..convert.formats import get_format

    fmt_obj = get_format(fmt)  # an unknown name fails here
    return ds.map_batches(
        _format_batch,
        fn_args=(fmt_obj, source, merge_consecutive),
        batch_format="pyarrow",
    )


# --------------------------------------------------------------------------- writing

_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _plain(value: Any, what: str) -> str:
    if not isinstance(value, str) or not _PLAIN_NAME.fullmatch(value):
        raise HHError(f"write_upstream: a row's {what} is {value!r}, not a plain name")
    return value


def write_upstream(ds: Any, out: str | os.PathLike[str], *, force: bool = False) -> dict[str, int]:
    """Write pairs in upstream's layout, ``out/<subset>/<split>.jsonl.gz``: one line per row
    as ``hh export --format raw --no-source`` writes it, so :func:`read_pairs`,
    :func:`hhrlhf.load_dataset` and ``hh`` read the folder back. Returns the rows written
    per ``subset/split``.

    The rows come to this process to be written (the folder must fit its disk; for more,
    ``to_format(ds, "raw").write_json(...)`` writes from the workers). A file's rows must
    come in order (``index`` increasing): a dataset built with ``preserve_order`` gives
    them so, and a row out of order is an error, never a shuffled file. ``out`` must not
    exist or be empty (``force=True`` replaces it); it appears whole, or not at all.
    """
    from ..convert.files import _open_gzip_writer
    from ..convert.formats import get_format
    from ..outputs import check_writable, replace_dir

    encode = get_format("raw").encode
    check_writable(out, kind="dir", force=force, option="out")
    counts: dict[str, int] = {}
    last: dict[tuple[str, str], int] = {}
    cols = ["subset", "split", "index", "chosen", "rejected"]
    with replace_dir(out) as tmp, contextlib.ExitStack() as files:
        opened: dict[tuple[str, str], Any] = {}
        for batch in ds.select_columns(cols).iter_batches(batch_format="pyarrow", batch_size=None):
            lines: dict[tuple[str, str], list[bytes]] = {}
            for subset, split, index, c, r in zip(*(_column(batch, k) for k in cols), strict=True):
                key = (subset, split)
                if key not in opened:
                    folder = tmp / _plain(subset, "subset")
                    folder.mkdir(exist_ok=True)
                    path = folder / f"{_plain(split, 'split')}.jsonl.gz"
                    opened[key] = files.enter_context(_open_gzip_writer(path))
                if index is not None:
                    if index <= last.get(key, -1):
                        raise HHError(
                            f"write_upstream: {subset}/{split} row {index} comes after row "
                            f"{last[key]}; build the dataset with preserve_order set "
                            "(ray.data.DataContext.get_current().execution_options)"
                        )
                    last[key] = index
                lines.setdefault(key, []).append(encode({"chosen": c, "rejected": r}))
            for key, chunk in lines.items():
                opened[key].write(b"".join(chunk))
                counts[f"{key[0]}/{key[1]}"] = counts.get(f"{key[0]}/{key[1]}", 0) + len(chunk)
    return counts
