"""hhrlhf.layout: one file selection for every shape of data at hand (dir, sample, file, cache)."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

import hhrlhf
from hhrlhf.checks import audit
from hhrlhf.dataset import DatasetDict, RecordList
from hhrlhf.errors import HHError, UnknownNameError, UnknownSubsetError
from hhrlhf.layout import file_identity, scan, select_files
from hhrlhf.records import RedTeamAttempt

LAYOUTS = Path(__file__).parent / "data" / "layouts"
ONE = LAYOUTS / "one-split"
CUSTOM = LAYOUTS / "custom"
ODD = LAYOUTS / "odd" / "dialogues-2024.jsonl"
EMPTY = LAYOUTS / "empty"


def test_one_split_folder_selects_what_is_there():
    files = select_files(data=ONE)
    assert [(f.subset, f.split, f.rel) for f in files] == [
        ("harmless-base", "test", "harmless-base/test.jsonl.gz")
    ]
    assert select_files(split="test", data=ONE) == files
    ds = hhrlhf.load_dataset(data=ONE)
    assert list(ds) == ["test"] and len(ds["test"]) == 5
    assert len(hhrlhf.load_dataset("harmless-base", split="test", data=ONE)) == 5
    assert len(list(hhrlhf.iter_pairs(data=ONE))) == 5


def test_absent_subset_or_split_names_what_is_there():
    with pytest.raises(UnknownNameError, match="no split 'train'; splits there: test"):
        hhrlhf.load_dataset(split="train", data=ONE)
    with pytest.raises(UnknownNameError, match="no subset 'helpful-base'; subsets there: harmless"):
        hhrlhf.load_dataset("helpful-base", data=ONE)
    with pytest.raises(
        UnknownSubsetError, match="no split 'validation'; splits there: train, test"
    ):
        list(hhrlhf.iter_pairs(split="validation", data="sample"))
    # a subset named explicitly must have the split, even when another subset has it
    with pytest.raises(UnknownNameError, match="another-campaign: no split 'test'"):
        select_files(["my-campaign", "another-campaign"], split="test", data=CUSTOM)
    # the cache knows the registry's names and splits
    with pytest.raises(UnknownNameError, match="no split 'validation'; splits there: train, test"):
        select_files("harmless-base", split="validation", data=None)
    with pytest.raises(UnknownNameError, match="unknown subset 'my-campaign'; expected one of"):
        select_files("my-campaign", data=None)


def test_custom_subset_names_and_order():
    assert list(scan(CUSTOM)) == [
        "harmless-base",
        "red-team-attempts",
        "another-campaign",
        "my-campaign",
    ]
    ds = hhrlhf.load_dataset("my-campaign", data=CUSTOM)
    assert isinstance(ds, DatasetDict) and list(ds) == ["train", "test"]
    assert [len(v) for v in ds.values()] == [3, 2]
    assert {p.subset for v in ds.values() for p in v} == {"my-campaign"}
    keys = [f.key for f in select_files(data=CUSTOM)]  # default: every preference subset
    assert keys == [
        "harmless-base/test",
        "another-campaign/train",
        "my-campaign/train",
        "my-campaign/test",
    ]
    everything = select_files("all", data=CUSTOM)
    red = [f for f in everything if f.red_team]
    assert [(f.subset, f.split) for f in red] == [("red-team-attempts", "train")]
    attempts = hhrlhf.load_dataset("red-team-attempts", data=CUSTOM)
    assert isinstance(attempts["train"][0], RedTeamAttempt)
    assert len(list(hhrlhf.iter_attempts(data=CUSTOM))) == 1


def test_single_file_identity_from_its_path_never_guessed():
    assert file_identity(ONE / "harmless-base" / "test.jsonl.gz") == ("harmless-base", "test")
    assert file_identity(ODD) == (None, None)
    assert file_identity("x/red_team_attempts.jsonl.gz") == ("red-team-attempts", "train")
    with pytest.raises(HHError, match="does not say which split it is"):
        hhrlhf.load_dataset(data=ODD)
    pairs = hhrlhf.load_dataset("my-campaign", split="train", data=ODD)
    assert len(pairs) == 3 and {(p.subset, p.split) for p in pairs} == {("my-campaign", "train")}
    one = ONE / "harmless-base" / "test.jsonl.gz"
    with pytest.raises(HHError, match="this file is harmless-base/test, not helpful-base"):
        hhrlhf.load_dataset("helpful-base", data=one)
    with pytest.raises(UnknownNameError, match="no split 'train'; splits there: test"):
        hhrlhf.load_dataset(split="train", data=one)


def test_empty_files_are_empty_splits(tmp_path):
    ds = hhrlhf.load_dataset("my-campaign", data=EMPTY)
    assert {k: len(v) for k, v in ds.items()} == {"train": 0, "test": 0}
    assert hhrlhf.load_dataset("my-campaign", split="train", data=EMPTY, fast=False) == []
    assert list(hhrlhf.iter_pairs(data=EMPTY)) == []
    zero = tmp_path / "harmless-base" / "test.jsonl.gz"
    zero.parent.mkdir()
    zero.write_bytes(b"")  # not even a gzip header: an error, not an empty split
    with pytest.raises(HHError, match="0-byte file where a gzip stream is expected"):
        hhrlhf.load_dataset(data=tmp_path)


def test_short_reprs():
    ds = hhrlhf.load_dataset(data="sample")
    assert repr(ds) == (
        "DatasetDict({\n"
        "    train: {rows: 240, fields: ['chosen', 'rejected']}\n"
        "    test: {rows: 80, fields: ['chosen', 'rejected']}\n"
        "})"
    )
    one = hhrlhf.load_dataset("harmless-base", split="test", data="sample")
    assert repr(one) == (
        "RecordList(subset='harmless-base', split='test', rows=20, fields=['chosen', 'rejected'])"
    )
    red = hhrlhf.load_dataset("red-team-attempts", split="train", data="sample")
    assert repr(red).startswith("RecordList(subset='red-team-attempts', split='train', rows=300,")
    assert "transcript" in repr(red) and len(repr(red)) < 400
    assert repr(RecordList()) == "RecordList(subset=None, split=None, rows=0, fields=[])"


def test_leak_checks_skipped_without_a_train_split():
    result = audit(data=ONE, near_duplicates=False)
    assert result.skipped == {
        "train_test_leak": f"no train split in {ONE} to compare the test prompts with"
    }
    assert result.to_json()["skipped"] == result.skipped
    assert result.counts["empty_response"] == 1 and result.counts["response_contains_turns"] == 1
    # with both splits there, the leak check runs (and finds the egg prompt of my-campaign)
    both = audit(["my-campaign"], data=CUSTOM, near_duplicates=False)
    assert both.skipped == {} and both.counts["train_test_leak"] == 1


def test_split_files_preferred_upstream_suffix(tmp_path):
    shutil.copytree(CUSTOM / "my-campaign", tmp_path / "my-campaign")
    with gzip.open(tmp_path / "my-campaign" / "train.jsonl.gz", "rb") as f:
        (tmp_path / "my-campaign" / "train.jsonl").write_bytes(f.read()[:0])
    (tmp_path / "notes").mkdir()  # a folder without data files is not a subset
    (tmp_path / "notes" / "README.md").write_text("benign notes\n")
    with pytest.warns(UserWarning, match=r"second copy of a split: my-campaign/train\.jsonl$"):
        files = select_files(data=tmp_path)
    assert [f.rel for f in files] == ["my-campaign/train.jsonl.gz", "my-campaign/test.jsonl.gz"]


def _with_strays(tmp_path) -> Path:
    root = tmp_path / "data"
    shutil.copytree(ONE, root)
    (root / "harmless-base" / "notes.jsonl").write_text("my notes, not data\n")
    (root / "harmless-base" / "validation.json").write_text("[]")
    shutil.copy(ONE / "harmless-base" / "test.jsonl.gz", root / "harmless-base" / "test.jsonl")
    (root / "manifest.json").write_text("{}")  # beside the subset folders: not a split file
    (root / "harmless-base" / "README.md").write_text("not a data file")
    return root


def test_only_upstream_file_names_are_read_and_the_rest_are_named(tmp_path):
    from hhrlhf.layout import IgnoredFilesWarning, ignored_files

    root = _with_strays(tmp_path)
    assert scan(root) == {"harmless-base": {"test": root / "harmless-base/test.jsonl.gz"}}
    assert [p.relative_to(root).as_posix() for p in ignored_files(root)] == [
        "harmless-base/notes.jsonl",
        "harmless-base/test.jsonl",
        "harmless-base/validation.json",
    ]
    with pytest.warns(IgnoredFilesWarning, match="notes.jsonl") as got:
        pairs = hhrlhf.load_dataset(data=root)
    assert len(pairs["test"]) == 5 and list(pairs) == ["test"]
    assert len(got) == 1 and "ignored 3 file(s)" in str(got[0].message)
    assert got[0].message.files == ignored_files(root)


def test_a_clean_folder_warns_nothing(tmp_path, recwarn):
    shutil.copytree(ONE, tmp_path / "data")
    select_files(data=tmp_path / "data")
    assert not [w for w in recwarn if "ignored" in str(w.message)]
