from checks_helpers import t

from hhrlhf.checks.pair import PairClasses
from hhrlhf.records import PreferencePair


def names(chosen, rejected):
    return [n for n, _ in PairClasses().check(PreferencePair(chosen, rejected))]


def test_clean_pair_has_no_class():
    assert names(t("hi", "hello"), t("hi", "hey")) == []


def test_foundation_classes_are_reported():
    assert names(t("hi", "hello"), t("hi", "hello")) == ["identical_pair"]
    assert names(t("hi", ""), t("hi", "hey")) == ["empty_response"]
    two_humans = "\n\nHuman: a\n\nHuman: b\n\nAssistant: x"
    assert names(two_humans, two_humans[:-1] + "y") == ["non_alternating"]


def test_every_foundation_class_has_a_severity():
    assert {k.severity for k in PairClasses.classes} <= {"error", "warning", "info"}
    assert {k.name for k in PairClasses.classes} >= {
        "identical_pair",
        "empty_response",
        "no_prompt",
    }
