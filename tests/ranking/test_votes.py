"""Votes from a battles file, an iterable of records, or a pandas / Arrow table."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

from hhrlhf.errors import DataFormatError
from hhrlhf.ranking.votes import Vote, collect_votes, read_battles

BATTLES = Path(__file__).parents[1] / "data" / "battles.jsonl"


def _rows() -> list[dict]:
    return [json.loads(line) for line in BATTLES.read_text().splitlines()]


def _summary(cols) -> list[tuple]:
    return [
        (
            cols.models[cols.a[k]],
            cols.models[cols.b[k]],
            cols.outcome[k],
            cols.length_a[k],
            cols.length_b[k],
            cols.tstamp[k],
        )
        for k in range(len(cols))
    ]


def test_battles_file_both_length_layouts_and_ties():
    cols = read_battles(BATTLES)
    rows = _rows()
    assert len(cols) == len(rows) == 40
    assert cols.ties == sum(r["winner"].startswith("tie") for r in rows)
    assert list(cols.lines) == list(range(40))  # 0-based line numbers
    for k, r in enumerate(rows):
        if "length_a" in r:
            assert (cols.length_a[k], cols.length_b[k]) == (r["length_a"], r["length_b"])
        else:
            meta = r["conv_metadata"]
            assert cols.length_a[k] == meta["sum_assistant_a_tokens"]
            assert cols.length_b[k] == meta["sum_assistant_b_tokens"]
        assert cols.tstamp[k] == r["tstamp"]
    assert cols.has_lengths


def test_gzip_and_blank_lines_keep_the_line_numbers(tmp_path):
    lines = BATTLES.read_text().splitlines()
    path = tmp_path / "b.jsonl.gz"
    with gzip.open(path, "wt") as f:
        f.write(lines[0] + "\n\n" + lines[1] + "\n")
    cols = read_battles(path)
    assert len(cols) == 2 and list(cols.lines) == [0, 2]
    assert _summary(cols) == _summary(read_battles(BATTLES))[:2]


BAD = {
    "malformed JSON": ('{"model_a": "x", "model_b"', "invalid JSON"),
    "unknown winner": (
        '{"model_a": "x", "model_b": "y", "winner": "draw"}',
        "unknown winner 'draw'",
    ),
    "compared with itself": (
        '{"model_a": "x", "model_b": "x", "winner": "tie"}',
        "model 'x' is compared with itself",
    ),
    "missing model": ('{"model_a": "x", "winner": "tie"}', "model_b must be a non-empty string"),
    "negative length": (
        '{"model_a": "x", "model_b": "y", "winner": "tie", "length_a": -1, "length_b": 3}',
        "length_a must be a number from 0 to 1e+15",
    ),
    "length true": (
        '{"model_a": "x", "model_b": "y", "winner": "tie", "length_a": true, "length_b": 3}',
        "length_a must be a number from 0 to 1e+15",
    ),
    "winner a list": ('{"model_a": "x", "model_b": "y", "winner": []}', "unknown winner []"),
    "not an object": ("[1, 2]", "expected a JSON object, got list"),
    "bad tstamp": (
        '{"model_a": "x", "model_b": "y", "winner": "tie", "tstamp": "noon"}',
        "tstamp must be Unix seconds",
    ),
    "tstamp past 9999": (
        '{"model_a": "x", "model_b": "y", "winner": "tie", "tstamp": 1e20}',
        "tstamp must be Unix seconds from 0 to 253402300799 (1970 to 9999), got 1e+20",
    ),
    "tstamp before 1970": (
        '{"model_a": "x", "model_b": "y", "winner": "tie", "tstamp": -1e15}',
        "tstamp must be Unix seconds from 0 to 253402300799 (1970 to 9999), got -1000000000000000.0",
    ),
    "huge length": (
        '{"model_a": "x", "model_b": "y", "winner": "tie", "length_a": 3, "length_b": 1e300}',
        "length_b must be a number from 0 to 1e+15, got 1e+300",
    ),
    "huge integer length": (
        '{"model_a": "x", "model_b": "y", "winner": "tie", "length_a": 3, "length_b": '
        + "9" * 30
        + "}",
        "length_b must be a number from 0 to 1e+15",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_line_names_file_and_line(tmp_path, case):
    line, problem = BAD[case]
    path = tmp_path / "votes.jsonl"
    path.write_text('{"model_a": "x", "model_b": "y", "winner": "model_a"}\n' + line + "\n")
    with pytest.raises(DataFormatError) as info:
        read_battles(path)
    assert info.value.line == 2 and info.value.path == str(path)
    assert problem in str(info.value)


@pytest.mark.parametrize(
    "field, value",
    [("tstamp", float("inf")), ("tstamp", float("-inf")), ("tstamp", 1e20), ("length_a", 1e300)],
)
def test_records_with_values_out_of_range_name_the_vote(field, value):
    """Records given from Python (or a table) pass the same checks as a file's lines."""
    vote = {"model_a": "x", "model_b": "y", "winner": "tie", "length_a": 1, "length_b": 2}
    with pytest.raises(DataFormatError, match=f"vote 2: {field} must be"):
        collect_votes([dict(vote), {**vote, field: value}])


def test_records_dicts_and_tables_read_like_the_file():
    rows = _rows()
    expected = _summary(read_battles(BATTLES))
    flat = [
        {
            "model_a": r["model_a"],
            "model_b": r["model_b"],
            "winner": r["winner"],
            "tstamp": r["tstamp"],
            "length_a": r.get("length_a", r.get("conv_metadata", {}).get("sum_assistant_a_tokens")),
            "length_b": r.get("length_b", r.get("conv_metadata", {}).get("sum_assistant_b_tokens")),
        }
        for r in rows
    ]
    assert _summary(collect_votes(rows)) == expected
    assert _summary(collect_votes([Vote(**f) for f in flat])) == expected
    pd = pytest.importorskip("pandas")
    assert _summary(collect_votes(pd.DataFrame(flat))) == expected
    pa = pytest.importorskip("pyarrow")
    assert _summary(collect_votes(pa.Table.from_pylist(flat))) == expected


def test_table_missing_lengths_are_unknown_not_zero():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(
        [
            {"model_a": "x", "model_b": "y", "winner": "tie", "length_a": 3.0, "length_b": 4.0},
            {"model_a": "x", "model_b": "y", "winner": "model_b"},
        ]
    )
    cols = collect_votes(df)
    assert cols.length_a[0] == 3.0 and math.isnan(cols.length_a[1]) and not cols.has_lengths


def test_bad_record_names_the_vote():
    with pytest.raises(DataFormatError, match=r"<votes>, vote 2: unknown winner"):
        collect_votes([Vote("x", "y", "model_a"), Vote("x", "y", "a")])


def test_groups_all_or_none():
    with pytest.raises(DataFormatError, match="some votes have a group"):
        collect_votes([Vote("x", "y", "model_a", group=1), Vote("x", "y", "model_a")])
    cols = collect_votes([Vote("x", "y", "model_a", group="c1", ref={"turn": 5})])
    assert cols.groups == ["c1"] and cols.ref(0) == {"turn": 5}


def test_a_flat_length_beside_token_counts(tmp_path):
    # the first line registers the models (the careful path), the next ones take the quick one
    path = tmp_path / "votes.jsonl"
    path.write_text(
        '{"model_a": "x", "model_b": "y", "winner": "model_a"}\n'
        '{"model_a": "y", "model_b": "x", "winner": "tie", "length_a": 7,'
        ' "conv_metadata": {"sum_assistant_b_tokens": 9}}\n'
        '{"model_a": "y", "model_b": "x", "winner": "model_b",'
        ' "conv_metadata": {"sum_assistant_a_tokens": 2, "sum_assistant_b_tokens": 3}}\n'
        '{"model_a": "x", "model_b": "y", "winner": "model_a", "length_a": 4, "length_b": 5.5}\n'
    )
    cols = read_battles(path)
    assert [(cols.length_a[k], cols.length_b[k]) for k in (1, 2, 3)] == [(7, 9), (2, 3), (4, 5.5)]
    assert math.isnan(cols.length_a[0]) and list(cols.outcome) == [0, 2, 1, 0]
    assert [cols.models[i] for i in cols.a] == ["x", "y", "y", "x"]
