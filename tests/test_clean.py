"""hh clean as a library: rows in = kept + dropped, always; nothing dropped without a record."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest

import hhrlhf
from hhrlhf.clean import clean
from hhrlhf.errors import HHError, TruncatedStreamError


def t(*turns):
    roles = ("Human", "Assistant")
    return "".join(f"\n\n{roles[i % 2]}: {x}" for i, x in enumerate(turns))


P1 = {"chosen": t("Boil an egg?", "Nine minutes."), "rejected": t("Boil an egg?", "An hour.")}
P2 = {"chosen": t("Name a herb.", "Mint."), "rejected": t("Name a herb.", "A rock.")}
SAME = {"chosen": t("Hi", "Hello"), "rejected": t("Hi", "Hello")}
P3 = {"chosen": t("Two plus two?", "Four."), "rejected": t("Two plus two?", "Five.")}


def write(root: Path, key: str, lines: list) -> bytes:
    body = "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines).encode()
    path = root / f"{key}.jsonl.gz"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(body))
    return body


@pytest.fixture
def data(tmp_path):
    root = tmp_path / "in"
    write(root, "helpful-base/train", [P1, "{broken", P2, P1, SAME, {"chosen": "x"}])
    write(root, "helpful-base/test", [P3, P2])
    return root


def test_manifest_arithmetic(data, tmp_path):
    out = tmp_path / "out"
    m = clean(["helpful-base"], out=out, data=data)
    # train: 6 rows; dropped: bad_json (line 2), duplicate_pair (line 4), identical_pair (5),
    # missing_field (6) -> 2 kept. test: 2 rows, P2 leaks but leaks are warnings -> kept.
    assert (m["rows"], m["kept"], m["dropped"]) == (8, 4, 4)
    assert m["dropped_by_reason"] == {
        "bad_json": 1,
        "duplicate_pair": 1,
        "identical_pair": 1,
        "missing_field": 1,
    }
    train = m["files"]["helpful-base/train.jsonl.gz"]
    assert (train["rows"], train["kept"], train["dropped"]) == (6, 2, 4)
    for f in m["files"].values():
        assert f["rows"] == f["kept"] + f["dropped"]
    dropped = [json.loads(x) for x in (out / "dropped.jsonl").read_text().splitlines()]
    assert len(dropped) == m["dropped"]
    assert [(d["line"], d["reasons"]) for d in dropped] == [
        (2, ["bad_json"]),
        (4, ["duplicate_pair"]),
        (5, ["identical_pair"]),
        (6, ["missing_field"]),
    ]
    assert dropped[0]["raw"] == "{broken\n" and dropped[1]["row"] == P1
    assert dropped[1]["details"] == {"duplicate_pair": "same pair as index 0"}


def test_checksums_and_layout(data, tmp_path):
    out = tmp_path / "out"
    m = clean(["helpful-base"], out=out, data=data)
    assert set(m["sha256"]) == {
        "helpful-base/train.jsonl.gz",
        "helpful-base/test.jsonl.gz",
        "dropped.jsonl",
    }
    for rel, digest in m["sha256"].items():
        assert hashlib.sha256((out / rel).read_bytes()).hexdigest() == digest
    assert json.loads((out / "manifest.json").read_text()) == m
    reloaded = hhrlhf.load_dataset("helpful-base", data=out)
    assert [p.chosen for p in reloaded["train"]] == [P1["chosen"], P2["chosen"]]


def test_nothing_to_drop_gives_the_same_lines(tmp_path):
    body = write(tmp_path / "in", "helpful-base/test", [P3, P2])
    write(tmp_path / "in", "helpful-base/train", [P1])
    out = tmp_path / "out"
    m = clean(["helpful-base"], out=out, split="test", data=tmp_path / "in")
    assert m["dropped"] == 0 and m["kept"] == 2
    assert gzip.decompress((out / "helpful-base/test.jsonl.gz").read_bytes()) == body


def test_drop_names_chosen_classes(data, tmp_path):
    m = clean(["helpful-base"], out=tmp_path / "o", data=data, drop=["train_test_leak"])
    assert m["drop"] == ["train_test_leak"]
    assert (m["rows"], m["kept"], m["dropped"]) == (8, 7, 1)  # test P2 appears in train


def test_truncated_gzip_is_lost_data_not_a_dropped_row(tmp_path):
    root = tmp_path / "in"
    write(root, "helpful-base/train", [P1, P2, P3] * 200)
    path = root / "helpful-base/train.jsonl.gz"
    path.write_bytes(path.read_bytes()[:-200])
    write(root, "helpful-base/test", [P3])
    with pytest.raises(TruncatedStreamError, match="the rest of the file is unreadable") as info:
        clean(["helpful-base"], out=tmp_path / "o", data=root)
    assert info.value.path == str(path) and info.value.rows_read > 0
    assert not (tmp_path / "o" / "manifest.json").exists()  # no clean copy stands for it


def test_red_team_array_is_cleaned(tmp_path):
    good = {
        "transcript": t("hi", "yo"),
        "min_harmlessness_score_transcript": 0.1,
        "num_params": "13B",
        "model_type": "rlhf",
        "rating": 1,
        "task_description": "x",
        "task_descripton_harmlessness_score": 0.2,
        "red_team_member_id": 1,
        "is_upworker": False,
        "tags": None,
    }
    path = tmp_path / "in" / "red-team-attempts" / "red_team_attempts.jsonl.gz"
    path.parent.mkdir(parents=True)
    path.write_bytes(gzip.compress(json.dumps([good, {**good, "rating": 7}, good]).encode()))
    m = clean(["red-team-attempts"], out=tmp_path / "o", data=tmp_path / "in")
    assert (m["rows"], m["kept"], m["dropped"]) == (3, 2, 1)
    back = hhrlhf.load_dataset("red-team-attempts", data=tmp_path / "o", split="train")
    assert len(back) == 2


def test_out_must_be_new(data, tmp_path):
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "x").write_text("keep me")
    with pytest.raises(HHError, match="not empty"):
        clean(["helpful-base"], out=tmp_path / "o", data=data)


def test_sample_rows_in_equal_kept_plus_dropped(tmp_path):
    from hhrlhf.synth import write_corpus

    write_corpus(tmp_path / "s", scale="sample")
    m = clean(["all"], out=tmp_path / "o", data=tmp_path / "s")
    assert m["rows"] == m["kept"] + m["dropped"] == 620
    assert m["dropped"] == sum(1 for _ in open(tmp_path / "o" / "dropped.jsonl"))


def test_keep_readable_cleans_a_cut_file_and_records_the_loss_apart(tmp_path):
    root = tmp_path / "in"
    write(root, "helpful-base/train", [P1, P2, P3] * 200)
    path = root / "helpful-base/train.jsonl.gz"
    path.write_bytes(path.read_bytes()[:-200])
    write(root, "helpful-base/test", [P3])
    m = clean(["helpful-base"], out=tmp_path / "o", data=root, keep_readable=True)
    train = m["files"]["helpful-base/train.jsonl.gz"]
    lost = m["lost"]["helpful-base/train.jsonl.gz"]
    assert train["lost"] == lost and "the rest of the file is unreadable" in lost["problem"]
    assert 0 < lost["rows_read"] == lost["last_good_line"] < 600
    assert train["rows"] == train["kept"] + train["dropped"] == lost["rows_read"]
    assert "bad_json" not in train["dropped_by_reason"]  # lost rows are not dropped rows
    assert "helpful-base/test.jsonl.gz" not in m["lost"]
    copied = gzip.decompress((tmp_path / "o/helpful-base/train.jsonl.gz").read_bytes())
    assert copied.count(b"\n") == train["kept"]


def test_keep_readable_still_fails_on_a_crc_error(tmp_path):
    root = tmp_path / "in"
    write(root, "helpful-base/train", [P1, P2, P3] * 200)
    path = root / "helpful-base/train.jsonl.gz"
    data = bytearray(path.read_bytes())
    data[-8] ^= 1  # the stored CRC: every line decodes, none can be trusted
    path.write_bytes(bytes(data))
    write(root, "helpful-base/test", [P3])
    with pytest.raises(TruncatedStreamError, match="CRC check failed"):
        clean(["helpful-base"], out=tmp_path / "o", data=root, keep_readable=True)
