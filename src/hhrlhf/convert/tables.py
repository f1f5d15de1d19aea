"""Records as tables: pandas, Arrow, and Hugging Face ``datasets``.

By default a table holds every field of the records (pairs: ``chosen``, ``rejected``,
``subset``, ``split``, ``index``; attempts: the ten fields and ``index``), so nothing is lost
on the way to ``datasets`` and its ``map(num_proc=...)``. ``format=`` gives the rows of an
export format instead (:data:`hhrlhf.convert.FORMATS`). Preference pairs in every field,
``raw`` or ``dpo`` are built column by column, as :func:`hhrlhf.load_arrow` builds them.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import require
from ..records import RED_TEAM_KEYS

__all__ = [
    "record_rows",
    "arrow_table",
    "pairs_arrow",
    "to_pandas",
    "to_arrow",
    "to_hf",
    "rows_to_hf",
    "table_to_hf",
]


def record_rows(records: Iterable, *, format=None, source: bool = True) -> list[dict]:
    """One dict per record: every field, or the rows of ``format``."""
    if format is not None:
        from .formats import format_rows

        return list(format_rows(records, format, source=source))
    out = []
    for r in records:
        if hasattr(r, "chosen"):
            d = {"chosen": r.chosen, "rejected": r.rejected}
            if source:
                d.update(subset=r.subset, split=r.split, index=r.index)
        else:
            d = {k: getattr(r, k) for k in RED_TEAM_KEYS}
            if source:
                d["index"] = r.index
        out.append(d)
    return out


def arrow_table(rows: list[dict]):
    """``pyarrow.Table.from_pylist``, except that a column mixing numbers and strings (the
    red-team ``red_team_member_id`` holds both) is stored as strings, since Arrow columns
    have one type."""
    pa = require("pyarrow", "hf", "Arrow tables")
    try:
        return pa.Table.from_pylist(rows)
    except (pa.ArrowTypeError, pa.ArrowInvalid):
        pass
    mixed = set()
    for key in {k for r in rows for k in r}:
        kinds = {type(r.get(key)) for r in rows} - {type(None)}
        if str in kinds and kinds & {int, float, bool}:
            mixed.add(key)
    fixed = [
        {k: (str(v) if k in mixed and v is not None else v) for k, v in r.items()} for r in rows
    ]
    return pa.Table.from_pylist(fixed)


def pairs_arrow(records: Iterable, *, format=None, source: bool = True):
    """The table of preference pairs in ``format`` None (every field), ``"raw"`` or
    ``"dpo"``, built column by column (no row dicts) as :func:`hhrlhf.load_arrow` builds
    it; None for anything else (other records or formats), which goes through rows."""
    from ..fastload import pairs_table
    from ..records import PreferencePair

    name = getattr(format, "name", format)
    if name not in (None, "raw", "dpo"):
        return None
    records = records if isinstance(records, list) else list(records)
    if not records or not all(type(r) is PreferencePair for r in records):
        return None
    table = pairs_table(records, "dpo" if name == "dpo" else "raw")
    return table if source else table.drop_columns(["subset", "split", "index"])


def to_arrow(records: Iterable, *, format=None, source: bool = True):
    """A ``pyarrow.Table`` of the records (needs ``hhrlhf[hf]``)."""
    records = records if isinstance(records, list) else list(records)
    table = pairs_arrow(records, format=format, source=source)
    if table is not None:
        return table
    return arrow_table(record_rows(records, format=format, source=source))


def to_pandas(records: Iterable, *, format=None, source: bool = True):
    """A ``pandas.DataFrame`` of the records (needs ``hhrlhf[hf]``)."""
    pd = require("pandas", "hf", "to_pandas()")
    rows = record_rows(records, format=format, source=source)
    return pd.DataFrame.from_records(rows) if rows else pd.DataFrame()


def rows_to_hf(rows: list[dict]):
    datasets = require("datasets", "hf", "to_hf()")
    return datasets.Dataset(datasets.table.InMemoryTable(arrow_table(rows)))


def table_to_hf(table):
    """A ``datasets.Dataset`` over a ``pyarrow.Table`` (no copy)."""
    datasets = require("datasets", "hf", "to_hf()")
    return datasets.Dataset(datasets.table.InMemoryTable(table))


def to_hf(records: Iterable, *, format=None, source: bool = True):
    """A ``datasets.Dataset`` of the records (needs ``hhrlhf[hf]``)."""
    require("datasets", "hf", "to_hf()")
    return table_to_hf(to_arrow(records, format=format, source=source))
