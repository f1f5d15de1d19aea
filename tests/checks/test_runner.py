"""The runner and ``run_checks``: every registered check over records in memory, no I/O."""

from checks_helpers import pair, t

from hhrlhf.checks import CHECKS, Check, CheckClass, CheckOptions, audit, build_checks, run_checks
from hhrlhf.checks.base import Finding
from hhrlhf.checks.runner import CheckRunner
from hhrlhf.records import PreferencePair, RedTeamAttempt

P1 = pair(("How do I boil an egg?",), "Nine minutes.", "An hour.")
P2 = pair(("Name a herb.",), "Mint.", "A rock.")
P3 = pair(("What is two plus two?",), "Four.", "Five.")


def pp(row, subset, split, index):
    return PreferencePair(row["chosen"], row["rejected"], subset, split, index)


def test_every_check_is_one_contract():
    for name, cls in CHECKS.items():
        assert issubclass(cls, Check) and cls.name == name
        assert cls.looks_at in ("row", "pair", "red_team")
        # each check answers through the one method, its own or a shared base's
        assert any("check" in vars(k) for k in cls.__mro__ if k is not Check)
    # abstract: a check without ``check`` cannot be built
    try:
        type("NoCheck", (Check,), {"name": "x", "classes": ()})()
    except TypeError:
        pass
    else:
        raise AssertionError("a Check without check() must not instantiate")


def test_build_checks_follows_the_registry_and_options():
    names = [c.name for c in build_checks(CheckOptions(near_duplicates=False))]
    assert names == [n for n in CHECKS if n != "near_duplicate_leak"]


def test_run_checks_matches_the_file_audit(corpus):
    files = {
        "helpful-base/train": [P1, P2, P1, pair(("How do I boil an egg?",), "Boil.", "Fry.")],
        "helpful-base/test": [pair(("how do i  BOIL an egg?",), "a", "b"), P3],
    }
    root = corpus(files)
    from_files = audit(["helpful-base"], data=root, near_duplicates=False)
    records = [
        pp(row, *key.split("/"), i) for key, rows in files.items() for i, row in enumerate(rows)
    ]
    in_memory = run_checks(records, options=CheckOptions(near_duplicates=False))
    assert in_memory.flags == from_files.flags
    assert in_memory.excerpts == from_files.excerpts
    assert in_memory.rows == from_files.rows == 6
    assert in_memory.counts["duplicate_pair"] == 1
    assert in_memory.counts["train_test_leak"] == 1


def test_run_checks_skips_leak_checks_without_train_and_test():
    r = run_checks([pp(P1, "helpful-base", "test", 0)], label="my pairs")
    assert r.skipped == {
        "train_test_leak": "no train split in my pairs to compare the test prompts with",
        "near_duplicate_leak": "no train split in my pairs to compare the test prompts with",
    }
    assert r.near_duplicates is None


def test_run_checks_on_bad_rows_and_red_team_attempts():
    attempt = RedTeamAttempt(
        transcript=t("hi", "hello"),
        min_harmlessness_score_transcript=0.5,
        num_params="52B",
        model_type="plain lm",
        rating=9,
        task_description="a task",
        task_description_harmlessness_score=0.1,
        red_team_member_id=1,
        is_upworker=False,
        tags=None,
        index=4,
    )
    r = run_checks([{"chosen": "x"}, attempt])
    assert r.flags[(None, "file", 0)] == {"missing_field": "missing 'rejected'"}
    assert r.flags[("red-team-attempts", "train", 4)] == {"rating_out_of_range": "rating is 9"}
    assert r.rows == 2


class _Shouty(Check):
    name = "shouty"
    classes = (CheckClass("shouting", "info", "the chosen response is in capitals"),)

    def check(self, pair):
        return [("shouting", "")] if pair.chosen_response.isupper() else []


class _CountTests(Check):
    name = "count_tests"
    classes = (CheckClass("last_test", "info", "the last test pair seen"),)

    def __init__(self):
        self.last = None

    def check(self, pair):
        if pair.split == "test":
            self.last = (pair.subset, pair.split, pair.index)
        return ()

    def finish(self):
        return [Finding(self.last, "last_test", "seen last")] if self.last else []


def test_a_new_check_needs_only_its_class():
    runner = CheckRunner([_Shouty(), _CountTests()])
    runner.start_file("helpful-base", "test")
    runner.pair(PreferencePair(t("hi", "HELLO"), t("hi", "bye"), "helpful-base", "test", 0))
    runner.pair(PreferencePair(t("hi", "x"), t("hi", "y"), "helpful-base", "test", 1))
    runner.end_file("f.jsonl")
    r = runner.finish()
    assert r.flags == {
        ("helpful-base", "test", 0): {"shouting": ""},
        ("helpful-base", "test", 1): {"last_test": "seen last"},
    }
    assert r.files == {"helpful-base/test": {"rows": 2, "path": "f.jsonl"}}


def test_reference_files_are_compared_not_flagged_nor_counted():
    runner = CheckRunner(build_checks(CheckOptions(near_duplicates=False)))
    runner.start_file("helpful-base", "train", reference=True)
    runner.row(0, P1)
    runner.row(1, P1)  # a duplicate, but only a reference
    runner.row(2, "not an object")
    runner.end_file("train.jsonl")
    runner.start_file("helpful-base", "test")
    runner.row(0, P1)
    runner.end_file("test.jsonl")
    r = runner.finish()
    assert r.flags == {
        ("helpful-base", "test", 0): {"train_test_leak": "prompt of helpful-base/train index 0"}
    }
    assert r.rows == 1 and list(r.files) == ["helpful-base/test"]
