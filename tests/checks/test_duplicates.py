from checks_helpers import t

from hhrlhf.checks.duplicates import DuplicatePairs, DuplicatePrompts, digest
from hhrlhf.records import PreferencePair


def run(check, pairs):
    check.start()
    return [list(check.check(PreferencePair(c, r, index=i))) for i, (c, r) in enumerate(pairs)]


def test_duplicate_pair_flags_later_copies_only():
    a = (t("hi", "x"), t("hi", "y"))
    b = (t("hi", "x"), t("hi", "z"))
    got = run(DuplicatePairs(), [a, b, a, a])
    assert got == [
        [],
        [],
        [("duplicate_pair", "same pair as index 0")],
        [("duplicate_pair", "same pair as index 0")],
    ]


def test_swapped_pair_is_not_a_duplicate():
    a = (t("hi", "x"), t("hi", "y"))
    assert run(DuplicatePairs(), [a, a[::-1]]) == [[], []]


def test_duplicate_prompt_is_counted():
    got = run(
        DuplicatePrompts(),
        [(t("hi", "x"), t("hi", "y")), (t("hi", "p"), t("hi", "q")), (t("yo", "x"), t("yo", "y"))],
    )
    assert got == [[], [("duplicate_prompt", "same prompt as index 0")], []]


def test_state_resets_per_split():
    check = DuplicatePairs()
    a = (t("hi", "x"), t("hi", "y"))
    run(check, [a])
    assert run(check, [a]) == [[]]


def test_digest_respects_boundaries():
    assert digest("ab", "c") != digest("a", "bc")
    assert len(digest("x")) == 16
