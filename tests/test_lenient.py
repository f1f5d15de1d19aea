"""The one lenient-reading object: the policy and the skipped rows travel together."""

from __future__ import annotations

import json

import pytest

from hhrlhf import load_dataset
from hhrlhf.convert import import_records
from hhrlhf.dataset import iter_pairs
from hhrlhf.reader import Lenient, read_objects, read_pairs


def _pairs_file(path):
    good = {"chosen": "\n\nHuman: hi\n\nAssistant: a", "rejected": "\n\nHuman: hi\n\nAssistant: b"}
    path.write_text(json.dumps(good) + "\n{not json\n" + json.dumps({"chosen": 1}) + "\n")
    return path


def test_of_builds_the_policy_from_the_public_arguments():
    assert Lenient.of(False) is None
    assert Lenient.of(False, []) is None
    rows: list = []
    policy = Lenient.of(True, rows)
    assert policy.skipped is rows
    assert Lenient.of(policy) is policy
    assert Lenient.of(policy, rows) is policy
    with pytest.raises(ValueError, match="not both"):
        Lenient.of(policy, [])


def test_a_policy_collects_what_the_flag_and_list_collect(tmp_path):
    path = _pairs_file(tmp_path / "p.jsonl")
    rows: list = []
    by_flag = list(read_pairs(path, lenient=True, skipped=rows))
    policy = Lenient()
    by_policy = list(read_pairs(path, lenient=policy))
    assert by_flag == by_policy and len(by_policy) == 1
    assert [str(s) for s in policy.skipped] == [str(s) for s in rows]
    assert [(s.line, s.problem[:12]) for s in policy.skipped] == [
        (2, "invalid JSON"),
        (3, "missing key "),
    ]


def test_the_public_api_takes_a_policy_or_the_flag(tmp_path):
    path = _pairs_file(tmp_path / "train.jsonl")
    policy = Lenient()
    assert len(load_dataset(data=path, lenient=policy)) == 1
    rows: list = []
    assert len(list(iter_pairs(data=path, lenient=True, skipped=rows))) == 1
    assert [s.line for s in policy.skipped] == [s.line for s in rows] == [2, 3]


def test_import_records_skips_into_the_policy(tmp_path):
    path = tmp_path / "dpo.jsonl"
    path.write_text(json.dumps({"prompt": "x"}) + "\n")
    policy = Lenient()
    assert list(import_records(path, "dpo", lenient=policy)) == []
    assert len(policy.skipped) == 1 and "not a 'dpo' row" in policy.skipped[0].problem


def test_keep_readable_records_a_cut_stream_in_lost(tmp_path):
    from pathlib import Path

    cut = Path(__file__).parent / "data" / "bad" / "cut_stream.jsonl.gz"
    policy = Lenient(keep_readable=True)
    list(read_objects(cut, lenient=policy))
    assert len(policy.lost) == 1 and policy.lost[0].kind == "truncated"


def test_a_cut_stream_stays_loud_in_lenient_mode():
    from pathlib import Path

    from hhrlhf.errors import TruncatedStreamError

    cut = Path(__file__).parent / "data" / "bad" / "cut_stream.jsonl.gz"
    rows: list = []
    with pytest.raises(TruncatedStreamError):
        list(iter_pairs(data=cut, split="test", lenient=True, skipped=rows))
    policy = Lenient()
    with pytest.raises(TruncatedStreamError):
        list(read_pairs(cut, lenient=policy))
    assert rows == [] and policy.skipped == [] and policy.lost == []
