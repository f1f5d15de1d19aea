"""Checks on the real upstream harmless-base/test.jsonl.gz, when HH_RLHF_REAL points at it.

The file is not part of the project; these tests skip on a user's machine.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from hhrlhf.download import sha256_file
from hhrlhf.reader import read_pairs
from hhrlhf.subsets import SUBSETS
from hhrlhf.transcript import has_inline_label, parse_transcript

REAL = os.environ.get("HH_RLHF_REAL")
PATH = Path(REAL or ".") / "harmless-base" / "test.jsonl.gz"
pytestmark = [
    pytest.mark.real,
    pytest.mark.skipif(
        not (REAL and PATH.is_file()),
        reason="set HH_RLHF_REAL to a folder holding the real harmless-base/test.jsonl.gz",
    ),
]


@pytest.fixture(scope="module")
def pairs():
    return list(read_pairs(PATH, subset="harmless-base", split="test"))


def test_checksum_matches_registry():
    assert sha256_file(PATH) == SUBSETS["harmless-base"].file("test").sha256


def test_every_pair_round_trips_and_reconstructs(pairs):
    assert len(pairs) == 2312
    for p in pairs:
        assert parse_transcript(p.chosen).render() == p.chosen
        assert parse_transcript(p.rejected).render() == p.rejected
        assert p.prompt + p.chosen_response == p.chosen
        assert p.prompt + p.rejected_response == p.rejected
        assert p.prompt.endswith("\n\nAssistant:")


def test_class_counts_match_the_facts(pairs):
    counts = Counter(c for p in pairs for c in p.classes)
    assert sum(1 for p in pairs if not p.chosen_response.strip()) == 4
    assert counts["empty_response"] == 4  # all four on the chosen side
    assert counts["response_contains_turns"] == 5
    assert counts["non_alternating"] == 9
    # the facts count labels inside the chosen transcript; either side gives 49
    assert sum(1 for p in pairs if has_inline_label_any(p.chosen)) == 40
    assert counts["inline_speaker_label"] == 49
    assert counts["identical_pair"] == 0
    assert counts["diverges_before_final_turn"] == 0
    assert len({(p.chosen, p.rejected) for p in pairs}) == 2312


def test_right_most_split_disagrees_exactly_where_the_facts_say(pairs):
    def rsplit_prompt(text):
        return text[: text.rfind("\n\nAssistant:")]

    differ = [p for p in pairs if rsplit_prompt(p.chosen) != rsplit_prompt(p.rejected)]
    assert len(differ) == 5
    assert all("response_contains_turns" in p.classes for p in differ)


def test_turn_counts_and_length_share(pairs):
    turns = Counter(p.human_turns for p in pairs)
    assert [turns[k] for k in range(1, 10)] == [662, 584, 590, 354, 69, 20, 16, 7, 5]
    assert max(turns) == 18
    longer = sum(len(p.chosen) > len(p.rejected) for p in pairs) / len(pairs)
    assert round(100 * longer, 1) == 44.3


def has_inline_label_any(text: str) -> bool:
    return any(has_inline_label(t.text) for t in parse_transcript(text).turns)


def test_a_folder_holding_only_the_real_file(tmp_path):
    """`hh check` on a folder with only harmless-base/test: the facts file's counts, leak skipped."""
    import json
    import shutil

    from click.testing import CliRunner

    from hhrlhf.cli import cli

    (tmp_path / "harmless-base").mkdir()
    shutil.copy(PATH, tmp_path / "harmless-base" / "test.jsonl.gz")
    for split in ([], ["--split", "test"]):
        result = CliRunner().invoke(
            cli, ["check", *split, "--data", str(tmp_path), "--json", "--no-near-dups"]
        )
        assert result.exit_code == 0, result.output
        out = json.loads(result.stdout)
        assert out["rows"] == 2312 and list(out["skipped"]) == ["train_test_leak"]
        counts = out["counts"]
        assert (counts["empty_response"], counts["response_contains_turns"]) == (4, 5)
        assert (counts["non_alternating"], counts["inline_speaker_label"]) == (9, 49)


def test_the_readme_says_which_side_each_count_counts(pairs):
    """The README's quirk counts are the real file's, each saying what it counts: pairs, or
    chosen transcripts (the facts' 40 inline labels) beside the pairs hh stats counts (49)."""
    readme = " ".join((Path(__file__).resolve().parents[1] / "README.md").read_text().split())
    counts = Counter(c for p in pairs for c in p.classes)
    empty_chosen = sum(1 for p in pairs if not p.chosen_response.strip())
    inline_chosen = sum(1 for p in pairs if has_inline_label_any(p.chosen))

    def markers(response: str) -> bool:
        return "\n\nHuman:" in response or "\n\nAssistant:" in response

    in_chosen = sum(1 for p in pairs if markers(p.chosen_response))
    in_rejected = sum(1 for p in pairs if markers(p.rejected_response))
    for said in (
        f"{empty_chosen} pairs whose chosen response is empty",
        f"{counts['response_contains_turns']} pairs with speaker markers inside a response "
        f"({in_chosen} chosen, {in_rejected} rejected)",
        f"{counts['non_alternating']} pairs with a non-alternating transcript",
        f"inline speaker labels in {inline_chosen} chosen transcripts "
        f"({counts['inline_speaker_label']} pairs counting either side",
    ):
        assert said in readme, said
