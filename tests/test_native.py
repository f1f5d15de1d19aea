"""The native block parser (``hhrlhf._jsonl``) accepts only what orjson accepts, and decodes it
the same way; anything else it hands back to the Python parser (``None``).

The whole-file behaviour (fallbacks, errors, lenient reports) is held to the reference reader in
``tests/test_fastload.py``, which runs every test with both block parsers.
"""

from __future__ import annotations

import json
import shutil
import sysconfig

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hhrlhf import fastload
from hhrlhf.testing import synth
from hhrlhf.transcript import prompt_length

jsonl = fastload.parse._jsonl


def _compiler() -> bool:
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    return shutil.which(cc) is not None


def test_the_native_parser_is_built_where_a_compiler_is_at_hand():
    """``pip install`` builds it (setup.py, optional); a silent build failure shows up here."""
    if not _compiler():
        pytest.skip("no C compiler: the pure-Python parser is used")
    assert jsonl is not None, "hhrlhf._jsonl did not build: see the pip install output"


pytestmark_native = pytest.mark.skipif(jsonl is None, reason="hhrlhf._jsonl is not built")


def _reference(data: bytes, first: int = 0):
    """What orjson + prompt_length give for the same lines (blank lines skipped, counted)."""
    lines = data.split(b"\n")
    if not lines[-1]:
        lines.pop()
    cs, rs, ends, idx = [], [], [], []
    for n, line in enumerate(lines, first):
        if not line.strip():
            continue
        obj = orjson.loads(line)
        cs.append(obj["chosen"])
        rs.append(obj["rejected"])
        ends.append(prompt_length(obj["chosen"], obj["rejected"]))
        idx.append(n)
    return cs, rs, ends, idx, len(lines)


def _line(chosen: str, rejected: str, *, ascii_only: bool = False) -> bytes:
    obj = {"chosen": chosen, "rejected": rejected}
    if ascii_only:  # \\u escapes for every non-ASCII character, surrogate pairs for astral ones
        return json.dumps(obj, ensure_ascii=True).encode()
    return orjson.dumps(obj)


def _parse(data: bytes, first: int = 0):
    return jsonl.parse_block(data, first, prompt_length)


PROMPT = "\n\nHuman: hi\n\nAssistant:"


@pytestmark_native
@pytest.mark.parametrize(
    "data",
    [
        _line(PROMPT + " yes", PROMPT + " no"),
        _line(PROMPT + " yes", PROMPT + " no") + b"\n",
        # every escape JSON has, in both strings
        b'{"chosen": "\\n\\nHuman: \\"q\\" \\\\ \\/ \\b\\f\\r\\t\\n\\nAssistant: a", '
        b'"rejected": "\\n\\nHuman: \\"q\\" \\\\ \\/ \\b\\f\\r\\t\\n\\nAssistant: b"}\n',
        # \\u escapes: ASCII, Latin-1, BMP, NUL, line separator, a surrogate pair, upper case hex
        b'{"chosen": "\\u0041\\u00e9\\u4e2d\\u0000\\u2028\\ud83d\\ude42\\u00C9\\n\\nAssistant: x", '
        b'"rejected": "\\u0041\\u00e9\\u4e2d\\u0000\\u2028\\ud83d\\ude42\\u00C9\\n\\nAssistant: y"}',
        # raw UTF-8 before the prompt end: the end is counted in code points, not bytes
        _line("\n\nHuman: café 🙂 中\n\nAssistant: é", "\n\nHuman: café 🙂 中\n\nAssistant: ü"),
        _line("\n\nHuman: é\n\nAssistant: a", "\n\nHuman: é\n\nAssistant: b", ascii_only=True),
        # JSON whitespace around every token, CRLF, key order, DEL and other raw bytes
        b' \t{ "rejected" :\t"\\n\\nAssistant: b" , "chosen":"\\n\\nAssistant: a\x7f" } \r\n',
        # blank lines (what bytes.strip removes) are skipped but counted
        b"\n \t\x0b\x0c\r\n" + _line(PROMPT + " a", PROMPT + " b") + b"\n\n",
        # pairs outside the common case: the Python turn walk decides
        _line(PROMPT + " a\n\nHuman: more", PROMPT + " b"),
        _line("no markers", "no markers at all"),
        _line(PROMPT + " same", PROMPT + " same"),
        _line("", ""),
        _line(PROMPT + " ok\n\nHuman: and?\n\nAssistant: x", PROMPT + " ok then"),
        _line("\n\nAssistant:", "\n\nAssistant:"),
        _line("x\n\nAssistant:", "y\n\nAssistant:"),
    ],
    ids=[
        "plain",
        "newline",
        "escapes",
        "unicode-escapes",
        "raw-utf8",
        "ascii-escaped",
        "whitespace",
        "blank-lines",
        "human-after",
        "no-markers",
        "identical",
        "empty",
        "moved-marker",
        "marker-only",
        "diverge-before",
    ],
)
def test_accepted_lines_decode_like_orjson(data):
    got = _parse(data, 5)
    assert got is not None
    assert got == _reference(data, 5)


@pytestmark_native
@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\n\n  \n",  # blank lines only: no pair
        b"[1, 2]",
        b'{"chosen": "a"}',
        b'{"rejected": "a"}',
        b'{"chosen": "a", "rejected": 2}',
        b'{"chosen": "a", "rejected": null}',
        b'{"chosen": "a", "rejected": "b", "extra": "c"}',  # valid, but not ours to decide
        b'{"chosen": "a", "chosen": "b", "rejected": "c"}',  # valid: orjson keeps the last
        b'{"cho\\u0073en": "a", "rejected": "b"}',  # an escaped key
        b'{"chosen": "a", "rejected": "b"} x',
        b'{"chosen": "a", "rejected": "b"},',
        b'{"chosen": "a", "rejected": "b"',
        b'{"chosen": "a" "rejected": "b"}',
        b'{"chosen": "a", "rejected": "b",}',
        b'{"chosen": "a\x01", "rejected": "b"}',  # raw control character
        b'{"chosen": "a\tb", "rejected": "b"}',  # a raw tab is a control character too
        b'{"chosen": "a\\x", "rejected": "b"}',  # unknown escape
        b'{"chosen": "a\\u12", "rejected": "b"}',  # short \\u
        b'{"chosen": "a\\u12g4", "rejected": "b"}',
        b'{"chosen": "\\ud800", "rejected": "b"}',  # lone high surrogate
        b'{"chosen": "\\ud800\\u0041", "rejected": "b"}',
        b'{"chosen": "\\udc00", "rejected": "b"}',  # lone low surrogate
        b'{"chosen": "\xff", "rejected": "b"}',  # invalid UTF-8
        b'{"chosen": "\xc0\x80", "rejected": "b"}',  # overlong
        b'{"chosen": "\xed\xa0\x80", "rejected": "b"}',  # an encoded surrogate
        b'{"chosen": "\xe4\xb8", "rejected": "b"}',  # truncated sequence
        b'{"chosen": "a", "rejected": "\xf4\x90\x80\x80"}',  # beyond U+10FFFF
        b'\xef\xbb\xbf{"chosen": "a", "rejected": "b"}',  # byte order mark
        b'\x0c{"chosen": "a", "rejected": "b"}',  # not JSON whitespace
        b'{"chosen": "a", "rejected": "b"}\n{"chosen": "a"}\n',  # one bad line spoils the block
        b'{"chosen": "unterminated, "rejected": "b"}',
        b'{"chosen": "a", "rejected": "b\n"}',  # a newline ends the line inside the string
    ],
)
def test_everything_else_is_left_to_the_python_parser(data):
    assert _parse(data) is None


@pytestmark_native
def test_long_strings_cross_the_vector_loop_at_every_offset():
    """Escapes and non-ASCII bytes at each position of a 16-byte window, and near the end."""
    for k in range(40):
        for special in ("\n", '"', "\\", "é", "\u2028", "🙂", "\x7f", "\x00"):
            c = "a" * k + special + "b" * (40 - k) + PROMPT + " x" * k
            r = "a" * k + special + "b" * (40 - k) + PROMPT + " y"
            for data in (_line(c, r), _line(c, r, ascii_only=True)):
                assert _parse(data) == _reference(data), (k, special)


PIECES = ["\n\nHuman:", "\n\nAssistant:", "\n", " hi", "x", "é", "🙂", '"', "\\", "\x00", "\t"]
texts = st.lists(st.sampled_from(PIECES), max_size=10).map("".join) | st.text(max_size=30)


@pytestmark_native
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(st.tuples(texts, texts, texts), min_size=1, max_size=5),
    ascii_only=st.booleans(),
)
def test_property_same_as_orjson_and_prompt_length(rows, ascii_only):
    data = b"\n".join(_line(p + a, p + b, ascii_only=ascii_only) for p, a, b in rows)
    assert _parse(data, 3) == _reference(data, 3)


@pytestmark_native
@settings(max_examples=1500, deadline=None)
@given(data=st.data())
def test_fuzz_never_accepts_what_orjson_rejects(data):
    """Mutate valid lines byte by byte: either None, or exactly orjson's decoding."""
    base = bytearray(
        _line('\n\nHuman: é "q"\n\nAssistant: 🙂 a\\b', '\n\nHuman: é "q"\n\nAssistant: z')
        + b"\n"
        + _line(PROMPT + " a", PROMPT + " b", ascii_only=True)
    )
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(base) - 1))
        op = data.draw(st.sampled_from(["set", "insert", "delete"]))
        byte = data.draw(st.sampled_from(list(b'"\\{}:, \t\r\n\x00\x0bu0dD8e\x80\xc3\xed\xff')))
        if op == "set":
            base[pos] = byte
        elif op == "insert":
            base.insert(pos, byte)
        elif len(base) > 1:
            del base[pos]
    blob = bytes(base)
    got = _parse(blob)
    if got is not None:
        assert got == _reference(blob)


@pytestmark_native
def test_generated_corpus_with_every_quirk_is_accepted_whole():
    """The synthetic quirks (unicode, markers in responses, identical sides, ...) are all
    valid JSON with the two keys, so the native parser takes every block itself."""
    rows = list(synth.generate_pairs(2000, seed=3, quirks=synth.QuirkRates(unicode=0.3)))
    data = b"".join(orjson.dumps(r) + b"\n" for r in rows)
    got = _parse(data)
    assert got is not None and got == _reference(data)
    assert len(got[0]) == 2000


@pytestmark_native
def test_parse_jsonl_uses_the_native_parser_without_block_fallbacks(monkeypatch):
    """With native=True no block reaches the Python parser on ordinary data."""
    rows = list(synth.generate_pairs(300, seed=4))
    data = b"".join(orjson.dumps(r) + b"\n" for r in rows)

    def refuse(*args, **kwargs):
        raise AssertionError("the Python block parser ran")

    monkeypatch.setattr(fastload.parse, "_parse_lines", refuse)
    pairs = fastload.parse_jsonl(data, subset="s", split="t", block=4096, native=True)
    assert [p.chosen for p in pairs] == [r["chosen"] for r in rows]


@pytestmark_native
def test_a_refused_block_is_parsed_again_in_python():
    """An extra key is valid JSON: the native parser refuses the block, Python decodes it."""
    data = (
        _line(PROMPT + " a", PROMPT + " b") + b"\n" + b'{"chosen": "x", "rejected": "y", "k": 1}\n'
    )
    assert _parse(data) is None
    pairs = fastload.parse_jsonl(data, native=True)
    assert [(p.chosen, p.index) for p in pairs] == [(PROMPT + " a", 0), ("x", 1)]


def test_native_true_without_the_extension_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(fastload.parse, "_jsonl", None)
    with pytest.raises(RuntimeError, match="not built"):
        fastload.parse_jsonl(_line("a", "b"), native=True)


# --------------------------------------------------------------------------- Arrow columns


def _columns(got) -> list[list[str]]:
    """parse_block_arrow's (data, int32 offsets) columns as lists of str."""
    import array

    out = []
    for data, offsets in got[0]:
        offs = array.array("i", offsets)
        out.append([data[a:b].decode() for a, b in zip(offs[:-1], offs[1:], strict=True)])
    return out


def _check_arrow(data: bytes, first: int = 0) -> bool:
    """parse_block_arrow accepts exactly what parse_block accepts, with the same strings,
    split at the same prompt ends, the same line numbers and line count. Whether accepted."""
    import array

    ref = _parse(data, first)
    for dpo in (True, False):
        got = jsonl.parse_block_arrow(data, first, prompt_length, dpo)
        if ref is None:
            assert got is None
            continue
        cs, rs, ends, idx, n_lines = ref
        assert got is not None and got[2:] == (len(cs), n_lines)
        assert list(array.array("q", got[1])) == idx
        if dpo:
            expect = [
                [c[:e] for c, e in zip(cs, ends, strict=True)],
                [c[e:] for c, e in zip(cs, ends, strict=True)],
                [r[e:] for r, e in zip(rs, ends, strict=True)],
            ]
        else:
            expect = [cs, rs]
        assert _columns(got) == expect
    return ref is not None


@pytestmark_native
def test_arrow_columns_on_the_accepted_and_refused_examples():
    accepted = [
        _line(PROMPT + " yes", PROMPT + " no") + b"\n",
        _line("\n\nHuman: café 🙂 中\n\nAssistant: é", "\n\nHuman: café 🙂 中\n\nAssistant: ü"),
        _line("\n\nHuman: é🙂\n\nAssistant: a\n\nHuman: b", "\n\nHuman: é🙂\n\nAssistant: c"),
        _line("é no markers", "é no markers at all"),
        b"\n \t\x0b\x0c\r\n" + _line(PROMPT + " a", PROMPT + " b") + b"\n\n",
    ]
    for data in accepted:
        assert _check_arrow(data, 4)
    for data in (
        b'{"chosen": "\xed\xa0\x80", "rejected": "b"}',
        b'{"chosen": "a", "rejected": "\xf4\x90\x80\x80"}',
        b'{"chosen": "\xc0\x80", "rejected": "b"}',
        b'{"chosen": "\xe4\xb8", "rejected": "b"}',
        b'{"chosen": "\xf0\x8f\xbf\xbf", "rejected": "b"}',  # overlong 4-byte form
        b'{"chosen": "\xe0\x9f\xbf", "rejected": "b"}',  # overlong 3-byte form
        b'{"chosen": "a\xc3", "rejected": "b"}',  # cut before the closing quote
        b"\n\n",
    ):
        assert not _check_arrow(data)


@pytestmark_native
def test_arrow_long_strings_cross_the_vector_loop_at_every_offset():
    for k in range(0, 40, 3):
        for special in ("\n", '"', "é", "\u2028", "🙂", "\x00"):
            c = "a" * k + special + "b" * (40 - k) + PROMPT + " x" * k
            r = "a" * k + special + "b" * (40 - k) + PROMPT + " y"
            assert _check_arrow(_line(c, r) + b"\n" + _line(c, r, ascii_only=True))


@pytestmark_native
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(st.tuples(texts, texts, texts), min_size=1, max_size=5),
    ascii_only=st.booleans(),
)
def test_arrow_property_same_as_parse_block(rows, ascii_only):
    data = b"\n".join(_line(p + a, p + b, ascii_only=ascii_only) for p, a, b in rows)
    assert _check_arrow(data, 3)


@pytestmark_native
@settings(max_examples=1000, deadline=None)
@given(data=st.data())
def test_arrow_fuzz_accepts_what_parse_block_accepts(data):
    """Mutated lines, raw UTF-8 bytes included: the same decision and strings as parse_block."""
    base = bytearray(
        _line('\n\nHuman: é "q"\n\nAssistant: 🙂 a\\b', '\n\nHuman: é "q"\n\nAssistant: z')
        + b"\n"
        + _line(PROMPT + " a", PROMPT + " b", ascii_only=True)
    )
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(base) - 1))
        op = data.draw(st.sampled_from(["set", "insert", "delete"]))
        byte = data.draw(
            st.sampled_from(
                list(b'"\\{}:, \n\x00u0dD8e\x80\x8f\x9f\xa0\xbf\xc0\xc3\xe0\xed\xf0\xf4\xff')
            )
        )
        if op == "set":
            base[pos] = byte
        elif op == "insert":
            base.insert(pos, byte)
        elif len(base) > 1:
            del base[pos]
    _check_arrow(bytes(base))


@pytestmark_native
def test_untrack_takes_a_list_or_one_object():
    import gc

    class Slotted:
        __slots__ = ("a",)

    objs = [Slotted() for _ in range(3)]
    assert all(map(gc.is_tracked, objs))
    jsonl.untrack(objs)
    assert not any(map(gc.is_tracked, objs)) and gc.is_tracked(objs)
    one = Slotted()
    jsonl.untrack(one)
    assert not gc.is_tracked(one)
    jsonl.untrack(["a", 1, None])  # atomic values: nothing to do


@pytestmark_native
def test_build_makes_the_records_the_class_makes():
    import gc

    from hhrlhf.records import PreferencePair

    slots = fastload.parse._SLOTS
    cs = [PROMPT + " a", "x\n\nAssistant: é"]
    rs = [PROMPT + " b", "x\n\nAssistant: ü"]
    ends = [prompt_length(c, r) for c, r in zip(cs, rs, strict=True)]
    got = jsonl.build(PreferencePair, slots, (cs, rs, "s", None, [3, 9], ends))
    want = [PreferencePair(c, r, "s", None, i) for c, r, i in zip(cs, rs, [3, 9], strict=True)]
    assert got == want and [p.prompt_end for p in got] == [p.prompt_end for p in want]
    assert [repr(p) for p in got] == [repr(p) for p in want]
    assert not any(map(gc.is_tracked, got))
    assert jsonl.build(PreferencePair, slots, ([], [], None, None, [], [])) == []
    with pytest.raises(ValueError, match="length"):
        jsonl.build(PreferencePair, slots, (cs, rs[:1], None, None, [1, 2], ends))
    with pytest.raises(ValueError, match="one column per slot"):
        jsonl.build(PreferencePair, slots, (cs,))
    with pytest.raises(TypeError, match="own object slots"):
        jsonl.build(PreferencePair, (PreferencePair.chosen, len), (cs, rs))

    class Other:
        __slots__ = ("a",)

    with pytest.raises(TypeError, match="own object slots"):
        jsonl.build(Other, (PreferencePair.chosen,), (cs,))
