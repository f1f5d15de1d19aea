"""The data browser's word diff: exact and minimal where affordable, bounded cost always."""

from __future__ import annotations

import gzip

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from logins import login

from hhrlhf.collect import browse
from hhrlhf.collect.browse import MAX_DIFF_STEPS, word_diff

#: few distinct words, so that the texts repeat themselves (the costly case for a diff)
WORDS = st.lists(
    st.sampled_from(["ha", "ha!", " ", "  ", "\n", "the", "cat", ".", "é"]), max_size=60
)


def _unchanged(segments) -> list[str]:
    return [t for c, t in segments if not c]


def _lcs(a: list, b: list) -> int:
    row = [0] * (len(b) + 1)
    for x in a:
        prev = 0
        for j, y in enumerate(b):
            prev, row[j + 1] = row[j + 1], prev + 1 if x == y else max(row[j + 1], row[j])
    return row[-1]


@settings(max_examples=300, deadline=None)
@given(WORDS, WORDS)
def test_the_diff_rebuilds_both_texts(a, b):
    chosen, rejected = "".join(a), "".join(b)
    d = word_diff(chosen, rejected)
    assert d.exact
    assert "".join(t for _, t in d.chosen) == chosen
    assert "".join(t for _, t in d.rejected) == rejected
    # what is left unmarked is the same on both sides (applying the diff reproduces each text)
    assert "".join(_unchanged(d.chosen)) == "".join(_unchanged(d.rejected))


@settings(max_examples=300, deadline=None)
@given(WORDS, WORDS)
def test_the_edit_script_is_a_shortest_one(a, b):
    a_changed, b_changed, _steps = browse.diff._myers(a, b, 10**9)
    kept_a = [x for x, c in zip(a, a_changed, strict=True) if not c]
    kept_b = [y for y, c in zip(b, b_changed, strict=True) if not c]
    assert kept_a == kept_b and len(kept_a) == _lcs(a, b)


def test_small_changes_are_marked_word_by_word():
    d = word_diff("Mix the flour well.", "Mix the sugar well.")
    assert [t for c, t in d.chosen if c] == ["flour"] and [t for c, t in d.rejected if c] == [
        "sugar"
    ]
    d = word_diff("ha " * 700, "ha! " * 700)
    assert d.exact and [t for c, t in d.rejected if c] == ["!"] * 700
    assert not any(c for c, _ in d.chosen)


def test_a_looping_pair_costs_a_bounded_number_of_steps():
    """The case that took ~30 s with difflib; counted in steps, not seconds."""
    d = word_diff("ha " * 700, "ha! " * 700)
    assert d.steps < MAX_DIFF_STEPS
    # two long, repetitive and different texts: the budget ends the search, a coarse diff
    a = " ".join("ab"[i * 7 % 3 % 2] for i in range(4000))
    b = " ".join("ab"[i * 5 % 7 % 2] for i in range(4000))
    d = word_diff(a, b, max_steps=50_000)
    assert not d.exact and d.steps <= 50_000 + 2 * 8000  # at most one diagonal's snake over
    assert "".join(t for _, t in d.chosen) == a and "".join(t for _, t in d.rejected) == b
    d = word_diff("same start " + a + " same end", "same start " + b + " same end", max_steps=10)
    assert not d.exact and d.steps <= 10 + len(a) + 40
    assert not d.chosen[0][0] and d.chosen[0][1].startswith("same start ")
    assert not d.chosen[-1][0] and d.chosen[-1][1].endswith(" same end")


def test_the_pair_page_says_when_the_diff_is_coarse(make_client, settings, alice, tmp_path):
    from dataclasses import replace

    root = tmp_path / "data" / "helpful-base"
    root.mkdir(parents=True)
    prompt = "\n\nHuman: Say something long.\n\nAssistant:"
    a = " ".join("ab"[i * 7 % 3 % 2] for i in range(6000))
    b = " ".join("ab"[i * 5 % 7 % 2] for i in range(6000))
    rows = [
        {"chosen": prompt + " " + a, "rejected": prompt + " " + b},
        {"chosen": prompt + " ha" * 700, "rejected": prompt + " ha!" * 700},
    ]
    with gzip.open(root / "train.jsonl.gz", "wb") as f:
        f.write(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    client = make_client(replace(settings, data=str(tmp_path / "data")))
    assert login(client, alice[2]).status_code == 303
    coarse = client.get("/data/pairs/helpful-base/train/0")
    assert coarse.status_code == 200 and 'id="coarse-diff"' in coarse.text
    exact = client.get("/data/pairs/helpful-base/train/1")
    assert exact.status_code == 200 and 'id="coarse-diff"' not in exact.text
    assert exact.text.count('<mark class="ins">') == 700


@pytest.mark.parametrize("a,b", [("", ""), ("", "x y"), ("x y", ""), ("same", "same")])
def test_edge_cases(a, b):
    d = word_diff(a, b)
    assert "".join(t for _, t in d.chosen) == a and "".join(t for _, t in d.rejected) == b
    if a == b:
        assert not any(c for c, _ in d.chosen + d.rejected)
    else:
        assert all(c for c, _ in d.chosen + d.rejected)
