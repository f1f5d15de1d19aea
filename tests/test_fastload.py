"""The fast loader gives exactly the reference reader's records, errors and lenient reports.

Every test here runs twice: with the native block parser (``hhrlhf._jsonl``) and with the
pure-Python one, so both are held to the reference reader. The C parser's own edge cases
(escapes, surrogates, invalid UTF-8, fuzzed lines) are in ``tests/test_native.py``.
"""

from __future__ import annotations

import gc
import gzip
import os
import shutil
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hhrlhf
from hhrlhf import fastload
from hhrlhf.errors import DataFormatError, TruncatedStreamError
from hhrlhf.fastload import Fallback, load_files, parse_jsonl
from hhrlhf.reader import Lenient, read_pairs
from hhrlhf.records import PreferencePair
from hhrlhf.testing import synth
from hhrlhf.transcript import align_pair, prompt_length

DATA = Path(__file__).parent / "data"
BAD = sorted(p for p in (DATA / "bad").glob("*.json*") if p.name != "expected.json")


@pytest.fixture(autouse=True, params=["native", "python"])
def block_parser(request, monkeypatch):
    """Run the test with one block parser; both must give the reference's results."""
    native = request.param == "native"
    if native and fastload.parse._jsonl is None:
        pytest.skip("the native block parser is not built (tests/test_native.py says why)")
    monkeypatch.setattr(fastload.parse, "NATIVE", native)
    return request.param


def _key(p: PreferencePair):
    return (p.chosen, p.rejected, p.subset, p.split, p.index, p.prompt_end)


def _reference(jobs, **kw):
    return [list(read_pairs(path, subset=s, split=sp, **kw)) for path, s, sp in jobs]


def _fast_only(jobs):
    """The fast parser alone (no fallback), to prove the tests exercise it."""
    out = []
    for path, subset, split in jobs:
        data = Path(path).read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        out.append(parse_jsonl(data, subset=subset, split=split))
    return out


def _assert_same(fast, ref):
    assert [len(x) for x in fast] == [len(x) for x in ref]
    for f_list, r_list in zip(fast, ref, strict=True):
        assert [_key(p) for p in f_list] == [_key(p) for p in r_list]


# --------------------------------------------------------------------------- alignment

#: Every quirk at a high rate, so a few thousand pairs hold each many times.
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


def test_prompt_length_equals_the_turn_walk_on_every_quirk():
    pairs = list(synth.generate_pairs(3000, seed=7, quirks=HEAVY))
    for p in pairs:
        c, r = p["chosen"], p["rejected"]
        assert prompt_length(c, r) == align_pair(c, r).prompt_end, (c, r)
    # the quirks that defeat shortcuts are really there
    ends = [prompt_length(p["chosen"], p["rejected"]) for p in pairs]
    assert ends.count(0) > 10
    assert sum("\n\nHuman:" in p["chosen"][e:] for p, e in zip(pairs, ends, strict=True)) > 10


PIECES = [
    "\n\nHuman:",
    "\n\nAssistant:",
    "\n",
    "\n\n",
    " Human:",
    "Assistant:",
    " hi",
    "x",
    "é",
    "🙂",
]
texts = st.lists(st.sampled_from(PIECES), max_size=12).map("".join)


@settings(max_examples=400, deadline=None)
@given(prefix=texts, a=texts, b=texts)
def test_prompt_length_property(prefix, a, b):
    """Pairs that share a prefix and diverge anywhere, including inside markers."""
    for c, r in ((prefix + a, prefix + b), (prefix + a, prefix + a), (a, b)):
        assert prompt_length(c, r) == align_pair(c, r).prompt_end


def test_prompt_length_hand_examples():
    prompt = "\n\nHuman: hi\n\nAssistant:"
    assert prompt_length(prompt + " yes", prompt + " no") == len(prompt)
    # a response holding a newline or a marker leaves the first fast test to the others
    assert prompt_length(prompt + " a\nb", prompt + " no") == len(prompt)
    assert prompt_length(prompt + " a\n\nHuman: more", prompt + " no") == len(prompt)
    # the last assistant marker differs in position: only the shared turns count
    two = prompt + " ok\n\nHuman: and?\n\nAssistant:"
    assert prompt_length(two + " x", prompt + " ok then") == len(prompt)
    assert prompt_length("no markers", "no markers at all") == 0


# --------------------------------------------------------------------------- whole files


def _jobs(root: Path):
    return [
        (root / spec.path, spec.subset, spec.split)
        for name in synth.PREFERENCE_SUBSETS
        for spec in hhrlhf.SUBSETS[name].files
    ]


def test_sample_corpus_identical(tmp_path):
    synth.write_corpus(tmp_path, scale="sample", seed=3)
    jobs = _jobs(tmp_path)
    ref = _reference(jobs)
    _assert_same(load_files(jobs), ref)
    _assert_same(_fast_only(jobs), ref)


def test_heavy_quirk_files_identical(tmp_path):
    jobs = []
    for k, (subset, split) in enumerate([("helpful-base", "train"), ("harmless-base", "test")]):
        path = tmp_path / f"{k}.jsonl.gz"
        synth.write_jsonl_gz(path, synth.generate_pairs(1500, seed=k, quirks=HEAVY), fast=k == 1)
        jobs.append((path, subset, split))
    fast = load_files(jobs)
    _assert_same(fast, _reference(jobs))
    _assert_same(_fast_only(jobs), fast)
    assert sum(map(len, fast)) == 3000
    for p in fast[0]:
        assert p.prompt + p.chosen_response == p.chosen
        assert p.prompt + p.rejected_response == p.rejected


def test_records_equal_constructed_ones(tmp_path):
    path = tmp_path / "p.jsonl"
    pair_json = {
        "chosen": "\n\nHuman: a\n\nAssistant: b",
        "rejected": "\n\nHuman: a\n\nAssistant: c",
    }
    path.write_bytes(orjson.dumps(pair_json) + b"\n")
    (pair,) = parse_jsonl(path.read_bytes(), subset="harmless-base", split="test")
    expected = PreferencePair(
        "\n\nHuman: a\n\nAssistant: b", "\n\nHuman: a\n\nAssistant: c", "harmless-base", "test", 0
    )
    assert pair == expected and hash(pair) == hash(expected) and repr(pair) == repr(expected)
    assert pair.prompt_end == expected.prompt_end == len("\n\nHuman: a\n\nAssistant:")
    with pytest.raises(AttributeError):
        pair.chosen = "x"  # still frozen


LINE = (
    b'{"chosen": "\\n\\nHuman: q\\n\\nAssistant: a", '
    b'"rejected": "\\n\\nHuman: q\\n\\nAssistant: b"}'
)


@pytest.mark.parametrize(
    "body",
    [
        LINE + b"\n" + LINE,  # no final newline
        LINE + b"\r\n" + LINE + b"\r\n",  # CRLF
        b"\n" + LINE + b"\n\n  \n" + LINE + b"\n\n",  # blank lines: skipped, still counted
        b'{"chosen": "x", "rejected": "y", "extra": 1}\n' + LINE + b"\n",  # extra key
        b'{"rejected": "y", "chosen": "x"}\n',  # other key order
        b'{"chosen": "a", "chosen": "b", "rejected": "c"}\n',  # duplicate key
    ],
    ids=["no-final-newline", "crlf", "blank-lines", "extra-key", "key-order", "duplicate-key"],
)
@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_unusual_but_valid_files(tmp_path, body, gz):
    path = tmp_path / ("f.jsonl.gz" if gz else "f.jsonl")
    path.write_bytes(gzip.compress(body) if gz else body)
    jobs = [(path, "helpful-base", "train")]
    ref = _reference(jobs)
    _assert_same(load_files(jobs), ref)
    _assert_same(_fast_only(jobs), ref)


def test_multi_member_gzip_and_trailing_bytes(tmp_path):
    two = tmp_path / "two.jsonl.gz"
    two.write_bytes(gzip.compress(LINE + b"\n") + gzip.compress(LINE + b"\n"))
    jobs = [(two, None, None)]
    fast = load_files(jobs)
    _assert_same(fast, _reference(jobs))
    assert [p.index for p in fast[0]] == [0, 1]
    junk = tmp_path / "junk.jsonl.gz"
    junk.write_bytes(gzip.compress(LINE + b"\n") + b"garbage")
    with pytest.raises(DataFormatError) as ref_err:
        _reference([(junk, None, None)])
    with pytest.raises(DataFormatError) as fast_err:
        load_files([(junk, None, None)])
    assert str(fast_err.value) == str(ref_err.value)


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.name)
def test_bad_files_raise_the_reference_error(path):
    jobs = [(path, "harmless-base", "test")]
    with pytest.raises(DataFormatError) as ref_err:
        _reference(jobs)
    with pytest.raises(DataFormatError) as fast_err:
        load_files(jobs)
    assert str(fast_err.value) == str(ref_err.value)
    assert (fast_err.value.path, fast_err.value.line) == (ref_err.value.path, ref_err.value.line)


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.name)
def test_bad_files_lenient_reports_are_the_reference_ones(path):
    jobs = [(path, "harmless-base", "test")]
    ref_skipped, fast_skipped = [], []
    try:
        ref = _reference(jobs, lenient=True, skipped=ref_skipped)
    except DataFormatError as exc:  # whole-file problems stay errors when lenient
        with pytest.raises(DataFormatError) as fast_err:
            load_files(jobs, lenient=Lenient(fast_skipped))
        assert str(fast_err.value) == str(exc) and fast_skipped == ref_skipped
        return
    fast = load_files(jobs, lenient=Lenient(fast_skipped))
    _assert_same(fast, ref)
    assert fast_skipped == ref_skipped


def test_several_files_keep_file_order_for_errors_and_reports(tmp_path):
    """With several files, the first error and the lenient reports follow the job order."""
    big_bad = tmp_path / "a.jsonl"
    big_bad.write_bytes((LINE + b"\n") * 50 + b"{not json\n" + (LINE + b"\n") * 5)
    small_bad = tmp_path / "b.jsonl"
    small_bad.write_bytes(b'{"chosen": 1, "rejected": "x"}\n' + LINE + b"\n")
    good = tmp_path / "c.jsonl.gz"
    good.write_bytes(gzip.compress((LINE + b"\n") * 3))
    jobs = [(big_bad, "helpful-base", "train"), (good, None, "test"), (small_bad, None, None)]
    with pytest.raises(DataFormatError) as err:
        load_files(jobs)
    assert err.value.path == str(big_bad) and err.value.line == 51
    ref_skipped, fast_skipped = [], []
    ref = _reference(jobs, lenient=True, skipped=ref_skipped)
    fast = load_files(jobs, lenient=Lenient(fast_skipped))
    _assert_same(fast, ref)
    assert fast_skipped == ref_skipped and [s.path for s in fast_skipped] == [
        str(big_bad),
        str(small_bad),
    ]


def test_truncated_gzip_falls_back_to_the_reference_error(tmp_path):
    data = gzip.compress(
        b"".join(orjson.dumps(p) + b"\n" for p in synth.generate_pairs(200, seed=1))
    )
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(DataFormatError) as ref_err:
        _reference([(cut, None, None)])
    with pytest.raises(DataFormatError) as fast_err:
        load_files([(cut, None, None)])
    assert str(fast_err.value) == str(ref_err.value)
    assert isinstance(fast_err.value, TruncatedStreamError)
    # lenient too: a broken stream is lost data, never a skipped row
    with pytest.raises(TruncatedStreamError) as fast_err:
        load_files([(cut, None, None)], lenient=Lenient())
    assert str(fast_err.value) == str(ref_err.value)


@pytest.mark.parametrize("name", ["crc_mismatch.jsonl.gz", "flipped_byte.jsonl.gz"])
def test_crc_error_is_named_not_parsed_as_rows(name):
    """Garbage decompressed before the CRC check at the end is not reported as bad rows."""
    path = DATA / "bad" / name
    for lenient in (False, True):
        with pytest.raises(TruncatedStreamError, match="CRC check failed") as err:
            load_files([(path, "harmless-base", "test")], lenient=Lenient.of(lenient))
        assert err.value.kind == "crc" and "missing key" not in str(err.value)


def test_parse_jsonl_refuses_what_it_does_not_vouch_for():
    for body in (
        b"",
        b"\n \n",
        b"[1, 2]\n",
        b'{"chosen": "a"}\n',
        b"{bad\n",
        b'{"chosen": "a", "rejected": 2}\n',
    ):
        with pytest.raises(Fallback):
            parse_jsonl(body)


def test_missing_file_error_is_the_reference_one(tmp_path):
    jobs = [(tmp_path / "nope.jsonl.gz", None, None)]
    with pytest.raises(Exception) as ref_err:
        _reference(jobs)
    with pytest.raises(type(ref_err.value)) as fast_err:
        load_files(jobs)
    assert str(fast_err.value) == str(ref_err.value)


@pytest.mark.parametrize("enabled", [True, False])
def test_garbage_collector_state_is_restored(tmp_path, enabled):
    path = tmp_path / "p.jsonl"
    path.write_bytes(LINE + b"\n")
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        load_files([(path, None, None)])
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()


# --------------------------------------------------------------------------- public API


def test_load_dataset_fast_and_reference_agree_on_the_sample():
    fast = hhrlhf.load_dataset(data="sample")
    slow = hhrlhf.load_dataset(data="sample", fast=False)
    assert set(fast) == set(slow) == {"train", "test"}
    for split in fast:
        assert isinstance(fast[split], hhrlhf.RecordList)
        assert [_key(p) for p in fast[split]] == [_key(p) for p in slow[split]]
    one = hhrlhf.load_dataset("harmless-base", split="test", data="sample")
    assert [_key(p) for p in one] == [
        _key(p) for p in hhrlhf.iter_pairs("harmless-base", split="test", data="sample")
    ]
    assert isinstance(one, hhrlhf.RecordList)
    several = hhrlhf.load_pairs(["helpful-base", "harmless-base"], split="train", data="sample")
    assert [_key(p) for p in several] == [
        _key(p)
        for p in hhrlhf.iter_pairs(["helpful-base", "harmless-base"], split="train", data="sample")
    ]


def test_load_dataset_lenient_report_matches(tmp_path):
    root = tmp_path / "hh"
    synth.write_corpus(root, scale="sample", seed=5)
    bad = root / "helpful-online" / "test.jsonl.gz"
    lines = gzip.decompress(bad.read_bytes()).split(b"\n")
    lines[4] = b'{"chosen": "x"}'
    bad.write_bytes(gzip.compress(b"\n".join(lines)))
    skipped_fast, skipped_slow = [], []
    fast = hhrlhf.load_dataset(data=root, lenient=True, skipped=skipped_fast)
    slow = hhrlhf.load_dataset(data=root, lenient=True, skipped=skipped_slow, fast=False)
    assert skipped_fast == skipped_slow and [s.line for s in skipped_fast] == [5]
    for split in ("train", "test"):
        assert [_key(p) for p in fast[split]] == [_key(p) for p in slow[split]]
    with pytest.raises(DataFormatError, match="line 5"):
        hhrlhf.load_dataset(data=root)


REAL = os.environ.get("HH_RLHF_REAL")
REAL_FILE = Path(REAL or "/nonexistent") / "harmless-base" / "test.jsonl.gz"


@pytest.mark.skipif(
    not REAL_FILE.is_file(),
    reason="set HH_RLHF_REAL to a folder holding the real harmless-base/test.jsonl.gz",
)
def test_real_file_identical(tmp_path):
    jobs = [(REAL_FILE, "harmless-base", "test")]
    fast = load_files(jobs)
    _assert_same(fast, _reference(jobs))
    _assert_same(_fast_only(jobs), fast)
    assert len(fast[0]) == 2312
    # and the same bytes as a plain (not gzipped) file
    plain = tmp_path / "test.jsonl"
    with gzip.open(REAL_FILE, "rb") as src, plain.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    _assert_same(load_files([(plain, "harmless-base", "test")]), fast)


@pytest.mark.parametrize("block", [1, 7, 100, 4096])
def test_lines_cut_across_blocks(tmp_path, block):
    """The stream is parsed in blocks: a line split between blocks is joined back."""
    rows = list(synth.generate_pairs(40, seed=11, quirks=HEAVY))
    body = b"".join(
        orjson.dumps(r) + (b"\r\n" if i % 5 == 0 else b"\n") for i, r in enumerate(rows)
    )
    body = body.replace(b"\n", b"\n\n", 3)  # a few blank lines as well
    path = tmp_path / "p.jsonl"
    path.write_bytes(body)
    ref = _reference([(path, "helpful-online", "test")])
    _assert_same([parse_jsonl(body, subset="helpful-online", split="test", block=block)], ref)
    assert len(ref[0]) == 40 and ref[0][-1].index > 40


# --------------------------------------------------------------------------- garbage collector


def test_loaded_pairs_are_untracked_by_the_garbage_collector(tmp_path):
    """Pairs hold only atomic values: the collector need not walk them, whichever path
    built them (block parser, reference reader, lenient fallback)."""
    synth.write_corpus(tmp_path, scale="sample", seed=3)
    jobs = _jobs(tmp_path)
    loaded = [p for pairs in load_files(jobs) for p in pairs]
    assert loaded and not any(map(gc.is_tracked, loaded))
    streamed = [p for pairs in _reference(jobs) for p in pairs]
    assert not any(map(gc.is_tracked, streamed))
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(LINE + b"\n{not json\n" + LINE + b"\n")
    lenient = load_files([(bad, None, None)], lenient=Lenient())[0]
    assert len(lenient) == 2 and not any(map(gc.is_tracked, lenient))


# --------------------------------------------------------------------------- linear worst cases


def _best(fn, runs: int = 3) -> float:
    import time

    best = float("inf")
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def _floor(path: Path) -> float:
    """gzip + orjson per non-blank line, keeping both strings."""

    def run():
        keep = []
        with gzip.open(path, "rb") as f:
            for line in f:
                if line.strip():
                    obj = orjson.loads(line)
                    keep.append((obj["chosen"], obj["rejected"]))

    return _best(run)


def _budget(path: Path, monkeypatch, factor: float):
    """Loading ``path`` (records and Arrow) costs at most ``factor`` times the floor on
    the same bytes: proportional to the size, whatever the shape. Small blocks (4 KiB) make
    a cost quadratic in the blocks a line spans show at a few megabytes (joining a 6 MB
    line block by block costs over 10x the floor there; the loader about 2x)."""
    monkeypatch.setattr(fastload.parse, "BLOCK", 4096)
    floor = _floor(path)
    jobs = [(path, "harmless-base", "test")]
    records = _best(lambda: load_files(jobs))
    assert records <= factor * floor + 0.05, (records, floor)
    if fastload.parse._jsonl is not None or not fastload.parse.NATIVE:
        pytest.importorskip("pyarrow")
        arrow = _best(lambda: fastload.load_files_arrow(jobs))
        assert arrow <= factor * floor + 0.05, (arrow, floor)


def test_linear_one_long_line(tmp_path, monkeypatch):
    """One 6 MB line (the issue's 50 MB line, scaled down): 750 blocks of 8 KiB."""
    text = "\n\nHuman: " + "word é " * 430_000 + "\n\nAssistant:"
    path = tmp_path / "long.jsonl.gz"
    path.write_bytes(gzip.compress(orjson.dumps({"chosen": text + " a", "rejected": text + " b"})))
    _budget(path, monkeypatch, 5.0)
    (pair,) = load_files([(path, None, None)])[0]
    assert pair.prompt == text


def test_linear_many_turns_in_one_transcript(tmp_path, monkeypatch):
    """100,000 turns, and a response holding a marker so the turn walk runs."""
    turns = "".join(f"\n\nHuman: q{k}\n\nAssistant: a{k}" for k in range(50_000))
    chosen = turns + "\n\nHuman: last\n\nAssistant: x\n\nHuman: more"
    rejected = turns + "\n\nHuman: last\n\nAssistant: y"
    path = tmp_path / "turns.jsonl.gz"
    path.write_bytes(gzip.compress(orjson.dumps({"chosen": chosen, "rejected": rejected})))
    # the turn walk is a Python step per turn (about 10x the floor's cost per byte here);
    # a walk quadratic in the turns would cost thousands of times the floor
    _budget(path, monkeypatch, 30.0)
    (pair,) = load_files([(path, None, None)])[0]
    assert pair.prompt == turns + "\n\nHuman: last\n\nAssistant:"


def test_linear_one_character_lines(tmp_path, monkeypatch):
    """Half a million one-character (blank) lines around one pair."""
    body = b"\n" * 250_000 + b" \n" * 125_000 + LINE + b"\n" + b"\t\n" * 125_000
    path = tmp_path / "short.jsonl.gz"
    path.write_bytes(gzip.compress(body))
    _budget(path, monkeypatch, 4.0)
    (pair,) = load_files([(path, None, None)])[0]
    assert pair.index == 375_000


# --------------------------------------------------------------------------- streaming


def _run(gen):
    """Everything a stream yields, then the error it ends with (or None)."""
    got = []
    try:
        for p in gen:
            got.append(_key(p))
    except DataFormatError as exc:
        return got, (str(exc), exc.path, exc.line)
    return got, None


def _same_stream(path, monkeypatch, **kw):
    """iter_file yields, raises and reports what read_pairs does, strict and lenient."""
    monkeypatch.setattr(fastload.parse, "BLOCK", 4096)  # many blocks before a problem
    strict = None
    for lenient in (False, True):
        ref_skipped, fast_skipped = [], []
        ref = _run(read_pairs(path, lenient=lenient, skipped=ref_skipped, **kw))
        fast = _run(fastload.iter_file(path, lenient=Lenient.of(lenient, fast_skipped), **kw))
        assert fast == ref
        assert fast_skipped == ref_skipped
        strict = strict or ref
    return strict  # what the strict reader yielded and raised


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.name)
def test_stream_bad_files_like_the_reference(path, monkeypatch):
    _same_stream(path, monkeypatch, subset="harmless-base", split="test")


@pytest.mark.parametrize("where", [1, 300, 999, 1000])
def test_stream_problem_after_many_blocks(tmp_path, monkeypatch, where):
    """A bad line, a mistyped value and a cut-off end deep in a file: the pairs before it
    come from the block parser, the rest and the error from the reference reader."""
    rows = [orjson.dumps(r) for r in synth.generate_pairs(1000, seed=2, quirks=HEAVY)]
    for bad in (b"{not json", b'{"chosen": 1, "rejected": "x"}', b""):
        lines = list(rows)
        if bad:
            lines.insert(where - 1, bad)
        body = b"\n".join(lines) + b"\n"
        path = tmp_path / "s.jsonl"
        path.write_bytes(body if bad else body[: len(body) * where // 1000 - 1])
        got, err = _same_stream(path, monkeypatch, subset="s", split="train")
        assert err is not None or not bad or len(got) == 1000


@pytest.mark.parametrize("cut", [0.2, 0.6, 0.95])
def test_stream_truncated_gzip_like_the_reference(tmp_path, monkeypatch, cut):
    rows = synth.generate_pairs(3000, seed=5)
    body = b"".join(orjson.dumps(r) + b"\n" for r in rows)
    data = gzip.compress(body)
    path = tmp_path / "t.jsonl.gz"
    path.write_bytes(data[: int(len(data) * cut)])
    got, err = _same_stream(path, monkeypatch)
    assert err is not None and len(got) > 0


def test_iter_pairs_fast_and_reference_agree(tmp_path):
    fast = [_key(p) for p in hhrlhf.iter_pairs(data="sample")]
    slow = [_key(p) for p in hhrlhf.iter_pairs(data="sample", fast=False)]
    assert fast == slow and len(fast) == 320


def _long_line_gz(path: Path, long_bytes: int) -> None:
    """A gzip file of three pairs whose second line is ``long_bytes`` long (compresses to KB)."""
    pair = {"chosen": "\n\nHuman: hi\n\nAssistant: a", "rejected": "\n\nHuman: hi\n\nAssistant: b"}
    line = orjson.dumps(pair)
    pad = long_bytes - len(line) - len(b', "note": ""')
    long = line[:-1] + b', "note": "' + b"x" * pad + b'"}'
    assert len(long) == long_bytes
    with gzip.open(path, "wb") as f:
        f.write(line + b"\n" + long + b"\n" + line + b"\n")


@pytest.mark.parametrize("extra", [1, 3 << 20])
def test_a_line_past_the_limit_is_one_error_naming_it_on_both_paths(tmp_path, monkeypatch, extra):
    """HH_MAX_LINE_BYTES (here 1 MiB): a longer line is one error naming the file and line,
    from the reference reader, the fast loader (both block parsers) and the CLI; a line of
    exactly the limit is read."""
    from click.testing import CliRunner

    from hhrlhf.cli import cli

    limit = 1 << 20
    monkeypatch.setenv("HH_MAX_LINE_BYTES", str(limit))
    data = tmp_path / "data" / "helpful-base"
    data.mkdir(parents=True)
    path = data / "test.jsonl.gz"
    _long_line_gz(path, limit + extra)
    message = f"{path}, line 2: line longer than 1,048,576 bytes, the most a line may hold"
    with pytest.raises(DataFormatError, match="line 2: line longer than 1,048,576 bytes"):
        list(read_pairs(path))
    with pytest.raises(DataFormatError, match="line 2: line longer than 1,048,576 bytes"):
        load_files([(path, "helpful-base", "test")])
    with pytest.raises(DataFormatError, match="line 2: line longer than 1,048,576 bytes"):
        list(fastload.iter_file(path))
    r = CliRunner().invoke(cli, ["stats", "--data", str(tmp_path / "data")])
    assert r.exit_code == 1 and r.stderr.startswith(f"error: {message}"), r.output
    _long_line_gz(path, limit)  # at the limit: read by both
    assert len(list(read_pairs(path))) == 3
    assert len(load_files([(path, "helpful-base", "test")])[0]) == 3


def test_a_long_line_is_not_read_past_the_limit(tmp_path, monkeypatch):
    """A 64 MiB line under a 1 MiB limit: the reader holds about the limit, not the line."""
    import tracemalloc

    monkeypatch.setenv("HH_MAX_LINE_BYTES", str(1 << 20))
    path = tmp_path / "long.jsonl.gz"
    _long_line_gz(path, 64 << 20)
    for read in (lambda: list(read_pairs(path)), lambda: list(fastload.iter_file(path))):
        tracemalloc.start()
        try:
            with pytest.raises(DataFormatError, match="line 2: line longer than"):
                read()
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 16 << 20, peak


@pytest.mark.parametrize("value", ["1000", "lots"])
def test_a_bad_line_limit_is_one_error(tmp_path, monkeypatch, value):
    monkeypatch.setenv("HH_MAX_LINE_BYTES", value)
    path = tmp_path / "one.jsonl"
    path.write_text('{"chosen": "\\n\\nHuman: a", "rejected": "\\n\\nHuman: b"}\n')
    for read in (lambda: list(read_pairs(path)), lambda: load_files([(path, None, None)])):
        with pytest.raises(hhrlhf.errors.HHError, match=f"HH_MAX_LINE_BYTES='{value}': expected"):
            read()
