"""Per-annotator weekly trends and drift flags (services/trends.py), on SQLite and PostgreSQL,
over comparisons, reviews and gold reviews planted at chosen times."""

from __future__ import annotations

from datetime import timedelta

import pytest
from test_review import conversation
from trends_rows import NOW, gold, plant, review, week_start

from hhrlhf.collect.services import annotators
from hhrlhf.collect.services.trends import (
    MIN_RATED,
    MIN_TURNS,
    READING_WORDS_PER_SECOND,
    TOO_FAST_SHARE,
    annotator_trends,
)
from hhrlhf.errors import Invalid

DAY = timedelta(days=1)
HOUR = timedelta(hours=1)


def _people(storage, *names):
    return [annotators.add_annotator(storage, n)[0].id for n in names]


def _by_name(trends):
    return {a.name: a for a in trends.annotators}


def test_each_metric_of_an_annotators_week(storage):
    alice, bob, carol = _people(storage, "alice", "bob", "carol")
    w46 = week_start(2) + DAY
    first = plant(storage, alice, w46, [10, 20, 30, None], picks="aaba")
    # message sent 1 s before the pick: 20 words need 2.5 s at 8 words/s
    plant(storage, alice, w46 + HOUR, [0.5], picks="b", read=[1.0])
    plant(storage, alice, w46, [1, 1, 1], identical=True)  # an identical pair is no comparison
    plant(storage, alice, week_start(4), [5, 5])  # before the window
    review(storage, [first[0], first[1]], bob, "a", w46)  # agrees, agrees
    review(storage, [first[0]], carol, "a", w46)  # agrees: every review picks as alice
    review(storage, [first[1]], carol, "b", w46)  # one review disagrees: not agreed
    review(storage, [first[2]], bob, "a", w46)  # alice picked b: disagrees
    gold(storage, alice, "aab", week_start(1))
    plant(storage, alice, week_start(0) + HOUR, [4, 4, 4])  # Monday of this week
    plant(storage, alice, NOW - HOUR, [6, 6])  # today

    trends = annotator_trends(storage, weeks=4, now=NOW)

    assert [w.label for w in trends.weeks] == ["2026-W45", "2026-W46", "2026-W47", "2026-W48"]
    assert trends.weeks[0].start == "2026-11-02"
    a = _by_name(trends)["alice"]
    assert (a.turns_today, a.turns_this_week) == (2, 5)
    w45, w46p, w47, w48 = a.weeks
    assert w45.turns == 0 and w45.median_seconds is None and w45.share_a is None
    assert (w46p.turns, w46p.timed) == (5, 4)
    assert w46p.median_seconds == 15.0  # of 10, 20, 30 and 0.5 (the pick without shown_at out)
    assert w46p.share_a == 0.6
    assert w46p.too_fast == 0.2
    assert (w46p.reviewed, w46p.agreement) == (3, pytest.approx(1 / 3, abs=1e-4))
    assert (w46p.gold, w46p.gold_accuracy) == (0, None)
    assert (w47.turns, w47.gold, w47.gold_accuracy) == (0, 3, pytest.approx(2 / 3, abs=1e-4))
    assert (w48.turns, w48.median_seconds) == (5, 4.0)  # of 4, 4, 4, 6, 6
    b = _by_name(trends)["bob"]
    assert b.turns_today == b.turns_this_week == 0
    assert all(p.turns == 0 and p.gold_accuracy is None for p in b.weeks)
    assert [x.name for x in trends.annotators] == ["alice", "bob", "carol"]


def test_the_a_share_counts_the_slot_shown_first(storage):
    """Choices made through the loop: the pick is the slot as the conversation page shows it
    (slot a first, labelled A; tests/collect/test_trends_api.py checks the page)."""
    who, _ = annotators.add_annotator(storage, "alice")
    conversation(storage, who, [("a", 3), ("a", 1), ("b", 2), ("a", 4)])
    week = annotator_trends(storage, weeks=1).annotators[0].weeks[-1]
    assert (week.turns, week.share_a) == (4, 0.75)
    assert week.timed == 4 and week.median_seconds is not None


def test_weeks_out_of_range_are_refused(storage):
    for weeks in (0, 53):
        with pytest.raises(Invalid, match="weeks must be 1 to 52"):
            annotator_trends(storage, weeks=weeks, now=NOW)


def test_reading_time_counts_from_the_message_and_grows_with_the_words(storage):
    """The responses stream from the message on: a pick 1 s after they completed is not too
    fast when they took 40 s to write. Two responses of 100 words need 25 s."""
    alice, bob, carol = _people(storage, "alice", "bob", "carol")
    at = week_start(0)
    plant(storage, alice, at, [1.0] * 4, read=[40.0, 40.0, 2.0, 2.0])
    plant(storage, bob, at, [1.0] * 4, read=[24.0, 24.0, 24.0, 26.0], words_each=100)
    plant(storage, carol, at, [1.0] * 2, read=[24.0, 26.0], words_each=10)
    people = _by_name(annotator_trends(storage, weeks=1, now=NOW))
    assert [people[n].weeks[0].too_fast for n in ("alice", "bob", "carol")] == [0.5, 0.75, 0.0]


def _fast(storage, who, n, fast, at):
    """``n`` picks, the first ``fast`` of them sooner than their 20 words can be read."""
    assert fast / READING_WORDS_PER_SECOND < 2.5  # (the planted texts: 2 x 10 words)
    read = [1.0] * fast + [30.0] * (n - fast)
    plant(storage, who, at, [10.0] * n, read=read)


def test_too_fast_to_read_flags_above_its_share_and_only_with_enough_picks(storage):
    alice, bob, carol = _people(storage, "alice", "bob", "carol")
    at = week_start(0)
    _fast(storage, alice, MIN_TURNS, int(MIN_TURNS * TOO_FAST_SHARE), at)  # 20%: not above
    _fast(storage, bob, MIN_TURNS, int(MIN_TURNS * TOO_FAST_SHARE) + 1, at)  # 25%
    _fast(storage, carol, MIN_TURNS - 1, 10, at)  # too few picks to judge
    people = _by_name(annotator_trends(storage, weeks=2, now=NOW))
    assert people["alice"].weeks[-1].too_fast == 0.2
    assert people["alice"].flags == () and people["carol"].flags == ()
    (flag,) = people["bob"].flags
    assert (flag.week, flag.metric, flag.against) == ("2026-W48", "too_fast", "reading")
    assert flag.reason == "25% of picks faster than the text can be read in 2026-W48"


def test_a_week_far_from_the_annotators_own_median_is_flagged(storage):
    alice, bob, carol = _people(storage, "alice", "bob", "carol")
    for who, last, n in ((alice, 30, MIN_TURNS), (bob, 31, MIN_TURNS), (carol, 60, MIN_TURNS - 1)):
        for back in (3, 2, 1):
            plant(storage, who, week_start(back), [20.0] * MIN_TURNS)
        plant(storage, who, week_start(0), [float(last)] * n)
    people = _by_name(annotator_trends(storage, weeks=4, now=NOW))
    # the band around 20 s: max(3 x MAD = 0, half the median = 10 s); 30 s is on its edge
    assert people["alice"].flags == ()
    assert people["carol"].flags == ()  # 19 timed picks: not judged
    (flag,) = people["bob"].flags
    assert (flag.week, flag.metric, flag.against) == ("2026-W48", "median_seconds", "own")
    assert (flag.value, flag.usual) == (31.0, 20.0)
    assert flag.reason == "median 31 s per turn in 2026-W48 against 20 s usual"


def test_a_week_far_from_the_teams_median_is_flagged(storage):
    """Around the others' 50%, a share of 20 picks swings by chance: the band is 3 binomial
    standard errors, 3 x sqrt(0.5 x 0.5 / 20) = 33.5 points (more than the 20-point floor)."""
    names = ("alice", "bob", "dan", "erin", "fay", "gil")
    alice, bob, dan, erin, fay, gil = _people(storage, *names)
    at = week_start(0)
    for who in (dan, erin, fay):
        plant(storage, who, at, [10.0] * MIN_TURNS, picks="ab" * (MIN_TURNS // 2))
    plant(storage, alice, at, [10.0] * 20, picks="a" * 16 + "b" * 4)  # 80%: inside the band
    plant(storage, bob, at, [10.0] * 20, picks="a" * 17 + "b" * 3)  # 85%
    plant(storage, gil, at, [10.0] * 19, picks="a" * 19)  # too few picks to judge
    people = _by_name(annotator_trends(storage, weeks=1, now=NOW))
    assert {n: len(people[n].flags) for n in names} == {n: int(n == "bob") for n in names}
    (flag,) = people["bob"].flags
    assert (flag.metric, flag.against, flag.value, flag.usual) == ("share_a", "team", 0.85, 0.5)
    assert flag.reason == "A-share 85% in 2026-W48 against 50% for the team that week"


def test_agreement_far_from_the_team_is_flagged_with_enough_reviews(storage):
    names = ("alice", "bob", "dan", "erin", "fay", "gil")
    *people, rev = _people(storage, *names, "rev")
    at = week_start(0)
    agreed = {"dan": 10, "erin": 10, "fay": 10, "alice": 8, "bob": 7, "gil": 0}
    for name, who in zip(names, people, strict=True):
        n = MIN_RATED - 1 if name == "gil" else MIN_RATED
        ids = plant(storage, who, at, [10.0] * n)  # every pick "a"
        review(storage, ids[: agreed[name]], rev, "a", at)
        review(storage, ids[agreed[name] :], rev, "b", at)
    by = _by_name(annotator_trends(storage, weeks=1, now=NOW))
    assert by["alice"].weeks[0].agreement == 0.8 and by["alice"].flags == ()
    assert by["gil"].weeks[0].agreement == 0.0 and by["gil"].flags == ()
    (flag,) = by["bob"].flags
    assert (flag.metric, flag.against, flag.usual) == ("agreement", "team", 1.0)
    assert flag.reason == "agreement 70% in 2026-W48 against 100% for the team that week"
    assert [n for n in names if by[n].flags] == ["bob"]


def test_gold_accuracy_far_from_the_team_is_flagged_with_enough_gold(storage):
    names = ("alice", "bob", "dan", "erin", "fay", "gil")
    people = _people(storage, *names)
    picks = {
        "dan": "a" * 10,
        "erin": "a" * 10,
        "fay": "a" * 10,
        "alice": "a" * 8 + "bb",
        "bob": "a" * 7 + "bbb",
        "gil": "b" * (MIN_RATED - 1),
    }
    for name, who in zip(names, people, strict=True):
        gold(storage, who, picks[name], week_start(0))
    by = _by_name(annotator_trends(storage, weeks=1, now=NOW))
    assert by["alice"].weeks[0].gold_accuracy == 0.8
    assert by["gil"].weeks[0].gold_accuracy == 0.0
    assert [n for n in names if by[n].flags] == ["bob"]
    (flag,) = by["bob"].flags
    assert (flag.metric, flag.against) == ("gold_accuracy", "team")
    assert flag.reason == "gold accuracy 70% in 2026-W48 against 100% for the team that week"
