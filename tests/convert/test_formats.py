"""Every format: golden rows for hand-written pairs, and round trips over every sample pair."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from hhrlhf.convert import FORMATS, normalise_transcript
from hhrlhf.reader import read_attempts, read_pairs
from hhrlhf.records import PreferencePair, RedTeamAttempt
from hhrlhf.transcript import Dialogue

DATA = Path(__file__).parent.parent / "data" / "convert"
PAIR_FORMATS = [n for n, f in FORMATS.items() if f.kind == "preference"]
CLEAN_FORMATS = [n for n in PAIR_FORMATS if not FORMATS[n].exact]


def golden_pairs():
    return list(read_pairs(DATA / "pairs.jsonl", subset="helpful-base", split="test"))


def test_registry_names_the_formats_trainers_use():
    assert list(FORMATS) == [
        "raw",
        "dpo",
        "trl-standard",
        "trl-conversational",
        "messages",
        "sft",
        "openai",
        "redteam",
    ]
    assert {n for n, f in FORMATS.items() if f.exact} == {"raw", "dpo"}


@pytest.mark.parametrize("name", [n for n in FORMATS if n != "redteam"])
def test_golden_rows(name):
    fmt = FORMATS[name]
    got = b"".join(fmt.encode(fmt.export_row(p)) for p in golden_pairs())
    assert got == (DATA / f"{name}.jsonl").read_bytes()


def test_golden_redteam():
    fmt = FORMATS["redteam"]
    attempts = list(read_attempts(DATA / "attempts.json"))
    got = b"".join(fmt.encode(fmt.export_row(a)) for a in attempts)
    assert got == (DATA / "redteam.jsonl").read_bytes()
    row = orjson.loads(got.splitlines()[0])
    assert "task_description_harmlessness_score" in row and "transcript" not in row


def test_raw_lines_are_spelled_like_upstream():
    # upstream lines are json.dumps(obj, ensure_ascii=False): ", " and ": " separators, raw unicode
    fmt = FORMATS["raw"]
    line = fmt.encode({"chosen": "a\u00e9\n", "rejected": "b"})
    assert line == b'{"chosen": "a\xc3\xa9\\n", "rejected": "b"}\n'
    assert (DATA / "raw.jsonl").read_bytes().splitlines()[0].startswith(b'{"chosen": "\\n\\nHuman:')


def test_dpo_prompt_plus_response_is_upstream():
    p = golden_pairs()[2]  # the rejected response writes a "\n\nHuman:" turn itself
    row = FORMATS["dpo"].row(p)
    assert row["prompt"].endswith("\n\nAssistant:")
    assert row["chosen"] == " The first caf\u00e9s opened in the 1500s."
    assert row["rejected"].startswith(" Sure.\n\nHuman: thanks")
    assert row["prompt"] + row["chosen"] == p.chosen
    assert row["prompt"] + row["rejected"] == p.rejected


def test_messages_keep_non_alternating_turns_and_empty_responses():
    p = golden_pairs()[1]  # two Human turns in a row, empty chosen response
    row = FORMATS["messages"].row(p)
    assert [m["role"] for m in row["chosen"]] == ["user", "user", "assistant"]
    assert row["chosen"][-1] == {"role": "assistant", "content": ""}
    conv = FORMATS["trl-conversational"].row(p)
    assert len(conv["prompt"]) == 2 and conv["chosen"] == [{"role": "assistant", "content": ""}]


def test_preamble_becomes_the_turn_it_starts():
    p = golden_pairs()[3]  # "Human: Is 7 prime?..." without the leading blank line
    assert FORMATS["sft"].row(p)["messages"] == [
        {"role": "user", "content": "Is 7 prime?"},
        {"role": "assistant", "content": "Yes, 7 is prime."},
    ]


def test_no_prompt_pair_keeps_whole_conversations():
    p = PreferencePair("A\n\nHuman: x\n\nAssistant: y", "B\n\nHuman: x\n\nAssistant: z")
    assert p.prompt_end == 0
    row = FORMATS["trl-conversational"].row(p)
    assert row["prompt"] == []
    assert [m["content"] for m in row["chosen"]] == ["A", "x", "y"]
    back = FORMATS["trl-standard"].read(FORMATS["trl-standard"].row(p))
    assert normalise_transcript(back.chosen) == normalise_transcript(p.chosen)


@pytest.mark.parametrize("name", ["raw", "dpo"])
def test_exact_formats_round_trip_every_sample_pair(name, sample_pairs):
    fmt = FORMATS[name]
    for p in sample_pairs:
        row = orjson.loads(fmt.encode(fmt.export_row(p)))
        back = fmt.read(row)
        assert (back.chosen, back.rejected) == (p.chosen, p.rejected), p.source
        assert back.source == p.source
        assert back.prompt == p.prompt


@pytest.mark.parametrize("name", CLEAN_FORMATS)
def test_clean_formats_round_trip_after_normalisation(name, sample_pairs):
    fmt = FORMATS[name]
    for p in sample_pairs:
        back = fmt.read(orjson.loads(fmt.encode(fmt.export_row(p))))
        assert isinstance(back, PreferencePair)
        assert normalise_transcript(back.chosen) == normalise_transcript(p.chosen), p.source
        assert normalise_transcript(back.rejected) == normalise_transcript(p.rejected), p.source
        assert back.source == p.source


def test_clean_formats_keep_every_turn(sample_pairs):
    for p in sample_pairs:
        n_turns = len(p.chosen_dialogue.turns) + bool(p.chosen_dialogue.preamble.strip())
        assert len(FORMATS["messages"].row(p)["chosen"]) == n_turns, p.source


def test_sft_reads_back_the_chosen_conversation(sample_pairs):
    fmt = FORMATS["sft"]
    for p in sample_pairs:
        back = fmt.read(fmt.export_row(p))
        assert isinstance(back, Dialogue)
        assert back.render() == normalise_transcript(p.chosen)


def test_redteam_round_trip(sample_attempts):
    fmt = FORMATS["redteam"]
    assert sample_attempts
    for a in sample_attempts:
        back = fmt.read(orjson.loads(fmt.encode(fmt.export_row(a))))
        assert isinstance(back, RedTeamAttempt)
        assert back.transcript == normalise_transcript(a.transcript)
        assert back.to_dict() | {"transcript": None} == a.to_dict() | {"transcript": None}
        assert back.index == a.index


@pytest.mark.parametrize(
    "name,row,problem",
    [
        ("dpo", {"prompt": "p", "chosen": "c"}, "missing key 'rejected'"),
        ("dpo", {"prompt": 1, "chosen": "c", "rejected": "r"}, "'prompt' must be str"),
        (
            "messages",
            {"chosen": [{"role": "system", "content": "x"}], "rejected": []},
            "role must be",
        ),
        (
            "openai",
            {"input": [], "preferred_output": [], "non_preferred_output": []},
            "'input' must be",
        ),
        ("raw", ["chosen"], "expected a JSON object"),
    ],
)
def test_read_names_the_problem(name, row, problem):
    with pytest.raises(ValueError, match=problem):
        FORMATS[name].read(row)


def test_source_is_optional():
    p = golden_pairs()[0]
    assert set(FORMATS["dpo"].export_row(p)) == {
        "prompt",
        "chosen",
        "rejected",
        "subset",
        "split",
        "index",
    }
    assert set(FORMATS["dpo"].export_row(p, source=False)) == {"prompt", "chosen", "rejected"}
