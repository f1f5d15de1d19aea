"""Export records in a format to a file or a Hugging Face ``DatasetDict``, and import them back."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..errors import DataFormatError, require
from ..reader import Lenient
from .base import Format
from .files import read_rows, write_rows
from .formats import FORMATS, format_rows, get_format

__all__ = [
    "FORMATS",
    "ARROW_FORMATS",
    "get_format",
    "format_rows",
    "export_records",
    "export_hf",
    "export_arrow",
    "import_records",
]


def export_records(
    records: Iterable,
    fmt: str | Format,
    out: str | os.PathLike,
    *,
    source: bool = True,
    merge_consecutive: bool = False,
    merged: list | None = None,
    margins: Mapping | None = None,
) -> int:
    """Write ``records`` to ``out`` (.jsonl, .jsonl.gz or .parquet); returns the row count.
    ``merge_consecutive``, ``merged`` and ``margins``: as in :func:`format_rows`."""
    from ..progress import progress

    fmt = get_format(fmt)
    rows = progress(
        format_rows(
            records,
            fmt,
            source=source,
            merge_consecutive=merge_consecutive,
            merged=merged,
            margins=margins,
        ),
        desc=f"export {out}",
        unit="rows",
    )
    return write_rows(rows, out, encode=fmt.encode)


def export_hf(
    splits: Mapping[str, Iterable],
    fmt: str | Format,
    out_dir: str | os.PathLike,
    *,
    source: bool = True,
    merge_consecutive: bool = False,
    merged: list | None = None,
    margins: Mapping | None = None,
):
    """Save ``{"train": records, "test": records}`` as a ``DatasetDict`` (``save_to_disk``).
    ``merge_consecutive``, ``merged`` and ``margins``: as in :func:`format_rows`."""
    from .tables import rows_to_hf

    datasets = require("datasets", "hf", "--hf")
    fmt = get_format(fmt)
    dd = datasets.DatasetDict(
        {
            name: rows_to_hf(
                list(
                    format_rows(
                        recs,
                        fmt,
                        source=source,
                        merge_consecutive=merge_consecutive,
                        merged=merged,
                        margins=margins,
                    )
                )
            )
            for name, recs in splits.items()
        }
    )
    dd.save_to_disk(str(out_dir))
    return dd


#: Formats whose tables :func:`hhrlhf.load_arrow` builds from the files directly.
ARROW_FORMATS = ("dpo", "raw")


def export_arrow(
    tables: Mapping[str, Any],
    out: str | os.PathLike | None = None,
    *,
    hf_dir: str | os.PathLike | None = None,
    source: bool = True,
):
    """Write :func:`hhrlhf.load_arrow` tables (``{split: pyarrow.Table}``): to one
    ``.parquet`` file (the splits one after the other), or as a ``DatasetDict`` to
    ``hf_dir``. Returns the row count, or the ``DatasetDict``. ``source=False`` leaves out
    subset, split and index."""
    from .files import write_table
    from .tables import table_to_hf

    if not source:
        tables = {k: t.drop_columns(["subset", "split", "index"]) for k, t in tables.items()}
    if hf_dir is not None:
        datasets = require("datasets", "hf", "--hf")
        dd = datasets.DatasetDict({k: table_to_hf(t) for k, t in tables.items()})
        dd.save_to_disk(str(hf_dir))
        return dd
    if out is None:
        raise ValueError("export_arrow() needs out or hf_dir")
    pa = require("pyarrow", "hf", "writing .parquet")
    return write_table(pa.concat_tables(list(tables.values())), out)


def import_records(
    path: str | os.PathLike,
    fmt: str | Format,
    *,
    lenient: bool | Lenient | None = False,
    skipped: list | None = None,
) -> Iterator:
    """Read a file written in ``fmt`` back into records (pairs, dialogues or attempts).

    A row that does not fit the format raises :class:`~hhrlhf.errors.DataFormatError` with
    its file and line, or is skipped and recorded in ``skipped`` when ``lenient`` (a flag, or a
    :class:`~hhrlhf.reader.Lenient` policy that collects the skipped rows itself).
    """
    policy = Lenient.of(lenient, skipped)
    fmt = get_format(fmt)
    path = str(path)
    unit = "row" if str(path).endswith(".parquet") else "line"
    for pos, row in read_rows(path, lenient=policy):
        try:
            yield fmt.read(row)
        except ValueError as exc:
            problem = f"not a {fmt.name!r} row: {exc}"
            if policy is not None:
                policy.skip(path, pos, problem, unit)
                continue
            raise DataFormatError(path, pos, problem, unit=unit) from None


def hf_splits(path: str | os.PathLike) -> dict[str, list[dict]]:
    """Rows of a saved ``DatasetDict`` (for reading ``--hf`` output back)."""
    datasets = require("datasets", "hf", "reading a saved DatasetDict")
    dd = datasets.load_from_disk(str(Path(path)))
    return {name: ds.to_list() for name, ds in dd.items()}
