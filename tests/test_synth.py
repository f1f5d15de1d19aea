"""The synthetic generator: determinism, upstream layout, the committed sample, every quirk."""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
from collections import Counter
from pathlib import Path

import pytest

import hhrlhf
from hhrlhf.records import PAIR_CLASSES, RED_TEAM_KEYS, TASK_SCORE_KEY_REAL, PreferencePair
from hhrlhf.subsets import PREFERENCE_SUBSETS
from hhrlhf.testing import synth
from hhrlhf.testing.synth import red_team
from hhrlhf.transcript import parse_transcript, render_transcript

SAMPLE_DIR = Path(hhrlhf.__file__).parent / "sample_data"
RED_TEAM_PATH = "red-team-attempts/red_team_attempts.jsonl.gz"
PREFERENCE_PATHS = [
    f"{s}/{split}.jsonl.gz" for s in PREFERENCE_SUBSETS for split in ("train", "test")
]
ALL_PATHS = [*PREFERENCE_PATHS, RED_TEAM_PATH]
REAL_KEYS = {
    TASK_SCORE_KEY_REAL if k == "task_description_harmlessness_score" else k for k in RED_TEAM_KEYS
}


def _jsonl(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="module")
def sample_pairs() -> list[tuple[str, dict]]:
    return [(p, row) for p in PREFERENCE_PATHS for row in _jsonl(SAMPLE_DIR / p)]


@pytest.fixture(scope="module")
def sample_red_team() -> list[dict]:
    with gzip.open(SAMPLE_DIR / RED_TEAM_PATH, "rb") as f:
        return json.loads(f.read())


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


# --------------------------------------------------------------------------- determinism


def test_generators_are_deterministic():
    assert list(synth.generate_pairs(200, seed=3)) == list(synth.generate_pairs(200, seed=3))
    assert list(synth.generate_pairs(50, seed=3)) != list(synth.generate_pairs(50, seed=4))
    assert list(synth.generate_red_team(100, seed=3)) == list(synth.generate_red_team(100, seed=3))


def test_write_corpus_same_seed_same_bytes(tmp_path):
    synth.write_corpus(tmp_path / "a", scale="sample", seed=0)
    synth.write_corpus(tmp_path / "b", scale="sample", seed=0)
    synth.write_corpus(tmp_path / "c", scale="sample", seed=1)
    for rel in ALL_PATHS:
        a = (tmp_path / "a" / rel).read_bytes()
        assert a == (tmp_path / "b" / rel).read_bytes(), rel
        assert a != (tmp_path / "c" / rel).read_bytes(), rel


def test_gzip_header_is_deterministic(tmp_path):
    path = tmp_path / "x.jsonl.gz"
    for fast in (False, True):
        synth.write_jsonl_gz(path, [{"chosen": "a", "rejected": "b"}], fast=fast)
        head = path.read_bytes()[:10]
        assert head[:3] == b"\x1f\x8b\x08"
        assert head[3] & 0x08 == 0, "no file name in the header"
        assert head[4:8] == b"\x00\x00\x00\x00", "mtime is 0"
        assert _jsonl(path) == [{"chosen": "a", "rejected": "b"}]


# --------------------------------------------------------------------------- layout


def test_sample_layout_and_row_counts(tmp_path):
    written = synth.write_corpus(tmp_path, scale="sample", seed=0)
    assert _files(tmp_path) == sorted(ALL_PATHS)
    assert set(written) == set(ALL_PATHS)
    for rel in PREFERENCE_PATHS:
        rows = _jsonl(tmp_path / rel)
        split = rel.rsplit("/", 1)[1].split(".")[0]
        assert len(rows) == written[rel] == synth.SAMPLE_ROWS[split]
        assert all(set(r) == {"chosen", "rejected"} for r in rows)
        assert all(isinstance(r["chosen"], str) and isinstance(r["rejected"], str) for r in rows)
    assert written[RED_TEAM_PATH] == synth.SAMPLE_RED_TEAM_ROWS


def test_red_team_file_is_one_json_array_with_the_ten_real_keys(sample_red_team):
    raw = gzip.decompress((SAMPLE_DIR / RED_TEAM_PATH).read_bytes()).decode()
    assert raw.lstrip().startswith("[") and raw.rstrip().endswith("]")
    assert len(sample_red_team) == synth.SAMPLE_RED_TEAM_ROWS
    assert tuple(synth.RED_TEAM_KEYS_REAL) == tuple(sample_red_team[0])
    for rec in sample_red_team:
        assert set(rec) == REAL_KEYS
        assert "task_description_harmlessness_score" not in rec
        assert isinstance(rec["transcript"], str) and rec["transcript"].startswith("\n\nHuman:")
        assert isinstance(rec["min_harmlessness_score_transcript"], float)
        assert rec["num_params"] in {"2.7B", "13B", "52B"}
        assert rec["rating"] in {0, 1, 2, 3, 4}
        assert isinstance(rec["red_team_member_id"], int | str)
        assert isinstance(rec["is_upworker"], bool)
        assert rec["tags"] is None or (1 <= len(rec["tags"]) <= 6)
    assert any(isinstance(r["red_team_member_id"], str) for r in sample_red_team)
    assert any(r["is_upworker"] for r in sample_red_team)
    assert any(r["tags"] for r in sample_red_team)


def test_red_team_marginals_at_full_scale():
    recs = list(synth.generate_red_team(38_961, seed=0))
    cells = Counter((r["model_type"], r["num_params"]) for r in recs)
    assert cells == red_team.TABLE1
    assert Counter(int(r["rating"]) for r in recs) == red_team.RATINGS
    assert sum(r["tags"] is not None for r in recs) == 742
    assert 450 <= sum(r["is_upworker"] for r in recs) <= 700
    members = Counter(r["red_team_member_id"] for r in recs)
    assert len(members) == 324
    top = sum(sorted(members.values(), reverse=True)[: round(324 * 0.15)])
    assert 0.75 <= top / len(recs) <= 0.85
    scores = [r["min_harmlessness_score_transcript"] for r in recs]
    assert -7.54 <= min(scores) and max(scores) <= 6.61
    assert abs(sum(scores) / len(scores) - (-0.13)) < 0.15
    for cell, mean in red_team.FIG1.items():
        got = [
            r["min_harmlessness_score_transcript"]
            for r in recs
            if (r["model_type"], r["num_params"]) == cell
        ]
        assert abs(sum(got) / len(got) - mean) < 0.2, cell
    lengths = sorted(len(r["transcript"]) for r in recs)
    assert 40 <= lengths[0] and lengths[-1] <= 5630
    assert 600 <= lengths[len(lengths) // 2] <= 1100


# --------------------------------------------------------------------------- the committed sample


@pytest.mark.parametrize("rel", ALL_PATHS)
def test_committed_sample_matches_the_generator(tmp_path, rel):
    """The bundled sample cannot go stale: regenerate it with `python scripts/make_sample.py`.

    The decompressed bytes must be identical; the gzip bytes too, unless this Python's zlib
    build compresses differently from the one that wrote the committed file.
    """
    synth.write_corpus(tmp_path, scale="sample", seed=0)
    committed = (SAMPLE_DIR / rel).read_bytes()
    fresh = (tmp_path / rel).read_bytes()
    if committed != fresh:
        assert gzip.decompress(committed) == gzip.decompress(fresh), (
            f"{rel} is stale: run `python scripts/make_sample.py`"
        )
    assert committed[4:8] == b"\x00\x00\x00\x00"


def test_sample_is_small():
    total = sum(p.stat().st_size for p in SAMPLE_DIR.rglob("*.gz"))
    assert total < 300_000


def test_every_pair_class_occurs_in_the_sample(sample_pairs):
    seen = Counter(
        c for _, r in sample_pairs for c in PreferencePair(r["chosen"], r["rejected"]).classes
    )
    missing = set(PAIR_CLASSES) - {"no_prompt"} - set(seen)
    assert not missing, f"classes missing from the sample: {sorted(missing)}"


def test_sample_has_duplicates_unicode_and_a_preamble(sample_pairs):
    by_file = Counter((p, r["chosen"], r["rejected"]) for p, r in sample_pairs)
    assert any(k > 1 for k in by_file.values()), "a duplicate pair inside a file"
    assert any(not r["chosen"].startswith("\n\n") for _, r in sample_pairs), "a preamble"
    assert any(any(ord(ch) > 0xFFFF for ch in r["chosen"] + r["rejected"]) for _, r in sample_pairs)
    chosen_side = rejected_side = False
    for _, r in sample_pairs:
        p = PreferencePair(r["chosen"], r["rejected"])
        chosen_side |= "\n\nHuman:" in p.chosen_response
        rejected_side |= "\n\nHuman:" in p.rejected_response
    assert chosen_side and rejected_side
    assert any(r["chosen"].endswith("\n\nAssistant: ") for _, r in sample_pairs)


def test_prompt_plus_response_is_the_transcript(sample_pairs):
    for _, r in sample_pairs:
        p = PreferencePair(r["chosen"], r["rejected"])
        assert p.prompt + p.chosen_response == r["chosen"]
        assert p.prompt + p.rejected_response == r["rejected"]


def test_render_parse_round_trip(sample_pairs, sample_red_team):
    texts = [r[k] for _, r in sample_pairs for k in ("chosen", "rejected")]
    texts += [r["transcript"] for r in sample_red_team]
    for text in texts:
        assert render_transcript(parse_transcript(text)) == text


def test_char_level_common_prefix_trap_exists(sample_pairs):
    """Some pair's character-level common prefix runs past the turn-level prompt by a word."""
    trapped = 0
    for _, r in sample_pairs:
        p = PreferencePair(r["chosen"], r["rejected"])
        if r["chosen"] != r["rejected"]:
            common = os.path.commonprefix([r["chosen"], r["rejected"]])
            if len(common) > p.prompt_end + 4:
                trapped += 1
    assert trapped > 0


# --------------------------------------------------------------------------- knobs


def test_no_quirks_means_clean_pairs():
    for row in synth.generate_pairs(300, seed=5, quirks=False):
        assert not PreferencePair(row["chosen"], row["rejected"]).classes


def test_quirk_rates_are_configurable():
    only = dataclasses.replace(synth.QuirkRates.none(), identical=1.0)
    rows = list(synth.generate_pairs(20, seed=1, quirks=only))
    assert all(r["chosen"] == r["rejected"] for r in rows)
    # A mapping overrides the defaults.
    rows = list(synth.generate_pairs(200, seed=1, quirks={"empty_chosen": 0.5}))
    empty = sum(r["chosen"].endswith("\n\nAssistant: ") for r in rows)
    assert 70 <= empty <= 130


@pytest.mark.parametrize("subset", [None, *PREFERENCE_SUBSETS])
def test_generate_pairs_shapes(subset):
    rows = list(synth.generate_pairs(400, seed=2, subset=subset))
    assert len(rows) == 400
    turns = Counter(PreferencePair(r["chosen"], r["rejected"]).human_turns for r in rows)
    assert 0.2 <= turns[1] / 400 <= 0.4
    assert max(turns) <= 18
    longer = sum(len(r["chosen"]) > len(r["rejected"]) for r in rows) / 400
    assert 0.35 <= longer <= 0.55


def test_bad_arguments():
    with pytest.raises(ValueError):
        synth.write_corpus("unused", scale="huge")
    with pytest.raises(ValueError):
        next(synth.generate_pairs(1, subset="nope"))
