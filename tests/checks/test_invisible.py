from checks_helpers import t

from hhrlhf.checks import CHECKS, CLASSES, run_checks
from hhrlhf.checks.invisible import InvisibleCharacters, invisible_characters
from hhrlhf.records import PreferencePair


def found(chosen, rejected):
    return list(InvisibleCharacters().check(PreferencePair(chosen, rejected)))


def test_plain_text_is_not_flagged():
    assert found(t("hi", "héllo — café"), t("hi", "hey\u00a0there")) == []


def test_bidi_zero_width_and_c1_characters_are_counted():
    chosen = t("Name the file.", "report\u202eexe.txt")
    rejected = t("Name the file.", "pass\u200bword\u200b and\x85 \u2067x\u2069")
    assert found(chosen, rejected) == [
        (
            "invisible_characters",
            "6 character(s): U+0085, U+200B x2, U+202E, U+2067, U+2069",
        )
    ]
    assert invisible_characters("\ufeffa\u2060b") == {"U+FEFF": 1, "U+2060": 1}


def test_registered_as_a_warning_and_run_by_the_audit():
    assert CHECKS["invisible_characters"] is InvisibleCharacters
    assert CLASSES["invisible_characters"].severity == "warning"
    pairs = [
        PreferencePair(
            t("a", "b\u202e"), t("a", "c"), subset="helpful-base", split="test", index=0
        ),
        PreferencePair(t("a", "b"), t("a", "c"), subset="helpful-base", split="test", index=1),
    ]
    result = run_checks(pairs)
    assert result.counts["invisible_characters"] == 1
    assert result.flags[("helpful-base", "test", 0)] == {
        "invisible_characters": "1 character(s): U+202E"
    }
