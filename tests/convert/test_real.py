"""The real harmless-base/test file (HH_RLHF_REAL): exact formats and the audit on real data.

Nothing from the file is printed or stored; only counts and equalities are asserted.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from hhrlhf.convert import FORMATS, export_records, import_records, normalise_transcript
from hhrlhf.reader import read_pairs

pytestmark = pytest.mark.real

ROOT = os.environ.get("HH_RLHF_REAL")
FILE = Path(ROOT) / "harmless-base" / "test.jsonl.gz" if ROOT else None


@pytest.fixture(scope="module")
def real_pairs():
    if FILE is None or not FILE.exists():
        pytest.skip("set HH_RLHF_REAL to the folder holding harmless-base/test.jsonl.gz")
    return list(read_pairs(FILE, subset="harmless-base", split="test"))


def test_raw_export_is_byte_identical(real_pairs, tmp_path):
    out = tmp_path / "test.jsonl"
    export_records(real_pairs, "raw", out, source=False)
    assert out.read_bytes() == gzip.decompress(FILE.read_bytes())


def test_dpo_prompt_plus_response_is_upstream_for_every_pair(real_pairs, tmp_path):
    out = tmp_path / "dpo.jsonl"
    export_records(real_pairs, "dpo", out)
    back = list(import_records(out, "dpo"))
    assert len(back) == 2312
    for a, b in zip(real_pairs, back, strict=True):
        assert (b.chosen, b.rejected, b.source) == (a.chosen, a.rejected, a.source)
        assert FORMATS["dpo"].row(a)["prompt"].endswith("\n\nAssistant:") or a.prompt_end == 0


@pytest.mark.parametrize("name", ["trl-standard", "trl-conversational", "messages", "openai"])
def test_clean_formats_round_trip_real_pairs(real_pairs, name):
    fmt = FORMATS[name]
    for p in real_pairs:
        back = fmt.read(fmt.export_row(p))
        assert normalise_transcript(back.chosen) == normalise_transcript(p.chosen), p.index
        assert normalise_transcript(back.rejected) == normalise_transcript(p.rejected), p.index


def test_audit_counts_on_real_file(real_pairs):
    from hhrlhf.checks import audit

    r = audit(data=FILE, near_duplicates=False)
    assert r.rows == 2312
    c = r.counts
    # counted on the real file (docs/hh-rlhf-facts.md): 0 identical, 0 duplicate pairs
    assert (c["identical_pair"], c["duplicate_pair"], c["bad_json"]) == (0, 0, 0)
    assert c["empty_response"] == sum("empty_response" in p.classes for p in real_pairs)
