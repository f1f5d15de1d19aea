"""RecordList.to_pandas / to_arrow / to_hf keep every field."""

from __future__ import annotations

import pytest

import hhrlhf
from hhrlhf.convert.tables import record_rows


def test_record_rows_hold_every_field(sample_pairs, sample_attempts):
    row = record_rows(sample_pairs[:1])[0]
    assert set(row) == {"chosen", "rejected", "subset", "split", "index"}
    assert set(record_rows(sample_pairs[:1], source=False)[0]) == {"chosen", "rejected"}
    rt = record_rows(sample_attempts[:1])[0]
    assert "task_description_harmlessness_score" in rt and rt["index"] == 0 and len(rt) == 11
    assert set(record_rows(sample_pairs[:1], format="dpo")[0]) == {
        "prompt",
        "chosen",
        "rejected",
        "subset",
        "split",
        "index",
    }


def test_to_pandas_and_arrow(sample_dir):
    pytest.importorskip("pandas", reason="needs hhrlhf[hf]")
    pytest.importorskip("pyarrow", reason="needs hhrlhf[hf]")
    test = hhrlhf.load_dataset("harmless-base", data=sample_dir, split="test")
    df = test.to_pandas()
    assert len(df) == len(test) and list(df["index"]) == list(range(len(test)))
    assert df["chosen"][3] == test[3].chosen
    table = test.to_arrow()
    assert table.num_rows == len(test) and table.column("subset")[0].as_py() == "harmless-base"


def _prompt_len(row):
    return {"n": len(row["chosen"])}


def test_to_hf_map_with_processes_keeps_source(sample_dir):
    pytest.importorskip("datasets", reason="to_hf needs the datasets package (hhrlhf[hf])")
    test = hhrlhf.load_dataset("helpful-base", data=sample_dir, split="test")
    ds = test.to_hf()
    mapped = ds.map(_prompt_len, num_proc=2)
    assert mapped["index"] == list(range(len(test)))
    assert set(mapped["subset"]) == {"helpful-base"} and set(mapped["split"]) == {"test"}
    assert mapped["n"] == [len(p.chosen) for p in test]


def test_mixed_member_ids_become_strings_in_arrow(sample_attempts, tmp_path):
    pytest.importorskip("pyarrow", reason="needs hhrlhf[hf]")
    from hhrlhf.convert import export_records, import_records
    from hhrlhf.convert.tables import arrow_table

    table = arrow_table([{"id": 7, "x": 1}, {"id": "m12", "x": 2}])
    assert table.column("id").to_pylist() == ["7", "m12"]
    assert table.column("x").to_pylist() == [1, 2]
    kinds = {type(a.red_team_member_id) for a in sample_attempts}
    out = tmp_path / "rt.parquet"
    assert export_records(sample_attempts, "redteam", out) == len(sample_attempts)
    back = list(import_records(out, "redteam"))
    assert [str(b.red_team_member_id) for b in back] == [
        str(a.red_team_member_id) for a in sample_attempts
    ]
    assert kinds  # the sample holds member ids


@pytest.mark.parametrize("fmt", [None, "raw", "dpo"])
@pytest.mark.parametrize("source", [True, False])
def test_pair_tables_are_built_by_column_and_equal_the_rows(sample_dir, fmt, source):
    """Pairs in every field, raw or dpo go column by column (as load_arrow builds them):
    the same rows as the row-dict path, and the load_arrow table itself."""
    pytest.importorskip("pyarrow", reason="needs hhrlhf[hf]")
    from hhrlhf.convert.tables import arrow_table, pairs_arrow, to_arrow

    test = hhrlhf.load_dataset("harmless-base", data=sample_dir, split="test")
    table = to_arrow(test, format=fmt, source=source)
    assert pairs_arrow(test, format=fmt, source=source) is not None
    rows = record_rows(test, format=fmt, source=source)
    assert table.to_pylist() == rows == arrow_table(rows).to_pylist()
    if source:
        columns = "dpo" if fmt == "dpo" else "raw"
        loaded = hhrlhf.load_arrow("harmless-base", data=sample_dir, split="test", columns=columns)
        assert table.equals(loaded)
    assert test.to_arrow().equals(to_arrow(test))
    # other formats and records still go through rows
    assert pairs_arrow(test, format="sft") is None


def test_to_hf_is_the_column_table(sample_dir):
    pytest.importorskip("datasets", reason="to_hf needs the datasets package (hhrlhf[hf])")
    test = hhrlhf.load_dataset("harmless-base", data=sample_dir, split="test")
    ds = test.to_hf()
    assert ds.data.table.equals(test.to_arrow())
    assert ds[0] == record_rows(test[:1])[0]
