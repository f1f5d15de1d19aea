"""``load_arrow`` gives, column by column, what the records path gives: the same strings, the
same rows, the same errors and lenient reports; with the native block parser and without.

The expected tables are built here from the reference reader's records (``read_pairs``), one
row dict at a time, so they share no code with the Arrow path.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hhrlhf
from hhrlhf import fastload
from hhrlhf.errors import DataFormatError, HHError
from hhrlhf.fastload import load_files_arrow
from hhrlhf.reader import Lenient, read_pairs
from hhrlhf.testing import synth

pa = pytest.importorskip("pyarrow")

DATA = Path(__file__).parent / "data"
BAD = sorted(p for p in (DATA / "bad").glob("*.json*") if p.name != "expected.json")
HEAVY = synth.QuirkRates(
    empty_chosen=0.05,
    turns_in_chosen=0.05,
    turns_in_rejected=0.05,
    assistant_in_response=0.05,
    double_human=0.05,
    double_assistant=0.05,
    inline_label=0.1,
    identical=0.05,
    duplicate=0.03,
    diverge_early=0.05,
    preamble=0.05,
    no_prompt=0.05,
    shared_start=0.3,
    unicode=0.2,
)


@pytest.fixture(autouse=True, params=["native", "python"])
def block_parser(request, monkeypatch):
    native = request.param == "native"
    if native and fastload.parse._jsonl is None:
        pytest.skip("the native block parser is not built (tests/test_native.py says why)")
    monkeypatch.setattr(fastload.parse, "NATIVE", native)
    return request.param


def _rows(pairs, columns="dpo") -> list[dict]:
    out = []
    for p in pairs:
        if columns == "dpo":
            d = {"prompt": p.prompt, "chosen": p.chosen_response, "rejected": p.rejected_response}
        else:
            d = {"chosen": p.chosen, "rejected": p.rejected}
        d.update(subset=p.subset, split=p.split, index=p.index)
        out.append(d)
    return out


def _expected(jobs, columns="dpo", **kw) -> list[list[dict]]:
    return [_rows(read_pairs(path, subset=s, split=sp, **kw), columns) for path, s, sp in jobs]


def _check_schema(table, columns="dpo"):
    names = list(fastload.ARROW_COLUMNS[columns]) + ["subset", "split", "index"]
    assert table.column_names == names
    assert [str(t) for t in table.schema.types] == ["string"] * (len(names) - 1) + ["int64"]


def _assert_tables(tables, expected, columns="dpo"):
    assert len(tables) == len(expected)
    for table, rows in zip(tables, expected, strict=True):
        _check_schema(table, columns)
        assert table.to_pylist() == rows


# --------------------------------------------------------------------------- whole files


@pytest.mark.parametrize("columns", ["dpo", "raw"])
def test_sample_equals_the_records_path(columns):
    tables = hhrlhf.load_arrow(data="sample", columns=columns)
    records = hhrlhf.load_dataset(data="sample")
    assert set(tables) == set(records) == {"train", "test"}
    for split, table in tables.items():
        _check_schema(table, columns)
        assert table.to_pylist() == _rows(records[split], columns)
    one = hhrlhf.load_arrow("harmless-base", split="test", data="sample", columns=columns)
    assert one.to_pylist() == _rows(
        hhrlhf.load_dataset("harmless-base", split="test", data="sample"), columns
    )


def test_dpo_strings_are_the_dpo_format():
    table = hhrlhf.load_arrow("harmless-base", split="test", data="sample")
    raw = hhrlhf.load_arrow("harmless-base", split="test", data="sample", columns="raw")
    for d, r in zip(table.to_pylist(), raw.to_pylist(), strict=True):
        assert d["prompt"] + d["chosen"] == r["chosen"]
        assert d["prompt"] + d["rejected"] == r["rejected"]
        assert d["prompt"].endswith("\n\nAssistant:")
        assert d["chosen"].startswith(" ")


@pytest.mark.parametrize("columns", ["dpo", "raw"])
def test_heavy_quirk_files(tmp_path, columns):
    jobs = []
    for k, (subset, split) in enumerate([("helpful-base", "train"), ("harmless-base", "test")]):
        path = tmp_path / f"{k}.jsonl.gz"
        synth.write_jsonl_gz(path, synth.generate_pairs(1500, seed=k, quirks=HEAVY), fast=k == 1)
        jobs.append((path, subset, split))
    _assert_tables(load_files_arrow(jobs, columns=columns), _expected(jobs, columns), columns)


@pytest.mark.parametrize("block", [1, 7, 100, 4096])
def test_lines_cut_across_blocks(tmp_path, block):
    rows = list(synth.generate_pairs(40, seed=11, quirks=HEAVY))
    body = b"".join(
        orjson.dumps(r) + (b"\r\n" if i % 5 == 0 else b"\n") for i, r in enumerate(rows)
    )
    body = body.replace(b"\n", b"\n\n", 3)
    path = tmp_path / "p.jsonl"
    path.write_bytes(body)
    blocks = (body[i : i + block] for i in range(0, len(body), block))
    parsed = fastload.arrow._arrow_parts(
        blocks, "dpo", "helpful-online", "test", fastload.parse.NATIVE
    )
    table = fastload.arrow._parts_table(pa, parsed, "dpo", "helpful-online", "test")
    (expected,) = _expected([(path, "helpful-online", "test")])
    assert table.to_pylist() == expected and len(expected) == 40


LINE = (
    b'{"chosen": "\\n\\nHuman: q\\n\\nAssistant: a", '
    b'"rejected": "\\n\\nHuman: q\\n\\nAssistant: b"}'
)


@pytest.mark.parametrize(
    "body",
    [
        LINE + b"\n" + LINE,
        LINE + b"\r\n" + LINE + b"\r\n",
        b"\n" + LINE + b"\n\n  \n" + LINE + b"\n\n",
        b'{"chosen": "x", "rejected": "y", "extra": 1}\n' + LINE + b"\n",
        b'{"rejected": "y", "chosen": "x"}\n',
        b'{"chosen": "a", "chosen": "b", "rejected": "c"}\n',
        '{"chosen": "\\n\\nHuman: é🙂\\n\\nAssistant: ü", "rejected": "\\n\\nHuman: é🙂"}\n'.encode(),
        b'[{"chosen": "a", "rejected": "b"}]',
    ],
    ids=["no-final-newline", "crlf", "blank", "extra-key", "order", "dup-key", "utf8", "array"],
)
def test_unusual_but_valid_files(tmp_path, body):
    path = tmp_path / "f.jsonl.gz"
    path.write_bytes(gzip.compress(body))
    jobs = [(path, "helpful-base", "train")]
    _assert_tables(load_files_arrow(jobs), _expected(jobs))


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.name)
def test_bad_files_raise_the_load_dataset_error(path):
    with pytest.raises(DataFormatError) as ref_err:
        hhrlhf.load_dataset(data=path, split="train")
    with pytest.raises(DataFormatError) as err:
        hhrlhf.load_arrow(data=path, split="train")
    assert str(err.value) == str(ref_err.value)
    assert (err.value.path, err.value.line) == (ref_err.value.path, ref_err.value.line)


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.name)
def test_bad_files_lenient_reports_are_the_load_dataset_ones(path, tmp_path):
    # laid out like upstream, so the file's own name says its split
    (tmp_path / "harmless-base").mkdir()
    src, path = path, tmp_path / "harmless-base" / ("train" + "".join(path.suffixes))
    path.write_bytes(src.read_bytes())
    ref_skipped, skipped = [], []
    try:
        ref = hhrlhf.load_dataset(data=path, lenient=True, skipped=ref_skipped)
    except DataFormatError as exc:  # whole-file problems stay errors when lenient
        with pytest.raises(DataFormatError) as err:
            hhrlhf.load_arrow(data=path, lenient=True, skipped=skipped)
        assert str(err.value) == str(exc) and skipped == ref_skipped
        return
    tables = hhrlhf.load_arrow(data=path, lenient=True, skipped=skipped)
    assert skipped == ref_skipped
    assert {k: t.to_pylist() for k, t in tables.items()} == {k: _rows(v) for k, v in ref.items()}


def test_several_files_keep_file_order_for_errors_and_reports(tmp_path):
    bad_a = tmp_path / "a.jsonl"
    bad_a.write_bytes((LINE + b"\n") * 50 + b"{not json\n" + (LINE + b"\n") * 5)
    good = tmp_path / "g.jsonl"
    good.write_bytes((LINE + b"\n") * 3)
    bad_b = tmp_path / "b.jsonl"
    bad_b.write_bytes(LINE + b'\n{"chosen": 1, "rejected": "x"}\n')
    jobs = [(bad_a, "s", "train"), (good, "s", "test"), (bad_b, "t", "train")]
    with pytest.raises(DataFormatError) as ref_err:
        fastload.load_files(jobs)
    with pytest.raises(DataFormatError) as err:
        load_files_arrow(jobs)
    assert str(err.value) == str(ref_err.value) and err.value.line == 51
    ref_skipped, skipped = [], []
    ref = fastload.load_files(jobs, lenient=Lenient(ref_skipped))
    tables = load_files_arrow(jobs, lenient=Lenient(skipped))
    assert skipped == ref_skipped and [s.line for s in skipped] == [51, 2]
    assert [t.to_pylist() for t in tables] == [_rows(r) for r in ref]


def test_truncated_gzip_is_the_reference_error(tmp_path):
    path = tmp_path / "t.jsonl.gz"
    path.write_bytes(gzip.compress((LINE + b"\n") * 2000)[:-30])
    jobs = [(path, None, None)]
    with pytest.raises(DataFormatError) as ref_err:
        _expected(jobs)
    with pytest.raises(DataFormatError) as err:
        load_files_arrow(jobs)
    assert str(err.value) == str(ref_err.value)


def test_api_errors(tmp_path):
    with pytest.raises(HHError, match="columns"):
        hhrlhf.load_arrow(data="sample", columns="sft")
    with pytest.raises(HHError, match="attempts"):
        hhrlhf.load_arrow("red-team-attempts", data="sample")


def test_missing_pyarrow_is_the_extra_error(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now fails
    with pytest.raises(hhrlhf.MissingExtraError, match=r"hhrlhf\[hf\]"):
        hhrlhf.load_arrow(data="sample")


def test_native_path_takes_no_python_strings(monkeypatch, block_parser):
    """On ordinary data the native path builds no records (the Python block parser never
    runs) and gives Arrow arrays over its own buffers."""
    if block_parser != "native":
        pytest.skip("native only")

    def refuse(*args, **kwargs):
        raise AssertionError("the Python block parser ran")

    monkeypatch.setattr(fastload.parse, "_parse_lines", refuse)
    table = hhrlhf.load_arrow(data="sample", split="test")
    assert table.num_rows == 80


# --------------------------------------------------------------------------- generated

PIECES = ["\n\nHuman:", "\n\nAssistant:", "\n", " hi", "x", "é", "🙂", '"', "\\", "\x00", "\t"]
texts = st.lists(st.sampled_from(PIECES), max_size=10).map("".join) | st.text(max_size=30)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(st.tuples(texts, texts, texts), min_size=1, max_size=6),
    ascii_only=st.booleans(),
    columns=st.sampled_from(["dpo", "raw"]),
)
def test_property_generated_transcripts(tmp_path_factory, rows, ascii_only, columns):
    import json

    objs = [{"chosen": p + a, "rejected": p + b} for p, a, b in rows]
    body = b"\n".join(
        json.dumps(o, ensure_ascii=True).encode() if ascii_only else orjson.dumps(o) for o in objs
    )
    path = tmp_path_factory.mktemp("gen") / "g.jsonl"
    path.write_bytes(body)
    jobs = [(path, "harmless-base", "train")]
    _assert_tables(load_files_arrow(jobs, columns=columns), _expected(jobs, columns), columns)


REAL = os.environ.get("HH_RLHF_REAL")
REAL_FILE = Path(REAL or "/nonexistent") / "harmless-base" / "test.jsonl.gz"


@pytest.mark.skipif(
    not REAL_FILE.is_file(),
    reason="set HH_RLHF_REAL to a folder holding the real harmless-base/test.jsonl.gz",
)
@pytest.mark.parametrize("columns", ["dpo", "raw"])
def test_real_file(columns):
    jobs = [(REAL_FILE, "harmless-base", "test")]
    tables = load_files_arrow(jobs, columns=columns)
    _assert_tables(tables, _expected(jobs, columns), columns)
    assert tables[0].num_rows == 2312


_IMPORTS_AFTER = """
import sys, hhrlhf
skipped = []
tables = hhrlhf.load_arrow(data=sys.argv[1], lenient=True, skipped=skipped)
one = hhrlhf.load_arrow(data=sys.argv[1], split="test", lenient=True)
assert sum(t.num_rows for t in tables.values()) > 0 and one.num_rows > 0
print(sorted(m for m in ("pandas", "datasets") if m in sys.modules))
"""


@pytest.mark.parametrize("bad_line", [False, True], ids=["clean", "with-a-bad-line"])
def test_load_arrow_imports_neither_pandas_nor_datasets(tmp_path, block_parser, bad_line):
    """pyarrow imports pandas (about half a second) when it converts Python objects
    (``pa.array``, ``pa.repeat``); a load builds its arrays from buffers instead, on every
    path: native, pure Python, and the reference reader's fallback for a file with a bad row."""
    import subprocess
    import sys

    root = tmp_path / "data"
    synth.write_corpus(root, scale="sample")
    if bad_line:
        path = root / "helpful-base" / "test.jsonl.gz"
        lines = gzip.decompress(path.read_bytes()).splitlines()
        path.write_bytes(gzip.compress(b"\n".join([lines[0], b"{not json", *lines[1:]]) + b"\n"))
    env = {**os.environ, "HH_RLHF_NATIVE": "1" if block_parser == "native" else "0"}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(hhrlhf.__file__).parents[1])])
    out = subprocess.run(
        [sys.executable, "-c", _IMPORTS_AFTER, str(root)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert out.stdout.strip() == "[]", out.stderr


# --------------------------------------------------------------------------- Unicode classes

#: Text of every Unicode class the loaders meet, each put after ASCII runs of every length
#: mod 16 so that it falls at every place of the 16-byte vector loops.
UNICODE = {
    "latin": "café naïve Ærø",
    "curly": "\u201cquoted\u201d \u2018so\u2019 \u2014 dash \u2026",
    "cjk": "中文 日本語 한국어",
    "rtl": "שלום مرحبا",
    "astral": "🙂 𝄞 \U0001f600 🇫🇷",
    "zwj": "👩\u200d💻 family 👨\u200d👩\u200d👧",
    "combining": "e\u0301 a\u0308 \u0915\u094d\u0937 Z\u0351\u0356",
    "separators": "line\u2028para\u2029end \u0085 nbsp\u00a0",
    "bom": "\ufeffstarts with a BOM, \ufeff inside",
    "controls": "nul \x00 bell \x07 tab \t del \x7f",
    "nonchars": "\ufffd \uffff \U0010ffff",
}


def _unicode_rows() -> list[dict]:
    rows = []
    for k in range(17):
        for name, text in UNICODE.items():
            pad = "a" * k
            prompt = f"\n\nHuman: {pad}{text} {name}?\n\nAssistant:"
            rows.append(
                {
                    "chosen": f"{prompt} {pad}{text} yes"
                    + (f"\n\nHuman: {text}" if k == 3 else ""),
                    "rejected": f"{prompt} {text}{pad} no",
                }
            )
    rows.append({"chosen": f"{UNICODE['bom']}\n\nAssistant: x", "rejected": "\ufeff no marker"})
    return rows


@pytest.mark.parametrize("escaped", [False, True], ids=["raw-utf8", "ascii-escapes"])
def test_every_unicode_class_loads_exactly(tmp_path, escaped):
    """Raw UTF-8 and ``\\u`` escapes (surrogate pairs for astral characters): the records and
    the Arrow columns are the reference reader's, string for string."""
    import json

    rows = _unicode_rows()
    body = b"".join(json.dumps(r, ensure_ascii=escaped).encode() + b"\n" for r in rows)
    if escaped:
        assert b"\\ud83d\\ude42" in body and b"\\u2028" in body and b"\\ufeff" in body
    path = tmp_path / "u.jsonl.gz"
    path.write_bytes(gzip.compress(body))
    jobs = [(path, "helpful-base", "train")]
    expected = list(read_pairs(path, subset="helpful-base", split="train"))
    assert [(p.chosen, p.rejected) for p in expected] == [
        (r["chosen"], r["rejected"]) for r in rows
    ]
    (records,) = fastload.load_files(jobs)
    assert [(p.chosen, p.rejected, p.prompt_end, p.index) for p in records] == [
        (p.chosen, p.rejected, p.prompt_end, p.index) for p in expected
    ]
    for columns in ("dpo", "raw"):
        _assert_tables(load_files_arrow(jobs, columns=columns), _expected(jobs, columns), columns)


#: Bytes no UTF-8 decoder may accept: overlong forms, UTF-16 surrogates, beyond U+10FFFF,
#: a lone continuation byte, bytes that never occur, a sequence cut short.
INVALID_UTF8 = {
    "overlong-2": b"\xc0\x80",
    "overlong-3": b"\xe0\x80\xaf",
    "overlong-4": b"\xf0\x80\x80\xaf",
    "surrogate": b"\xed\xa0\x80",
    "surrogate-pair-as-utf8": b"\xed\xa0\xbd\xed\xb8\x82",
    "beyond-10ffff": b"\xf4\x90\x80\x80",
    "continuation": b"\x80",
    "ff": b"\xff",
    "cut-sequence": b"\xe2\x80",
}


@pytest.mark.parametrize("bad", list(INVALID_UTF8.values()), ids=list(INVALID_UTF8))
@pytest.mark.parametrize("pad", [0, 15, 16, 33])
def test_invalid_utf8_is_the_reference_error_never_a_string(tmp_path, bad, pad):
    good = [orjson.dumps(r) for r in _unicode_rows()[:20]]
    broken = good[7].replace(b"yes", b"y" * pad + bad + b"es", 1)
    path = tmp_path / "bad.jsonl.gz"
    path.write_bytes(gzip.compress(b"\n".join([*good[:7], broken, *good[8:]]) + b"\n"))
    jobs = [(path, "harmless-base", "test")]
    with pytest.raises(DataFormatError) as ref_err:
        _expected(jobs)
    assert ref_err.value.line == 8
    for load in (fastload.load_files, load_files_arrow):
        with pytest.raises(DataFormatError) as err:
            load(jobs)
        assert str(err.value) == str(ref_err.value) and str(path) in str(err.value)
    ref_skipped, skipped = [], []
    expected = _expected(jobs, lenient=Lenient(ref_skipped))
    tables = load_files_arrow(jobs, lenient=Lenient(skipped))
    assert skipped == ref_skipped and [s.line for s in skipped] == [8]
    _assert_tables(tables, expected)


@pytest.mark.parametrize("cut", [1, 2, 3])
def test_a_file_cut_inside_a_character_is_the_reference_error(tmp_path, cut):
    """A download cut short inside a 4-byte character: a clear error naming the file and its
    last line, from every loader, never a shortened or replaced string."""
    rows = [orjson.dumps(r) for r in _unicode_rows()[:5]]
    last = orjson.dumps({"chosen": "\n\nHuman: hi\n\nAssistant: 🙂", "rejected": "x"})
    body = b"\n".join([*rows, last])
    body = body[: body.rindex("🙂".encode()) + cut]
    path = tmp_path / "cut.jsonl"
    path.write_bytes(body)
    jobs = [(path, "harmless-base", "test")]
    with pytest.raises(DataFormatError) as ref_err:
        _expected(jobs)
    assert ref_err.value.line == 6
    for load in (fastload.load_files, load_files_arrow):
        with pytest.raises(DataFormatError) as err:
            load(jobs)
        assert str(err.value) == str(ref_err.value)


# --------------------------------------------------------------------------- threads


@pytest.mark.parametrize("threads", ["1", "3", "8"])
def test_files_loaded_in_threads_are_the_serial_results(tmp_path, monkeypatch, threads):
    """Files may be loaded in parallel threads (``HH_RLHF_THREADS``); results, the first error
    and lenient reports stay in file order, as one file after the other gives them."""
    monkeypatch.setenv("HH_RLHF_THREADS", threads)
    assert fastload.threads(5) == min(int(threads), 5)
    jobs = []
    for k in range(5):
        path = tmp_path / f"{k}.jsonl.gz"
        rows = list(synth.generate_pairs(300 + 50 * k, seed=k, quirks=HEAVY))
        body = b"".join(orjson.dumps(r) + b"\n" for r in rows)
        if k in (1, 3):  # a bad line in two files: the first one in file order is the error
            body = body.replace(b"\n", b"\n{bad\n", 1 + k)
        path.write_bytes(gzip.compress(body))
        jobs.append((path, "helpful-base", f"s{k}"))
    with pytest.raises(DataFormatError) as ref_err:
        _expected(jobs)
    for load in (fastload.load_files, load_files_arrow):
        with pytest.raises(DataFormatError) as err:
            load(jobs)
        assert str(err.value) == str(ref_err.value) and "1.jsonl.gz" in str(err.value)
    ref_skipped, skipped, rec_skipped = [], [], []
    expected = _expected(jobs, lenient=Lenient(ref_skipped))
    _assert_tables(load_files_arrow(jobs, lenient=Lenient(skipped)), expected)
    records = fastload.load_files(jobs, lenient=Lenient(rec_skipped))
    assert [_rows(r) for r in records] == expected
    assert skipped == rec_skipped == ref_skipped and len(ref_skipped) == 6


def test_thread_count(monkeypatch):
    monkeypatch.delenv("HH_RLHF_THREADS", raising=False)
    monkeypatch.setattr(fastload.files, "usable_cores", lambda: 6)
    assert fastload.threads(100) == 6  # one per core by default
    assert fastload.threads(4) == 4 and fastload.threads(1) == 1  # at most one per file
    for value, want in (("1", 1), ("4", 4), ("0", 6), ("x", 6), (" 3 ", 3)):  # 0: the default
        monkeypatch.setenv("HH_RLHF_THREADS", value)
        assert fastload.threads(100) == want


def test_threads_take_the_largest_files_first_and_answer_in_file_order(tmp_path):
    """Upstream's order puts the largest file last, where one thread would read it alone
    while the others wait: files are started largest first, results stay in file order."""
    from concurrent.futures import ThreadPoolExecutor

    jobs = []
    for k, size in enumerate((10, 300, 20, 5000, 1)):
        path = tmp_path / f"{k}.bin"
        path.write_bytes(b"x" * size)
        jobs.append((str(path), None, None))
    jobs.append((str(tmp_path / "missing.bin"), None, None))  # no size: started last
    started: list[int] = []

    def work(job):
        started.append(int(Path(job[0]).stem) if "missing" not in job[0] else -1)
        return job[0]

    with ThreadPoolExecutor(1) as pool:
        results = [f.result() for f in fastload.files._submit_files(pool, work, jobs)]
    assert started == [3, 1, 2, 0, 4, -1]
    assert results == [job[0] for job in jobs]
