"""Containers, export to files and DatasetDicts, and import back."""

from __future__ import annotations

import gzip

import pytest

from hhrlhf.convert import (
    FORMATS,
    export_hf,
    export_records,
    hf_splits,
    import_records,
    normalise_transcript,
    read_rows,
    write_rows,
)
from hhrlhf.errors import DataFormatError, HHError, UnknownSubsetError


@pytest.mark.parametrize("ext", [".jsonl", ".jsonl.gz", ".parquet"])
@pytest.mark.parametrize("name", ["raw", "dpo", "trl-conversational", "openai"])
def test_export_import_round_trip_every_container(tmp_path, sample_pairs, name, ext):
    if ext == ".parquet":
        pytest.importorskip("pyarrow", reason="parquet needs hhrlhf[hf]")
    out = tmp_path / f"out{ext}"
    assert export_records(sample_pairs, name, out) == len(sample_pairs)
    back = list(import_records(out, name))
    assert len(back) == len(sample_pairs)
    for a, b in zip(sample_pairs, back, strict=True):
        assert b.source == a.source
        if FORMATS[name].exact:
            assert (b.chosen, b.rejected) == (a.chosen, a.rejected)
        else:
            assert normalise_transcript(b.rejected) == normalise_transcript(a.rejected)


def test_raw_no_source_is_the_upstream_file(tmp_path, sample_dir):
    import hhrlhf

    src = sample_dir / "helpful-base" / "test.jsonl.gz"
    pairs = hhrlhf.read_pairs(src)
    out = tmp_path / "test.jsonl"
    export_records(pairs, "raw", out, source=False)
    assert out.read_bytes() == gzip.decompress(src.read_bytes())


def test_gzip_output_is_gzip(tmp_path, sample_pairs):
    out = tmp_path / "x.jsonl.gz"
    export_records(sample_pairs[:3], "dpo", out)
    assert gzip.decompress(out.read_bytes()).count(b"\n") == 3


def test_unknown_extension_and_format(tmp_path, sample_pairs):
    with pytest.raises(HHError, match=r"\.jsonl\.gz"):
        export_records(sample_pairs, "dpo", tmp_path / "x.csv")
    with pytest.raises(UnknownSubsetError, match="trl-standard"):
        export_records(sample_pairs, "alpaca", tmp_path / "x.jsonl")
    assert not list(tmp_path.iterdir())


def test_pairs_refuse_the_redteam_format(tmp_path, sample_pairs, sample_attempts):
    with pytest.raises(HHError, match="redteam"):
        export_records(sample_pairs, "redteam", tmp_path / "x.jsonl")
    with pytest.raises(HHError, match="--format redteam"):
        export_records(sample_attempts, "dpo", tmp_path / "x.jsonl")
    assert export_records(sample_attempts, "redteam", tmp_path / "rt.jsonl") == len(sample_attempts)


def test_import_names_file_and_line(tmp_path):
    f = tmp_path / "bad.jsonl"
    f.write_text('{"prompt": "p", "chosen": " a", "rejected": " b"}\n{"prompt": "p"}\n')
    with pytest.raises(DataFormatError, match=r"bad\.jsonl, line 2: not a 'dpo' row: missing key"):
        list(import_records(f, "dpo"))
    skipped = []
    got = list(import_records(f, "dpo", lenient=True, skipped=skipped))
    assert len(got) == 1 and got[0].chosen == "p a"
    assert [(s.line, s.problem.split(":")[0]) for s in skipped] == [(2, "not a 'dpo' row")]


def test_write_rows_leaves_no_part_file_on_error(tmp_path):
    def rows():
        yield {"a": 1}
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        write_rows(rows(), tmp_path / "x.jsonl")
    assert list(tmp_path.iterdir()) == []


def test_read_rows_parquet_positions(tmp_path):
    pytest.importorskip("pyarrow", reason="parquet needs hhrlhf[hf]")
    write_rows([{"a": 1}, {"a": 2}], tmp_path / "x.parquet")
    assert list(read_rows(tmp_path / "x.parquet")) == [(1, {"a": 1}), (2, {"a": 2})]


def test_export_hf_keeps_every_split_and_field(tmp_path, sample_dir):
    pytest.importorskip("datasets", reason="--hf needs hhrlhf[hf]")
    import hhrlhf

    ds = hhrlhf.load_dataset("helpful-base", data=sample_dir)
    export_hf(ds, "trl-conversational", tmp_path / "hf")
    back = hf_splits(tmp_path / "hf")
    assert set(back) == {"train", "test"}
    assert len(back["test"]) == len(ds["test"])
    row = back["test"][5]
    assert row["index"] == 5 and row["subset"] == "helpful-base" and row["split"] == "test"
    assert FORMATS["trl-conversational"].read(row).source == ds["test"][5].source
