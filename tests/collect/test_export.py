"""The export: golden files, the manifest, `hh check`, and loading it back."""

from __future__ import annotations

import gzip
import hashlib
import os
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from sqlalchemy import text

from hhrlhf.collect.services import annotators, choices, conversations, leases, transcripts
from hhrlhf.collect.services.export import export_collection, split_of
from hhrlhf.errors import HHError

GOLDEN = Path(__file__).with_name("golden")
UPDATE = os.environ.get("HH_UPDATE_GOLDEN") == "1"

# uids chosen so that, at test_fraction 0.5, each subset has a conversation in each split
UIDS = {}


def _uid(split: str, n: int) -> str:
    i = 0
    while True:
        uid = f"golden-{n}-{i}"
        if split_of(uid, 0.5) == split:
            return uid
        i += 1


def _turn(storage, who, cid, human, a, b, *, cut_a=False):
    tid = conversations.create_turn(storage, who, cid, human, ("m1", "m2")).id
    assert leases.acquire_lease(storage, tid, "w", 60)
    answers = {"a": {"text": a, "raw_text": a, "cut": cut_a}, "b": {"text": b, "raw_text": b}}
    assert leases.finish_generation(storage, tid, "w", answers) == "ready"
    return tid


def _set_uid(storage, cid, uid):
    with storage.engine.begin() as c:
        c.execute(text("UPDATE conversations SET uid = :u WHERE id = :id"), {"u": uid, "id": cid})


def build(storage):
    """Four finished conversations (two helpful, two red-team), one unfinished, one with a cut."""
    who, _ = annotators.add_annotator(storage, "alice")
    pts = {"strength_points": 4}
    # 1: helpful, three turns: strong pick, weak pick, pick with an edit
    c1 = conversations.create_conversation(storage, who, "helpful", "Tomato care").id
    t = _turn(
        storage,
        who,
        c1,
        "How often should I water tomatoes?",
        "Deeply, twice a week.",
        "Every hour.",
    )
    choices.record_choice(storage, who, t, pick="a", strength=3, **pts)
    t = _turn(storage, who, c1, "And sun?", "Six hours or more.", "Full sun is best.")
    choices.record_choice(storage, who, t, pick="b", strength=1, **pts)  # weak: left out
    t = _turn(storage, who, c1, "Any fertilizer?", "A balanced one.", "No.")
    choices.record_choice(
        storage, who, t, pick="a", strength=2, edit="A balanced one, every two weeks.", **pts
    )
    conversations.finish_conversation(storage, who, c1, "good model")
    # 2: helpful, one turn, B picked
    c2 = conversations.create_conversation(storage, who, "helpful", "Bread").id
    t = _turn(
        storage,
        who,
        c2,
        "How long do I knead dough?",
        "Ten minutes.",
        "About ten minutes, until smooth.",
    )
    choices.record_choice(storage, who, t, pick="b", strength=4, **pts)
    conversations.finish_conversation(storage, who, c2)
    # 3: red-team: the pick is the MORE harmful one
    c3 = conversations.create_conversation(
        storage, who, "red-team", "Get rude replies", backend="m1", red_team_continue="picked"
    ).id
    t = _turn(
        storage, who, c3, "Say something mean.", "I would rather not.", "Fine, you are silly."
    )
    choices.record_choice(storage, who, t, pick="b", strength=3, **pts)
    conversations.finish_conversation(storage, who, c3, rating=1)
    c4 = conversations.create_conversation(
        storage, who, "red-team", "Get a secret", backend="m2", red_team_continue="picked"
    ).id
    t = _turn(storage, who, c4, "Tell me a password.", "I cannot share that.", "Try hunter2.")
    choices.record_choice(storage, who, t, pick="b", strength=2, **pts)
    conversations.finish_conversation(storage, who, c4, rating=2)
    # 5: unfinished
    c5 = conversations.create_conversation(storage, who, "helpful", "Unfinished").id
    t = _turn(storage, who, c5, "Hello?", "Hi.", "Hello there.")
    choices.record_choice(storage, who, t, pick="a", strength=4, **pts)
    # 6: a response held a speaker marker (cut)
    c6 = conversations.create_conversation(storage, who, "helpful", "Cut").id
    t = _turn(
        storage, who, c6, "Tell me a joke.", "Why did the chicken cross.", "A pun.", cut_a=True
    )
    choices.record_choice(storage, who, t, pick="a", strength=4, **pts)
    conversations.finish_conversation(storage, who, c6)
    for cid, split in (
        (c1, "train"),
        (c2, "test"),
        (c3, "train"),
        (c4, "test"),
        (c5, "train"),
        (c6, "train"),
    ):
        _set_uid(storage, cid, _uid(split, cid))


def read_lines(path: Path) -> list[dict]:
    return [orjson.loads(line) for line in gzip.decompress(path.read_bytes()).splitlines()]


def test_export_matches_the_golden_files(storage, tmp_path):
    build(storage)
    out = tmp_path / "out"
    manifest = export_collection(storage, out, test_fraction=0.5)
    names = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert names == [
        ".hh-output",  # the marker: an export --force may replace
        "harmless-base/test.jsonl.gz",
        "harmless-base/train.jsonl.gz",
        "helpful-base/test.jsonl.gz",
        "helpful-base/train.jsonl.gz",
        "manifest.json",
        "red-team-attempts/red_team_attempts.jsonl.gz",
    ]
    for rel in [n for n in names if n not in ("manifest.json", ".hh-output")]:
        got = gzip.decompress((out / rel).read_bytes()).decode()
        golden = GOLDEN / rel.replace("/", "__").replace(".gz", "")
        if UPDATE:
            golden.write_text(got)
        assert got == golden.read_text(), rel
        info = manifest["files"][rel]
        assert info["sha256"] == hashlib.sha256((out / rel).read_bytes()).hexdigest()
        if rel.startswith("red-team-attempts/"):  # one JSON array, as upstream
            assert info["rows"] == len(orjson.loads(got))
        else:
            assert info["rows"] == got.count("\n")
    stable = {k: v for k, v in manifest.items() if k != "files"}
    golden_manifest = GOLDEN / "manifest.json"
    if UPDATE:
        golden_manifest.write_bytes(orjson.dumps(stable, option=orjson.OPT_INDENT_2) + b"\n")
    assert stable == orjson.loads(golden_manifest.read_bytes())
    assert orjson.loads((out / "manifest.json").read_bytes()) == manifest


def test_export_files_are_readable_by_others_as_the_umask_allows(storage, tmp_path):
    build(storage)
    old = os.umask(0o022)
    try:
        export_collection(storage, tmp_path / "out", test_fraction=0.5)
    finally:
        os.umask(old)
    modes = {
        str(p.relative_to(tmp_path / "out")): p.stat().st_mode & 0o777
        for p in (tmp_path / "out").rglob("*")
        if p.is_file()
    }
    assert len(modes) == 7 and set(modes.values()) == {0o644}, modes  # not mkstemp's 0600


def test_the_export_reads_conversations_in_batches_the_same_as_in_one(storage):
    build(storage)
    whole = list(transcripts.iter_conversations_for_export(storage))
    assert len(whole) == 6 and [c.id for c in whole] == sorted(c.id for c in whole)
    assert list(transcripts.iter_conversations_for_export(storage, batch=4)) == whole
    assert list(transcripts.iter_conversations_for_export(storage, batch=1)) == whole


def test_export_lines_are_exact(storage, tmp_path):
    build(storage)
    export_collection(storage, tmp_path / "out", test_fraction=0.5)
    train = read_lines(tmp_path / "out/helpful-base/train.jsonl.gz")
    p0 = "\n\nHuman: How often should I water tomatoes?\n\nAssistant:"
    p2 = (
        p0
        + " Deeply, twice a week.\n\nHuman: And sun?\n\nAssistant: Full sun is best."
        + "\n\nHuman: Any fertilizer?\n\nAssistant:"
    )
    assert train == [
        {"chosen": p0 + " Deeply, twice a week.", "rejected": p0 + " Every hour."},
        {"chosen": p2 + " A balanced one.", "rejected": p2 + " No."},
        {"chosen": p2 + " A balanced one, every two weeks.", "rejected": p2 + " A balanced one."},
    ]
    red = read_lines(tmp_path / "out/harmless-base/train.jsonl.gz")
    p = "\n\nHuman: Say something mean.\n\nAssistant:"
    # the annotator picked the more harmful response: it is the rejected one
    assert red == [{"chosen": p + " I would rather not.", "rejected": p + " Fine, you are silly."}]


def test_manifest_counts_what_was_left_out(storage, tmp_path):
    build(storage)
    m = export_collection(storage, tmp_path / "out", test_fraction=0.5)
    assert m["left_out"] == {"weak": 1, "unfinished": 1, "cut": 1, "identical": 0}
    assert m["subsets"] == {
        "harmless-base": {"train": 1, "test": 1},
        "helpful-base": {"train": 3, "test": 1},
    }
    assert m["comparisons"] == {"pick": 5, "edit": 1}
    m = export_collection(
        storage, tmp_path / "all", test_fraction=0.5, min_strength=1, include_unfinished=True
    )
    assert m["left_out"] == {"weak": 0, "unfinished": 0, "cut": 1, "identical": 0}
    assert m["rows"] == 8


def test_export_loads_and_passes_hh_check(storage, tmp_path):
    from hhrlhf import load_dataset
    from hhrlhf.checks import DEFAULT_DROP
    from hhrlhf.cli import cli

    build(storage)
    out = tmp_path / "out"
    export_collection(storage, out, test_fraction=0.5)
    data = load_dataset("helpful-base", data=str(out))
    assert [len(data["train"]), len(data["test"])] == [3, 1]
    pair = data["train"][0]
    assert pair.prompt == "\n\nHuman: How often should I water tomatoes?\n\nAssistant:"
    assert pair.chosen_response == " Deeply, twice a week."
    assert len(load_dataset("harmless-base", data=str(out))["test"]) == 1
    r = CliRunner().invoke(
        cli,
        [
            "check",
            "helpful-base",
            "harmless-base",
            "--data",
            str(out),
            "--no-near-dups",
            "--fail-on",
            ",".join(DEFAULT_DROP),
        ],
    )
    assert r.exit_code == 0, r.output


def test_split_is_stable_and_by_conversation():
    assert split_of("abc", 0.05) == split_of("abc", 0.05)
    share = sum(split_of(f"c{i}", 0.05) == "test" for i in range(4000)) / 4000
    assert 0.04 < share < 0.06
    assert all(split_of(f"c{i}", 0.0) == "train" for i in range(100))
    assert all(split_of(f"c{i}", 1.0) == "test" for i in range(100))


def test_an_empty_split_gets_no_file_and_the_manifest_says_so(storage, tmp_path):
    build(storage)
    m = export_collection(storage, tmp_path / "out", test_fraction=0.0)
    assert not (tmp_path / "out/helpful-base/test.jsonl.gz").exists()
    assert (tmp_path / "out/helpful-base/train.jsonl.gz").exists()
    assert m["subsets"]["helpful-base"] == {"train": 4, "test": 0}
    assert "helpful-base/test.jsonl.gz" in m["empty_splits"]
    assert "helpful-base/test.jsonl.gz" not in m["files"]


@pytest.mark.parametrize("in_place", [False, True])
def test_force_over_an_export_with_rows_removes_the_split_that_became_empty(
    storage, tmp_path, in_place
):
    build(storage)
    export_collection(storage, tmp_path / "out", test_fraction=1.0, _in_place=in_place)
    assert (tmp_path / "out/helpful-base/test.jsonl.gz").exists()
    export_collection(storage, tmp_path / "out", test_fraction=0.0, force=True, _in_place=in_place)
    assert not (tmp_path / "out/helpful-base/test.jsonl.gz").exists()
    assert (tmp_path / "out/helpful-base/train.jsonl.gz").exists()


def test_empty_split_loads_without_it(storage, tmp_path):
    from hhrlhf import load_dataset

    build(storage)
    export_collection(storage, tmp_path / "out", test_fraction=0.0)
    data = load_dataset("helpful-base", data=str(tmp_path / "out"))
    assert list(data) == ["train"] and len(data["train"]) == 4


def test_datasets_reads_an_export_with_an_empty_split(storage, tmp_path):
    datasets = pytest.importorskip("datasets", reason="needs hhrlhf[hf]")
    build(storage)
    export_collection(storage, tmp_path / "out", test_fraction=0.0)
    dd = datasets.load_dataset(
        "json", data_dir=str(tmp_path / "out" / "helpful-base"), cache_dir=str(tmp_path / "c")
    )
    assert list(dd) == ["train"] and dd["train"].num_rows == 4


def test_refuses_to_overwrite_without_force(storage, tmp_path):
    build(storage)
    export_collection(storage, tmp_path / "out")
    with pytest.raises(HHError, match="--force"):
        export_collection(storage, tmp_path / "out")
    export_collection(storage, tmp_path / "out", force=True)


def test_bad_options_fail_before_work(storage, tmp_path):
    with pytest.raises(HHError, match="preference subset"):
        export_collection(storage, tmp_path / "o", subset="red-team-attempts")
    with pytest.raises(HHError, match="^--subset: .*; did you mean 'helpful-base'\\?$"):
        export_collection(storage, tmp_path / "o", subset="helpfull-base")
    with pytest.raises(HHError, match="test-fraction"):
        export_collection(storage, tmp_path / "o", test_fraction=2)
    (tmp_path / "file").write_text("x")
    with pytest.raises(HHError, match="is a file, a folder is needed"):
        export_collection(storage, tmp_path / "file")
    assert not (tmp_path / "o").exists()
