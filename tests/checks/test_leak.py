from checks_helpers import t

from hhrlhf.checks.leak import TrainTestLeak, normalise_prompt
from hhrlhf.records import PreferencePair


def p(prompt, split, index, subset="helpful-base"):
    return PreferencePair(t(*prompt, "a"), t(*prompt, "b"), subset, split, index)


def test_normalise_prompt():
    assert normalise_prompt("\n\nHuman:  Hello\tWORLD \n") == "human: hello world"


def test_leak_after_case_and_whitespace_normalisation_across_subsets():
    check = TrainTestLeak()
    check.check(p(("How do I bake bread?",), "train", 4, "harmless-base"))
    check.check(p(("how do  I bake BREAD?",), "test", 0))
    check.check(p(("Something else",), "test", 1))
    got = check.finish()
    assert [(f.source, f.name) for f in got] == [(("helpful-base", "test", 0), "train_test_leak")]
    assert got[0].detail == "prompt of harmless-base/train index 4"


def test_reference_rows_are_compared_but_never_flagged():
    check = TrainTestLeak()
    check.reference(p(("same",), "test", 0))
    check.reference(p(("same",), "train", 0))
    assert check.finish() == []
