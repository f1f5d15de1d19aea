"""The saved-model format shared by the backends: model.json and the training-data record."""

import json

import pytest

from hhrlhf.errors import ModelFormatError
from hhrlhf.layout import select_files
from hhrlhf.reward.saved import (
    FORMAT_NAME,
    FORMAT_VERSION,
    describe_training_data,
    file_checksums,
    read_model_json,
    training_overlap,
    write_model_json,
)

from .conftest import make_pairs


def test_write_then_read_keeps_the_record_and_owns_the_format_keys(tmp_path):
    record = {"metrics": {"pairs": 3}, "format_version": 99, "backend": "other"}
    written = write_model_json(tmp_path, "linear", record, features={"word_bits": 12})
    meta = read_model_json(tmp_path)
    assert meta == written
    assert meta["format"] == FORMAT_NAME and meta["format_version"] == FORMAT_VERSION
    # the record cannot overwrite what the format owns
    assert meta["backend"] == "linear" and meta["features"] == {"word_bits": 12}
    assert meta["metrics"] == {"pairs": 3}


def test_read_refuses_another_version(tmp_path):
    write_model_json(tmp_path, "linear", {})
    meta = json.loads((tmp_path / "model.json").read_text())
    meta["format_version"] = FORMAT_VERSION + 1
    (tmp_path / "model.json").write_text(json.dumps(meta))
    with pytest.raises(ModelFormatError, match=f"format version {FORMAT_VERSION + 1}"):
        read_model_json(tmp_path)


def test_describe_training_data_counts_rows_per_subset_and_split():
    pairs = make_pairs(3, seed=1) + make_pairs(2, seed=2, subset="harmless-base")
    assert describe_training_data(pairs) == {
        "subsets": ["harmless-base", "helpful-base"],
        "splits": ["train"],
        "rows": {"helpful-base/train": 3, "harmless-base/train": 2},
    }


def test_training_overlap_compares_file_checksums():
    files = [f for f in select_files(data="sample") if not f.red_team]
    train = [f for f in files if f.split == "train"]
    test = [f for f in files if f.split == "test"]
    record = describe_training_data(make_pairs(2, seed=1), files=train, source="sample")
    assert list(record) == ["source", "subsets", "splits", "rows", "sha256"]
    assert record["sha256"] == file_checksums(train)
    meta = {"training_data": record}
    assert training_overlap(meta, test) == []
    assert training_overlap(meta, files) == sorted(f.rel for f in train)
    # a model without a checksum record: no answer, not "no overlap"
    assert training_overlap({"training_data": {"rows": {}}}, files) is None
    assert training_overlap(None, files) is None
