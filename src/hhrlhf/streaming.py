"""``load_dataset(..., streaming=True)``: ``datasets`` iterable datasets sharded by file.

Each split is a ``datasets.IterableDataset`` whose shards are its files (``n_shards`` = the
number of files of that split), read lazily with hhrlhf's own readers as it is iterated. So
``datasets.distributed.split_dataset_by_node`` gives each node whole files of its own (when
``n_shards`` is a multiple of the world size; otherwise every node reads every file and
keeps one example in ``world_size``, as ``datasets`` does), and a ``DataLoader`` with
workers divides the files among them. The rows are those of the eager path,
``load_dataset(...).to_hf(format=...)``, in the same order (files in order, each file's
rows in order): every field by default, or the rows of an export format (``"dpo"``,
``"trl-conversational"``, ...). Needs ``hhrlhf[hf]``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .errors import HHError, require

__all__ = ["Job", "stream_dataset"]

#: ``(path, subset, split, red_team)`` of one file (one shard).
Job = tuple[str, str | None, str, bool]


def _rows(files: list[Job], format: str | None, source: bool) -> Iterator[dict[str, Any]]:
    """The rows of ``files`` (one shard's list), as the eager ``to_hf`` path makes them."""
    from .convert.formats import format_rows
    from .convert.tables import arrow_table, record_rows
    from .fastload import iter_file
    from .reader import read_attempts

    for path, subset, split, red in files:
        if red:
            # read whole (one file of attempts): the eager table's values, member ids as
            # strings where the file mixes integer and string ids (one type per column)
            rows = record_rows(list(read_attempts(path)), format=format, source=source)
            yield from arrow_table(rows).to_pylist()
            continue
        pairs = iter_file(path, subset=subset, split=split)
        if format is not None:
            yield from format_rows(pairs, format, source=source)
            continue
        for pair in pairs:  # one at a time: record_rows builds every field as to_hf does
            yield record_rows([pair], source=source)[0]


def _features(format: str | None, source: bool, red: bool) -> Any:
    """The eager path's features where they do not depend on the data (pairs, every field,
    ``raw`` or ``dpo``); None elsewhere (``datasets`` infers them from the first rows)."""
    if red or format not in (None, "raw", "dpo"):
        return None
    datasets = require("datasets", "hf", "load_dataset(streaming=True)")
    from .fastload import pairs_table

    table = pairs_table([], "dpo" if format == "dpo" else "raw")
    if not source:
        table = table.drop_columns(["subset", "split", "index"])
    return datasets.Features.from_arrow_schema(table.schema)


def stream_dataset(
    jobs: list[Job],
    *,
    split: str | None,
    label: str,
    format: str | None = None,
    source: bool = True,
) -> Any:
    """What :func:`hhrlhf.load_dataset` returns with ``streaming=True``: a
    ``datasets.IterableDatasetDict`` of every split, or the split's ``IterableDataset`` when
    ``split`` is given. ``jobs`` are the files, located (and, for the cache, downloaded)
    already, in order; ``label`` names where they are. Nothing is read until the data is
    iterated."""
    datasets = require("datasets", "hf", "load_dataset(streaming=True)")
    if format is not None:
        from .convert.formats import get_format

        format = get_format(format).name  # an unknown name fails now
    by_split: dict[str, list[Job]] = {}
    for job in jobs:
        by_split.setdefault(job[2], []).append(job)
    out = {}
    for name, files in by_split.items():
        out[name] = datasets.IterableDataset.from_generator(
            _rows,
            features=_features(format, source, files[0][3]),
            gen_kwargs={"files": files, "format": format, "source": source},
            split=datasets.NamedSplit(name),
        )
    if split is not None:
        if split not in out:
            raise HHError(f"{label}: no files of split {split!r}")
        return out[split]
    return datasets.IterableDatasetDict(out)
