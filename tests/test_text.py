"""hhrlhf.text: control characters escaped, and a wrapper like textwrap's in linear time."""

from __future__ import annotations

import random
import textwrap
import time

import pytest

from hhrlhf import text as text_mod
from hhrlhf.text import printable, wrap, wrap_paragraphs


def test_printable_escapes_c0_c1_and_del_but_keeps_newline_and_tab():
    raw = "a\x1b]0;title\x07b\x1b[2Jc\x9bd\x7fe\x00\r\n\tf"
    out = printable(raw)
    assert out == "a\\x1b]0;title\\x07b\\x1b[2Jc\\x9bd\\x7fe\\x00\\x0d\n\tf"
    assert not any(ord(ch) < 0x20 and ch not in "\n\t" for ch in out)
    assert not any(0x7F <= ord(ch) < 0xA0 for ch in out)


def test_printable_escapes_bidi_controls_and_zero_width_characters():
    hidden = [0x061C, *range(0x200B, 0x2010), *range(0x202A, 0x202F), 0x2060]
    hidden += [*range(0x2066, 0x206A), 0xFEFF]
    raw = "x".join(chr(c) for c in hidden)
    out = printable(raw)
    assert out == "x".join(f"\\u{c:04x}" for c in hidden)
    assert printable(raw, keep_newlines=False) == out
    # the bidi override that makes "txt.exe" read as "exe.txt" shows as an escape
    assert printable("report\u202eexe.txt") == "report\\u202eexe.txt"
    # a character beside them that only looks unusual is left alone
    assert printable("\u2010 \u202f \u00ad") == "\u2010 \u202f \u00ad"


def test_json_safe_escapes_what_json_leaves_and_keeps_the_values():
    import json

    value = {"a": "one\u202etwo\u200b\x85\x7f\x1b", "b": "café"}
    encoded = json.dumps(value, ensure_ascii=False)
    safe = text_mod.json_safe(encoded)
    assert json.loads(safe) == value
    assert "\\u202e" in safe and "\\u200b" in safe and "\\u0085" in safe and "\\u007f" in safe
    assert not any(ord(c) in text_mod.INVISIBLE or 0x7F <= ord(c) < 0xA0 for c in safe)
    plain = '{"b": "café"}'
    assert text_mod.json_safe(plain) is plain


def test_printable_table_mode_escapes_newline_and_tab():
    assert printable("a\nb\tc", keep_newlines=False) == "a\\x0ab\\x09c"


def test_printable_leaves_ordinary_text_alone():
    s = "Plain text, with accents: café, naïve — and a non-breaking\u00a0space."
    assert printable(s) is s


WORDS = [
    "a", "I", "well-known", "--", "e-mail", "x" * 120, "self-contained-hyphen-word-" * 5,
    "word.", "\t", "  ", "don't", "A--B", "co-op", "-", "---", "ab-" * 40, "\u00a0",
    "hi\u00a0there", "Basil", "is", "the", "classic", "pairing.",
]  # fmt: skip


def test_wrap_equals_textwrap_on_ordinary_and_odd_text():
    rng = random.Random(7)
    for _ in range(3000):
        s = "".join(
            rng.choice(WORDS) + rng.choice([" ", "  ", "", "\t"]) for _ in range(rng.randint(0, 40))
        )
        width = rng.choice([10, 20, 40, 96])
        indent = rng.choice(["", "    ", ">> "])
        expected = textwrap.wrap(s, width, initial_indent=indent, subsequent_indent=indent)
        assert wrap(s, width, initial_indent=indent, subsequent_indent=indent) == expected, s


def test_wrap_golden_paragraph():
    para = (
        "I can't see the sky, but a well-known forecast site can tell you whether it is going "
        "to rain this afternoon; your national weather service is a good start -- and free."
    )
    got = wrap_paragraphs(para + "\n\n" + para, 40, "    ")
    assert got == "\n".join(
        textwrap.wrap(para, 40, initial_indent="    ", subsequent_indent="    ")
        + ["    "]
        + textwrap.wrap(para, 40, initial_indent="    ", subsequent_indent="    ")
    )


def test_wrap_rejects_bad_width():
    with pytest.raises(ValueError):
        wrap("abc", 0)


def _slices(n: int) -> int:
    """How many characters wrap() copies out of chunks while wrapping an n-character word."""
    copied = 0
    real = str.__getitem__

    class Counting(str):
        def __getitem__(self, key):
            nonlocal copied
            piece = real(self, key)
            copied += len(piece)
            return piece

    orig = text_mod._chunks
    text_mod._chunks = lambda t: [Counting(c) for c in orig(t)]
    try:
        lines = wrap("w" * n, 96, initial_indent="    ", subsequent_indent="    ")
    finally:
        text_mod._chunks = orig
    assert "".join(line[4:] for line in lines) == "w" * n
    return copied


def test_wrap_copies_linear_amount_for_an_unbroken_word():
    # textwrap copies the rest of the word once per line: ~n**2 / (2 * 92) characters
    small, big = _slices(50_000), _slices(400_000)
    assert big <= 8 * small + 1000
    assert big <= 2 * 400_000


def test_wrap_time_is_linear_for_an_unbroken_word():
    def timed(n: int) -> float:
        word = "w" * n
        best = float("inf")
        for _ in range(3):
            t = time.perf_counter()
            wrap(word, 96, initial_indent="    ", subsequent_indent="    ")
            best = min(best, time.perf_counter() - t)
        return best

    small, big = timed(500_000), timed(4_000_000)
    assert big < 8 * small * 2 + 0.05, (small, big)
