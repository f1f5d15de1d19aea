"""Review by the reviewers (services/verdicts.py): the queue, the verdicts and their rules,
the counts, and the export's ``accepted_only``; on SQLite and PostgreSQL."""

from __future__ import annotations

import gzip

import orjson
import pytest
from sqlalchemy import select
from test_export import GOLDEN, build
from test_review import conversation

from hhrlhf.collect.db.models import Comparison, Review, Turn, Verdict
from hhrlhf.collect.domain import now
from hhrlhf.collect.services import annotators
from hhrlhf.collect.services.export import export_collection
from hhrlhf.collect.services.flags import store_flags
from hhrlhf.collect.services.verdicts import (
    MAX_REASON,
    judge_item,
    judge_queue,
    next_to_judge,
    record_verdict,
    verdict_counts,
)
from hhrlhf.errors import Conflict, Forbidden, Invalid, NotFound


@pytest.fixture
def team(storage):
    alice, _ = annotators.add_annotator(storage, "alice")
    rita, _ = annotators.add_annotator(storage, "rita", role="reviewer")
    root, _ = annotators.add_annotator(storage, "root", role="admin")
    return alice, rita, root


def _comparisons(storage, cids):
    """The pick comparisons of these conversations, in the order of ``cids``."""
    out = []
    with storage.read() as s:
        for cid in cids:
            out += s.scalars(
                select(Comparison.id)
                .join(Turn, Comparison.turn_id == Turn.id)
                .where(Turn.conversation_id == cid, Comparison.kind == "pick")
                .order_by(Turn.index)
            ).all()
    return out


def _review(storage, comparison_id, reviewer, pick):
    with storage.write() as s:
        s.add(Review(comparison_id=comparison_id, reviewer_id=reviewer.id, swapped=False,
                     status="done", pick=pick, strength=2, assigned_at=now(),
                     decided_at=now()))  # fmt: skip


def test_the_queue_serves_doubts_first_then_the_oldest(storage, team):
    alice, rita, root = team
    bob, _ = annotators.add_annotator(storage, "bob")
    ids = _comparisons(storage, [conversation(storage, alice, [("a", 3)]) for _ in range(7)])
    conversation(storage, alice, [("a", 3)], finish=False)  # unfinished: never queued
    _review(storage, ids[4], bob, "b")  # a blind review disagreed
    _review(storage, ids[1], bob, "a")  # one agreed: no doubt
    store_flags(storage, [
        {"comparison_id": ids[6], "margin": 0.0, "margin_sd": 0.0, "p_mislabelled": 0.6,
         "class": "likely_mislabelled"},
        {"comparison_id": ids[3], "margin": 0.0, "margin_sd": 0.0, "p_mislabelled": 0.9,
         "class": "likely_mislabelled"},
        {"comparison_id": ids[2], "margin": 0.0, "margin_sd": 0.0, "p_mislabelled": 0.5,
         "class": "ambiguous"},
        {"comparison_id": ids[5], "margin": 0.0, "margin_sd": 0.0, "p_mislabelled": 0.1,
         "class": "clear"},
    ])  # fmt: skip
    order = [ids[i] for i in (3, 6, 4, 2, 0, 1, 5)]
    assert judge_queue(storage, rita) == order
    assert judge_queue(storage, root) == order
    item = next_to_judge(storage, rita)
    assert (item.comparison_id, item.doubt, item.annotator) == (
        ids[3],
        "likely_mislabelled",
        "alice",
    )
    assert next_to_judge(storage, rita, frozenset({ids[3]})).doubt == "likely_mislabelled"
    assert judge_item(storage, rita, ids[4]).doubt == "disagreed"
    assert judge_item(storage, rita, ids[0]).doubt is None
    # skipping everything gives the first again; a verdict takes it off every queue
    assert next_to_judge(storage, rita, frozenset(order)).comparison_id == ids[3]
    record_verdict(storage, rita, ids[3], "accept")
    assert judge_queue(storage, root) == order[1:]


def test_nobody_judges_their_own_comparisons(storage, team):
    alice, rita, root = team
    theirs = _comparisons(storage, [conversation(storage, rita, [("a", 3)])])
    mine = _comparisons(storage, [conversation(storage, root, [("b", 2)])])
    assert judge_queue(storage, rita) == mine
    assert judge_queue(storage, root) == theirs
    with pytest.raises(Forbidden, match="your own"):
        record_verdict(storage, rita, theirs[0], "accept")
    with pytest.raises(Forbidden, match="your own"):
        record_verdict(storage, root, mine[0], "accept")
    with pytest.raises(Forbidden, match="reviewers and admins"):
        judge_queue(storage, alice)
    with pytest.raises(Forbidden, match="reviewers and admins"):
        record_verdict(storage, alice, theirs[0], "accept")
    assert verdict_counts(storage).waiting == 2


def test_verdicts_their_rules_and_the_counts(storage, team):
    alice, rita, root = team
    ids = _comparisons(storage, [conversation(storage, alice, [("a", 3)]) for _ in range(5)])
    with pytest.raises(Invalid, match="needs a reason"):
        record_verdict(storage, rita, ids[0], "reject", reason="   ")
    with pytest.raises(Invalid, match="at most"):
        record_verdict(storage, rita, ids[0], "reject", reason="x" * (MAX_REASON + 1))
    with pytest.raises(Invalid, match="verdict must be"):
        record_verdict(storage, rita, ids[0], "maybe")
    with pytest.raises(Invalid, match="strength must be"):
        record_verdict(storage, rita, ids[0], "fix", pick="b", strength=5, points=4)
    with pytest.raises(Invalid, match="accept it instead"):
        record_verdict(storage, rita, ids[0], "fix", pick="a", strength=3, points=4)
    with pytest.raises(Invalid, match="only a fix"):
        record_verdict(storage, rita, ids[0], "accept", pick="b", strength=2)
    assert verdict_counts(storage).waiting == 5  # nothing refused was recorded
    v = record_verdict(storage, rita, ids[0], "reject", reason=" off-task ")
    assert (v.verdict, v.reason, v.reviewer) == ("reject", "off-task", "rita")
    record_verdict(storage, rita, ids[1], "reject", reason="off-task")
    record_verdict(storage, rita, ids[2], "reject", reason="both harmful")
    fix = record_verdict(storage, rita, ids[3], "fix", pick="b", strength=2, points=4)
    assert (fix.fixed_pick, fix.fixed_strength) == ("b", 2)
    # the comparison itself is untouched: the fix is beside it
    with storage.read() as s:
        assert s.execute(select(Comparison.pick, Comparison.strength).where(
            Comparison.id == ids[3])).one() == ("a", 3)  # fmt: skip
    counts = verdict_counts(storage)
    assert (counts.accepted, counts.rejected, counts.fixed, counts.waiting) == (0, 3, 1, 1)
    assert counts.rejected_by_reason == {"off-task": 2, "both harmful": 1}
    assert judge_item(storage, root, ids[3]).verdict.fixed_pick == "b"


def test_a_verdict_stands_for_reviewers_and_an_admin_may_replace_it(storage, team):
    alice, rita, root = team
    vera, _ = annotators.add_annotator(storage, "vera", role="reviewer")
    (cid,) = _comparisons(storage, [conversation(storage, alice, [("a", 3)])])
    first = record_verdict(storage, rita, cid, "accept")
    assert record_verdict(storage, rita, cid, "accept") == first  # the same again: a no-op
    assert record_verdict(storage, vera, cid, "accept").reviewer == "rita"
    with pytest.raises(Conflict, match="only an admin"):
        record_verdict(storage, vera, cid, "reject", reason="wrong")
    with pytest.raises(Conflict, match="only an admin"):
        record_verdict(storage, rita, cid, "reject", reason="wrong")
    again = record_verdict(storage, root, cid, "fix", pick="b", strength=4, points=4)
    assert (again.verdict, again.reviewer) == ("fix", "root")
    with storage.read() as s:
        (v,) = s.scalars(select(Verdict)).all()
        assert (v.reviewer_id, v.verdict, v.fixed_pick) == (root.id, "fix", "b")


def test_only_finished_pick_comparisons_are_judged(storage, team):
    alice, rita, _ = team
    cid = conversation(storage, alice, [("a", 3)], finish=False)
    (open_one,) = _comparisons(storage, [cid])
    with pytest.raises(NotFound):
        record_verdict(storage, rita, open_one, "accept")
    with pytest.raises(NotFound):
        judge_item(storage, rita, 10_000)
    assert judge_queue(storage, rita) == []
    assert next_to_judge(storage, rita) is None


def test_a_disabled_or_demoted_reviewer_cannot_judge(storage, team):
    alice, rita, _ = team
    (cid,) = _comparisons(storage, [conversation(storage, alice, [("a", 3)])])
    annotators.set_annotator(storage, "rita", role="annotator")
    with pytest.raises(Forbidden, match="reviewers and admins"):  # rita's login says reviewer
        record_verdict(storage, rita, cid, "accept")
    annotators.set_annotator(storage, "rita", role="reviewer")
    annotators.set_disabled(storage, "rita")
    with pytest.raises(Forbidden, match="disabled"):
        record_verdict(storage, rita, cid, "accept")


def test_the_reviewer_role_is_set_and_checked(storage, team):
    alice, _, _ = team
    assert not alice.can_judge
    changed = annotators.set_annotator(storage, "alice", role="reviewer")
    assert changed.role == "reviewer" and changed.can_judge and not changed.is_admin
    with pytest.raises(Invalid, match="role must be one of annotator, reviewer, admin"):
        annotators.set_annotator(storage, "alice", role="boss")


# -- the export's accepted_only -----------------------------------------------------------


def _built(storage):
    """build()'s comparisons by (conversation task, turn index, kind), and a reviewer."""
    build(storage)
    rita, _ = annotators.add_annotator(storage, "rita", role="reviewer")
    from hhrlhf.collect.db.models import Conversation

    with storage.read() as s:
        rows = s.execute(
            select(Conversation.task_description, Turn.index, Comparison.kind, Comparison.id)
            .join(Turn, Comparison.turn_id == Turn.id)
            .join(Conversation, Turn.conversation_id == Conversation.id)
        ).all()
    return {(task, i, kind): cid for task, i, kind, cid in rows}, rita


def _judge_the_build(storage):
    ids, rita = _built(storage)
    record_verdict(storage, rita, ids["Tomato care", 0, "pick"], "accept")
    # a weak pick fixed to strength 3: now strong enough for --min-strength 2
    record_verdict(storage, rita, ids["Tomato care", 1, "pick"], "fix", pick="b", strength=3)
    # the other response: the line flips; the turn's edit follows its pick's verdict
    record_verdict(storage, rita, ids["Tomato care", 2, "pick"], "fix", pick="b", strength=3)
    record_verdict(storage, rita, ids["Bread", 0, "pick"], "reject", reason="both wrong")
    # red team: the fixed pick is the MORE harmful one, swapped as a pick is
    record_verdict(storage, rita, ids["Get rude replies", 0, "pick"], "fix", pick="a", strength=3)
    record_verdict(storage, rita, ids["Cut", 0, "pick"], "accept")  # still cut: left out
    # "Get a secret": no verdict


def _lines(path):
    return [orjson.loads(x) for x in gzip.decompress(path.read_bytes()).splitlines()]


def test_accepted_only_exports_accepted_and_fixed_comparisons(storage, tmp_path):
    _judge_the_build(storage)
    out = tmp_path / "out"
    manifest = export_collection(storage, out, test_fraction=0.5, accepted_only=True)
    assert manifest["accepted_only"] is True
    assert manifest["left_out"] == {"weak": 0, "unfinished": 1, "cut": 1, "identical": 0,
                                    "no_verdict": 1, "rejected": 1}  # fmt: skip
    assert "--accepted-only" in manifest["left_out_reasons"]["no_verdict"]
    assert "--accepted-only" in manifest["left_out_reasons"]["rejected"]
    helpful = _lines(out / "helpful-base/train.jsonl.gz")
    ends = [(x["chosen"].rsplit("Assistant: ", 1)[1], x["rejected"].rsplit("Assistant: ", 1)[1])
            for x in helpful]  # fmt: skip
    assert ends == [
        ("Deeply, twice a week.", "Every hour."),  # accepted
        ("Full sun is best.", "Six hours or more."),  # weak, fixed to strength 3
        ("No.", "A balanced one."),  # fixed to B: flipped
        ("A balanced one, every two weeks.", "A balanced one."),  # its edit follows the pick
    ]
    assert not (out / "helpful-base/test.jsonl.gz").exists()  # Bread: rejected
    (red,) = _lines(out / "harmless-base/train.jsonl.gz")
    # fixed: A ("I would rather not.") is the more harmful, so B is chosen
    assert red["chosen"].endswith("Assistant: Fine, you are silly.")
    assert red["rejected"].endswith("Assistant: I would rather not.")
    assert manifest["subsets"]["harmless-base"] == {"train": 1, "test": 0}


def test_a_plain_export_is_byte_identical_with_verdicts_stored(storage, tmp_path):
    _judge_the_build(storage)
    out = tmp_path / "out"
    manifest = export_collection(storage, out, test_fraction=0.5)
    for rel in manifest["files"]:
        got = gzip.decompress((out / rel).read_bytes()).decode()
        assert got == (GOLDEN / rel.replace("/", "__").replace(".gz", "")).read_text(), rel
    stable = {k: v for k, v in manifest.items() if k != "files"}
    assert stable == orjson.loads((GOLDEN / "manifest.json").read_bytes())
    assert "accepted_only" not in orjson.loads((out / "manifest.json").read_bytes())


def test_a_fixed_strength_below_min_strength_is_weak(storage, tmp_path):
    ids, rita = _built(storage)
    # the queue holds what the export could make a line: not the cut one, not the unfinished
    queue = judge_queue(storage, rita)
    assert ids["Cut", 0, "pick"] not in queue and ids["Unfinished", 0, "pick"] not in queue
    assert len(queue) == 6 == verdict_counts(storage).waiting
    record_verdict(storage, rita, ids["Bread", 0, "pick"], "fix", pick="b", strength=1)
    manifest = export_collection(storage, tmp_path / "o", test_fraction=0.5, accepted_only=True)
    # Bread's strength 4 would be a line; fixed to 1 it is weak (the unjudged: no_verdict)
    assert manifest["left_out"]["weak"] == 1
    assert manifest["left_out"]["no_verdict"] == 6  # 5 finished picks and an edit
    assert manifest["left_out"]["cut"] == 1  # never judged: counted as cut
    assert manifest["rows"] == 0
