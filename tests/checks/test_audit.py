"""The audit end to end over tiny corpora: rows accounted for, counts, reports."""

import gzip
import json

from checks_helpers import pair, t

from hhrlhf.checks import CLASSES, DEFAULT_DROP, audit, check_class_names
from hhrlhf.errors import UnknownSubsetError

P1 = pair(("How do I boil an egg?",), "Nine minutes.", "An hour.")
P2 = pair(("Name a herb.",), "Mint.", "A rock.")
P3 = pair(("What is two plus two?",), "Four.", "Five.")


def test_raw_row_classes_and_row_accounting(corpus):
    root = corpus(
        {
            "helpful-base/train": [
                P1,
                "{not json",
                '["a list"]',
                {"chosen": "x"},
                {"chosen": 1, "rejected": "y"},
                "",
                P2,
            ],
            "helpful-base/test": [P3],
        }
    )
    r = audit(["helpful-base"], data=root, near_duplicates=False)
    assert r.rows == 7  # the blank line holds no row
    c = r.counts
    assert (c["bad_json"], c["missing_field"], c["not_a_string"]) == (2, 1, 1)
    assert r.flags[("helpful-base", "train", 1)].keys() == {"bad_json"}
    assert "invalid JSON" in r.flags[("helpful-base", "train", 1)]["bad_json"]
    assert r.flags[("helpful-base", "train", 2)] == {"bad_json": "expected a JSON object, got list"}
    assert r.files["helpful-base/train"]["rows"] == 6


def test_split_and_corpus_classes(corpus):
    dup = dict(P1)
    same_prompt = pair(("How do I boil an egg?",), "Boil it.", "Fry it.")
    root = corpus(
        {
            "helpful-base/train": [P1, P2, dup, same_prompt],
            "helpful-base/test": [pair(("how do i  BOIL an egg?",), "a", "b"), P3],
            "harmless-base/train": [P3],
            "harmless-base/test": [P2],
        }
    )
    r = audit(["helpful-base", "harmless-base"], data=root, near_duplicates=False)
    assert r.flags[("helpful-base", "train", 2)] == {
        "duplicate_pair": "same pair as index 0",
        "duplicate_prompt": "same prompt as index 0",
    }
    assert r.flags[("helpful-base", "train", 3)] == {"duplicate_prompt": "same prompt as index 0"}
    leaks = {s for s, names in r.flags.items() if "train_test_leak" in names}
    assert leaks == {
        ("helpful-base", "test", 0),
        ("helpful-base", "test", 1),
        ("harmless-base", "test", 0),
    }
    j = r.to_json()
    assert j["rows"] == 8 and j["counts"]["train_test_leak"] == 3
    assert j["files"]["helpful-base/train"]["counts"] == {
        "duplicate_pair": 1,
        "duplicate_prompt": 2,
    }


def test_split_test_still_sees_train_as_reference(corpus):
    root = corpus({"helpful-base/train": [P1, P1], "helpful-base/test": [P1, P2]})
    r = audit(["helpful-base"], split="test", data=root, near_duplicates=False)
    assert r.rows == 2 and list(r.files) == ["helpful-base/test"]
    assert set(r.flags) == {("helpful-base", "test", 0)}


def test_report_rows_have_source_classes_excerpt(corpus):
    root = corpus({"helpful-base/train": [P1, P1], "helpful-base/test": [P3]})
    rows = list(audit(["helpful-base"], data=root, near_duplicates=False).report_rows())
    assert rows == [
        {
            "source": {"subset": "helpful-base", "split": "train", "index": 1},
            "classes": ["duplicate_pair", "duplicate_prompt"],
            "details": {
                "duplicate_pair": "same pair as index 0",
                "duplicate_prompt": "same prompt as index 0",
            },
            "excerpt": "Human: How do I boil an egg? Assistant: Nine minutes.",
        }
    ]
    json.dumps(rows)


def test_red_team_file_is_audited(tmp_path):
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
    path = tmp_path / "red-team-attempts" / "red_team_attempts.jsonl.gz"
    path.parent.mkdir()
    path.write_bytes(gzip.compress(json.dumps([good, {**good, "rating": 9}]).encode()))
    r = audit(["red-team-attempts"], data=tmp_path)
    assert r.rows == 2
    assert r.flags == {("red-team-attempts", "train", 1): {"rating_out_of_range": "rating is 9"}}


def test_sample_audit_counts_match_the_foundation(sample_dir):
    import hhrlhf

    r = audit(data=sample_dir)
    ds = hhrlhf.load_dataset(data=sample_dir)
    pairs = ds["train"] + ds["test"]
    assert r.rows == len(pairs)
    for name in ("identical_pair", "empty_response", "non_alternating"):
        assert r.counts[name] == sum(name in p.classes for p in pairs)


def test_class_names_validation():
    assert check_class_names(["duplicate_pair,bad_json", "no_prompt"]) == [
        "duplicate_pair",
        "bad_json",
        "no_prompt",
    ]
    try:
        check_class_names(["nope"])
    except UnknownSubsetError as exc:
        assert "duplicate_prompt" in str(exc)
    else:
        raise AssertionError("unknown class accepted")
    assert set(DEFAULT_DROP) == {n for n, k in CLASSES.items() if k.severity == "error"}
    assert "duplicate_prompt" not in DEFAULT_DROP
