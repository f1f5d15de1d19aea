"""load_dataset / iter_pairs over every kind of source: a directory, one file, the sample."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

import hhrlhf
from hhrlhf.dataset import SAMPLE_DIR, RecordList, resolve_source
from hhrlhf.errors import HHError, UnknownSubsetError
from hhrlhf.records import PreferencePair, RedTeamAttempt
from hhrlhf.subsets import PREFERENCE_SUBSETS, SUBSETS

GOOD = Path(__file__).parent / "data" / "good"


@pytest.fixture
def upstream(tmp_path) -> Path:
    """A directory laid out like upstream: 3 pairs per preference file, 2 red-team attempts."""
    root = tmp_path / "hh"
    for name in PREFERENCE_SUBSETS:
        (root / name).mkdir(parents=True)
        for split in ("train", "test"):
            shutil.copy(GOOD / "pairs.jsonl.gz", root / name / f"{split}.jsonl.gz")
    (root / "red-team-attempts").mkdir()
    with gzip.open(root / "red-team-attempts" / "red_team_attempts.jsonl.gz", "wb") as f:
        f.write((GOOD / "red_team.json").read_bytes())
    return root


def test_default_is_the_four_preference_subsets(upstream):
    ds = hhrlhf.load_dataset(data=upstream)
    assert set(ds) == {"train", "test"}
    assert all(isinstance(v, RecordList) for v in ds.values())
    assert len(ds["train"]) == 4 * 3 and len(ds["test"]) == 4 * 3
    assert [p.subset for p in ds["train"][::3]] == list(PREFERENCE_SUBSETS)
    assert all(isinstance(p, PreferencePair) and p.split == "train" for p in ds["train"])


def test_one_subset_and_one_split(upstream):
    test = hhrlhf.load_dataset("helpful-online", split="test", data=upstream)
    assert isinstance(test, RecordList)
    assert [(p.subset, p.split, p.index) for p in test] == [
        ("helpful-online", "test", i) for i in range(3)
    ]
    with pytest.raises(UnknownSubsetError, match="no split 'dev'; splits there: train, test"):
        hhrlhf.load_dataset("helpful-online", split="dev", data=upstream)
    with pytest.raises(
        UnknownSubsetError, match="no subset .helpful-offline.; subsets there: harmless-base"
    ):
        hhrlhf.load_dataset("helpful-offline", data=upstream)


def test_red_team(upstream):
    ds = hhrlhf.load_dataset("red-team-attempts", data=upstream)
    assert list(ds) == ["train"]
    assert all(isinstance(a, RedTeamAttempt) for a in ds["train"]) and len(ds["train"]) == 2
    assert len(hhrlhf.load_dataset("red-team-attempts", split="train", data=upstream)) == 2
    with pytest.raises(HHError, match="iter_attempts"):
        list(hhrlhf.iter_pairs("red-team-attempts", data=upstream))


def test_single_file_sources(upstream):
    one = upstream / "harmless-base" / "test.jsonl.gz"
    ds = hhrlhf.load_dataset(data=one)
    assert list(ds) == ["test"]
    assert {p.subset for p in ds["test"]} == {"harmless-base"}
    red = hhrlhf.load_dataset(data=GOOD / "red_team.json")
    assert len(red["train"]) == 2 and isinstance(red["train"][0], RedTeamAttempt)
    # an oddly named file says neither subset nor split: the split must be given, no guess
    with pytest.raises(HHError, match="does not say which split it is; pass the split"):
        hhrlhf.load_dataset(data=GOOD / "pairs.jsonl")
    plain = hhrlhf.load_dataset(data=GOOD / "pairs.jsonl", split="train")
    assert len(plain) == 3 and plain[0].subset is None and plain[0].split == "train"
    with pytest.raises(HHError, match="no split 'train'; splits there: test"):
        hhrlhf.load_dataset(data=one, split="train")


def test_uncompressed_directory_layout(tmp_path):
    (tmp_path / "helpful-base").mkdir()
    shutil.copy(GOOD / "pairs.jsonl", tmp_path / "helpful-base" / "test.jsonl")
    pairs = hhrlhf.load_dataset("helpful-base", split="test", data=tmp_path)
    assert len(pairs) == 3
    with pytest.raises(HHError, match="no split 'train'; splits there: test"):
        hhrlhf.load_dataset("helpful-base", split="train", data=tmp_path)


def test_streaming_matches_loading(upstream):
    streamed = list(hhrlhf.iter_pairs(data=upstream, split="test"))
    assert streamed == list(hhrlhf.load_dataset(data=upstream)["test"])
    several = list(
        hhrlhf.iter_pairs(["harmless-base", "helpful-base"], split="train", data=upstream)
    )
    assert [p.subset for p in several] == ["harmless-base"] * 3 + ["helpful-base"] * 3


def test_lenient_loading_reports_skips(tmp_path):
    (tmp_path / "helpful-base").mkdir()
    text = (GOOD / "pairs.jsonl").read_text().splitlines()
    (tmp_path / "helpful-base" / "test.jsonl").write_text(
        "\n".join([text[0], "{bad", text[1]]) + "\n"
    )
    with pytest.raises(hhrlhf.DataFormatError, match="line 2"):
        hhrlhf.load_dataset("helpful-base", split="test", data=tmp_path)
    skipped = []
    pairs = hhrlhf.load_dataset(
        "helpful-base", split="test", data=tmp_path, lenient=True, skipped=skipped
    )
    assert len(pairs) == 2 and [s.line for s in skipped] == [2]


def test_resolve_source_kinds(tmp_path, upstream):
    assert resolve_source("sample").root == SAMPLE_DIR
    assert resolve_source(None).kind == "cache"
    assert resolve_source(upstream).kind == "dir"
    assert resolve_source(GOOD / "pairs.jsonl").kind == "file"
    with pytest.raises(HHError, match="no such file or directory"):
        resolve_source(tmp_path / "nope")


def test_cache_source_offline_never_downloads(tmp_path, monkeypatch):
    monkeypatch.setenv("HH_RLHF_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HH_RLHF_OFFLINE", "1")
    with pytest.raises(hhrlhf.OfflineError):
        hhrlhf.load_dataset("harmless-base", split="test")


def test_sample_has_every_file_with_pairs():
    for subset in SUBSETS.values():
        for spec in subset.files:
            assert (SAMPLE_DIR / spec.path).is_file(), spec.path
    ds = hhrlhf.load_dataset(data="sample")
    assert len(ds["train"]) > 100 and len(ds["test"]) > 20
    for pairs in ds.values():
        for p in pairs:
            assert p.prompt + p.chosen_response == p.chosen
            assert p.prompt + p.rejected_response == p.rejected
    attempts = hhrlhf.load_dataset("red-team-attempts", split="train", data="sample")
    assert len(attempts) >= 100


def test_datasets_like_columns_len_and_slices(upstream):
    ds = hhrlhf.load_dataset(data=upstream)
    test = ds["test"]
    assert ds.num_rows == {"train": 12, "test": 12}
    assert ds.column_names["test"] == ["chosen", "rejected", "subset", "split", "index"]
    assert test["prompt"] == [p.prompt for p in test] and len(test["prompt"]) == 12
    assert test["chosen"][0] == test[0].chosen and test["subset"][::3] == list(PREFERENCE_SUBSETS)
    assert test["chosen_response"] == [p.chosen_response for p in test]
    part = test[2:5]
    assert isinstance(part, RecordList) and (part.subset, part.split) == (None, "test")
    assert list(part) == list(test)[2:5] and part["index"] == [2, 0, 1]
    assert isinstance(test[-1], PreferencePair)
    assert isinstance(test.select([3, 0]), RecordList) and test.select([3, 0])["index"] == [0, 0]
    some = test.filter(lambda p: p.subset == "harmless-base")
    assert isinstance(some, RecordList) and some["subset"] == ["harmless-base"] * 3
    shuffled = test.shuffle(seed=1)
    assert isinstance(shuffled, RecordList) and sorted(shuffled, key=id) == sorted(test, key=id)
    assert shuffled == test.shuffle(seed=1)
    with pytest.raises(HHError, match="unknown column 'promt'; expected one of: chosen"):
        test["promt"]
    attempts = hhrlhf.load_dataset("red-team-attempts", data=upstream)["train"]
    assert attempts["rating"] == [a.rating for a in attempts]
    assert "task_description" in attempts.column_names


def test_to_hf_in_a_trainer_format_on_a_split_and_on_the_dict(upstream):
    datasets = pytest.importorskip("datasets")
    ds = hhrlhf.load_dataset("harmless-base", data=upstream)
    dd = ds.to_hf(format="dpo", source=False)
    assert isinstance(dd, datasets.DatasetDict) and set(dd) == {"train", "test"}
    assert dd["test"].column_names == ["prompt", "chosen", "rejected"]
    assert dd["test"][0]["prompt"] + dd["test"][0]["chosen"] == ds["test"][0].chosen
    conv = ds["test"].to_hf(format="trl-conversational")
    assert isinstance(conv, datasets.Dataset) and conv.num_rows == 3
    assert conv[0]["prompt"][0]["role"] == "user"
    assert ds["test"][:2].to_hf().num_rows == 2
    whole = ds.to_hf()
    assert whole["train"].column_names == ["chosen", "rejected", "subset", "split", "index"]
