"""Reading files: containers, streaming, every class of bad input, lenient mode."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from hhrlhf.errors import DataFormatError, TruncatedStreamError
from hhrlhf.reader import (
    SkippedRow,
    attempt_from_object,
    detect_container,
    read_attempts,
    read_objects,
    read_pairs,
)

DATA = Path(__file__).parent / "data"
BAD = json.loads((DATA / "bad" / "expected.json").read_text())
GOOD_PAIRS = sorted((DATA / "good").glob("pairs*"))


@pytest.mark.parametrize("path", GOOD_PAIRS, ids=lambda p: p.name)
def test_every_container_reads_the_same_pairs(path):
    pairs = list(read_pairs(path, subset="helpful-base", split="test"))
    reference = [json.loads(line) for line in (DATA / "good" / "pairs.jsonl").open()]
    assert [p.to_dict() for p in pairs] == reference
    assert all(p.subset == "helpful-base" and p.split == "test" for p in pairs)
    for p in pairs:
        assert p.prompt + p.chosen_response == p.chosen
        assert p.prompt + p.rejected_response == p.rejected


def test_index_is_the_row_position_and_blank_lines_hold_no_record():
    plain = [p.index for p in read_pairs(DATA / "good" / "pairs.jsonl")]
    assert plain == [0, 1, 2]
    blank = [p.index for p in read_pairs(DATA / "good" / "pairs_blank_lines.jsonl")]
    assert blank == [0, 3, 4]  # index = line - 1, so it still points at the line


def test_detect_container_from_bytes_not_name(tmp_path):
    # a gzipped JSON array named .jsonl.gz, as the real red-team file is
    p = tmp_path / "red_team_attempts.jsonl.gz"
    with gzip.open(p, "wb") as f:
        f.write((DATA / "good" / "red_team.json").read_bytes())
    assert detect_container(p) == "array"
    assert detect_container(DATA / "good" / "pairs.jsonl.gz") == "jsonl"
    assert len(list(read_attempts(p))) == 2


@pytest.mark.parametrize("name", sorted(BAD), ids=str)
def test_bad_input_names_file_line_and_problem(name):
    path = DATA / "bad" / name
    expected = BAD[name]
    with pytest.raises(DataFormatError) as info:
        list(read_pairs(path))
    err = info.value
    assert err.path == str(path)
    assert err.line == expected["line"]
    assert expected["problem"] in err.problem
    assert str(path) in str(err)
    if expected["line"] is not None:
        assert f"{expected['unit']} {expected['line']}" in str(err)


BROKEN_STREAMS = {  # fixture: (kind, last good line, lines read)
    "cut_stream.jsonl.gz": ("truncated", 26, 26),
    "crc_mismatch.jsonl.gz": ("crc", 72, 72),  # the last buffer is checked before use
    "flipped_byte.jsonl.gz": ("crc", 121, 121),  # garbage lines count too: none is trusted
    "empty_file.jsonl.gz": ("truncated", 0, 0),
}


@pytest.mark.parametrize("name", sorted(BROKEN_STREAMS), ids=str)
@pytest.mark.parametrize("lenient", [False, True], ids=["strict", "lenient"])
def test_broken_stream_is_lost_data_not_a_bad_row(name, lenient):
    """A cut, corrupt or empty .gz raises TruncatedStreamError, lenient or not."""
    path = DATA / "bad" / name
    kind, last_good, read = BROKEN_STREAMS[name]
    skipped: list[SkippedRow] = []
    with pytest.raises(TruncatedStreamError) as info:
        list(read_pairs(path, lenient=lenient, skipped=skipped))
    err = info.value
    assert (err.path, err.kind, err.last_good_line, err.rows_read) == (
        str(path),
        kind,
        last_good,
        read,
    )
    assert str(path) in str(err) and f"{read} line(s)" in str(err)
    if kind == "crc":
        assert "CRC check failed" in str(err) and "missing key" not in str(err)
    else:
        assert "the rest of the file is unreadable" in str(err)
    with pytest.raises(TruncatedStreamError):
        list(read_objects(path, lenient=lenient, skipped=skipped))


def test_truncated_gzip_array_is_lost_data(tmp_path):
    whole = gzip.compress((DATA / "good" / "red_team.json").read_bytes() * 1)
    cut = tmp_path / "red_team_attempts.jsonl.gz"
    cut.write_bytes(whole[: len(whole) - 30])
    for lenient in (False, True):
        with pytest.raises(TruncatedStreamError, match="truncated gzip stream"):
            list(read_attempts(cut, lenient=lenient, skipped=[]))


def test_flipped_byte_in_an_array_names_the_crc_error(tmp_path):
    records = [json.loads((DATA / "good" / "red_team.json").read_text())[0]] * 200
    data = bytearray(gzip.compress(json.dumps(records).encode(), mtime=0))
    data[-8] ^= 1  # the stored CRC
    bad = tmp_path / "red_team_attempts.jsonl.gz"
    bad.write_bytes(bytes(data))
    with pytest.raises(TruncatedStreamError, match="CRC check failed") as info:
        list(read_attempts(bad))
    assert info.value.kind == "crc" and info.value.unit == "record"


def test_bom_is_named_on_any_line(tmp_path):
    p = tmp_path / "two.jsonl"
    line = b'{"chosen": "a", "rejected": "b"}\n'
    p.write_bytes(line + b"\xef\xbb\xbf" + line)
    with pytest.raises(DataFormatError, match="byte order mark") as info:
        list(read_pairs(p))
    assert info.value.line == 2
    skipped: list[SkippedRow] = []
    assert len(list(read_pairs(p, lenient=True, skipped=skipped))) == 1
    assert "byte order mark" in skipped[0].problem
    arr = tmp_path / "arr.json"
    arr.write_bytes(b"\xef\xbb\xbf[" + line.strip() + b"]")
    with pytest.raises(DataFormatError, match="byte order mark"):
        list(read_objects(arr))


def test_corrupt_gzip(tmp_path):
    whole = bytearray((DATA / "good" / "pairs.jsonl.gz").read_bytes())
    whole[20:40] = b"\x00" * 20
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(bytes(whole))
    with pytest.raises(DataFormatError, match="gzip"):
        list(read_pairs(bad))


def test_lenient_reports_every_skipped_row(tmp_path):
    lines = (DATA / "good" / "pairs.jsonl").read_text().splitlines()
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(
        "\n".join([lines[0], "{oops", lines[1], '{"chosen": 1, "rejected": "x"}', "[]", lines[2]])
        + "\n"
    )
    skipped: list[SkippedRow] = []
    pairs = list(read_pairs(mixed, lenient=True, skipped=skipped))
    assert [p.index for p in pairs] == [0, 2, 5]
    assert [(s.line, s.path) for s in skipped] == [
        (2, str(mixed)),
        (4, str(mixed)),
        (5, str(mixed)),
    ]
    assert "invalid JSON" in skipped[0].problem
    assert "'chosen' must be a string" in skipped[1].problem
    assert "expected a JSON object, got list" in skipped[2].problem
    assert str(skipped[0]).startswith(f"{mixed}, line 2: ")
    assert len(pairs) + len(skipped) == 6


def test_lenient_on_array_elements(tmp_path):
    good = json.loads((DATA / "good" / "pairs_array.json").read_text())
    p = tmp_path / "a.json"
    p.write_text(json.dumps([good[0], {"chosen": "x"}, good[1]]))
    skipped: list[SkippedRow] = []
    pairs = list(read_pairs(p, lenient=True, skipped=skipped))
    assert [x.index for x in pairs] == [0, 2]
    assert skipped == [
        SkippedRow(
            str(p), 2, "missing key 'rejected' (a pair needs 'chosen' and 'rejected')", "record"
        )
    ]


def test_large_array_streams_across_buffer_boundaries(tmp_path):
    # elements far larger than the 1 MiB read size, and a number at the very end
    big = {
        "chosen": "\n\nHuman: hi\n\nAssistant: " + "a" * 1_500_000,
        "rejected": "\n\nHuman: hi\n\nAssistant: b",
    }
    p = tmp_path / "big.json"
    p.write_text(json.dumps([big, big, big]))
    assert len(list(read_pairs(p))) == 3
    q = tmp_path / "nums.json"
    q.write_text("[" + ", ".join(f'{{"n": {i}}}' for i in range(50_000)) + "]")
    assert [o["n"] for _, o in read_objects(q)] == list(range(50_000))


def test_unicode_and_escapes_survive(tmp_path):
    pair = {
        "chosen": '\n\nHuman: café ☕ \\ "q"\n\nAssistant: 🙂',
        "rejected": '\n\nHuman: café ☕ \\ "q"\n\nAssistant: \u2028',
    }
    for name, text in (
        ("u.jsonl", json.dumps(pair) + "\n"),
        ("u.json", json.dumps([pair], ensure_ascii=False)),
    ):
        p = tmp_path / name
        p.write_text(text, encoding="utf-8")
        [got] = read_pairs(p)
        assert got.to_dict() == pair


def test_invalid_utf8(tmp_path):
    p = tmp_path / "latin1.jsonl"
    p.write_bytes(b'{"chosen": "caf\xe9", "rejected": "x"}\n')
    with pytest.raises(DataFormatError, match="line 1"):
        list(read_pairs(p))


def test_red_team_records_typed_and_both_key_spellings():
    real, card = (
        list(read_attempts(DATA / "good" / "red_team.json")),
        list(read_attempts(DATA / "good" / "red_team_card_key.jsonl")),
    )
    a, b = real
    assert (
        a.task_description_harmlessness_score == 0.5 == card[0].task_description_harmlessness_score
    )
    assert a.rating == 1.0 and isinstance(a.rating, float)
    assert b.min_harmlessness_score_transcript == -2.0 and isinstance(
        b.min_harmlessness_score_transcript, float
    )
    assert a.red_team_member_id == 7 and b.red_team_member_id == "m-12"
    assert a.tags is None and b.tags == ["Other"]
    assert a.params == 52e9 and b.params == 2.7e9
    assert (a.index, b.index) == (0, 1)
    assert a.dialogue.turns[0].role == "Human" and a.human_turns == 1
    assert b.successful and not a.successful
    assert a.to_dict(real_keys=True)["task_descripton_harmlessness_score"] == 0.5


@pytest.mark.parametrize(
    "change, problem",
    [
        ({"rating": None}, "'rating' must be a number, got null"),
        ({"rating": True}, "'rating' must be a number, got bool"),
        ({"is_upworker": "no"}, "'is_upworker' must be true or false"),
        ({"tags": "Other"}, "'tags' must be null or a list of strings"),
        ({"tags": [1]}, "'tags' must be null or a list of strings"),
        ({"red_team_member_id": 1.5}, "'red_team_member_id' must be an int or a string"),
        ({"transcript": None}, "'transcript' must be a string"),
    ],
)
def test_red_team_validation(change, problem):
    obj = json.loads((DATA / "good" / "red_team.json").read_text())[0]
    obj.update(change)
    with pytest.raises(ValueError, match=problem.replace("(", r"\(")):
        attempt_from_object(obj)


def test_red_team_missing_keys_error_names_file_and_record(tmp_path):
    objs = json.loads((DATA / "good" / "red_team.json").read_text())
    del objs[1]["model_type"], objs[1]["tags"]
    p = tmp_path / "rt.json"
    p.write_text(json.dumps(objs))
    with pytest.raises(DataFormatError) as info:
        list(read_attempts(p))
    assert info.value.line == 2 and info.value.unit == "record"
    assert "missing keys 'model_type', 'tags'" in str(info.value)
    skipped: list[SkippedRow] = []
    assert len(list(read_attempts(p, lenient=True, skipped=skipped))) == 1
    assert skipped[0].line == 2


def test_plain_copy_of_gzip_name_still_reads(tmp_path):
    # a decompressed file that kept the .gz name is read as plain text
    p = tmp_path / "test.jsonl.gz"
    shutil.copy(DATA / "good" / "pairs.jsonl", p)
    assert len(list(read_pairs(p))) == 3


def test_missing_file_is_not_called_corrupt_gzip(tmp_path):
    with pytest.raises(DataFormatError) as info:
        list(read_pairs(tmp_path / "absent.jsonl.gz"))
    assert info.value.line is None
    assert "cannot open: No such file or directory" in str(info.value)
    assert "gzip" not in str(info.value)


def test_read_objects_lost_list_takes_a_cut_stream_only():
    lost: list = []
    cut = DATA / "bad" / "cut_stream.jsonl.gz"
    rows = list(read_objects(cut, lost=lost))
    assert len(rows) == 26 and [e.kind for e in lost] == ["truncated"]
    assert lost[0].last_good_line == rows[-1][0] == 26
    empty: list = []
    assert list(read_objects(DATA / "bad" / "empty_file.jsonl.gz", lost=empty)) == []
    assert len(empty) == 1
    with pytest.raises(TruncatedStreamError, match="CRC"):
        list(read_objects(DATA / "bad" / "crc_mismatch.jsonl.gz", lost=[]))


def test_red_team_null_scores_read_as_none():
    """Collected data exported without a scorer holds null scores: no score, not an error."""
    obj = json.loads((DATA / "good" / "red_team.json").read_text())[0]
    obj["min_harmlessness_score_transcript"] = None
    obj["task_descripton_harmlessness_score"] = None
    a = attempt_from_object(obj)
    assert a.min_harmlessness_score_transcript is None
    assert a.task_description_harmlessness_score is None
    assert not a.score_is_finite
    assert a.to_dict(real_keys=True)["task_descripton_harmlessness_score"] is None
