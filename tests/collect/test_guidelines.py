"""The campaign's guidelines as a service, on SQLite and PostgreSQL: versions, acknowledgements,
the gate on a new conversation and the version each conversation is stamped with."""

from __future__ import annotations

import pytest
from sqlalchemy import event, select
from sqlalchemy.engine import Engine

from hhrlhf.collect.db.engine import count_statements
from hhrlhf.collect.db.models import Conversation
from hhrlhf.collect.services import annotators, guidelines
from hhrlhf.collect.services.conversations import create_conversation
from hhrlhf.errors import Conflict, Forbidden, Invalid, NotFound, TooLarge


@pytest.fixture
def people(storage):
    root, _ = annotators.add_annotator(storage, "root", role="admin")
    alice, _ = annotators.add_annotator(storage, "alice")
    return root, alice


def _start(storage, who):
    return create_conversation(storage, who, "helpful", "Plan a picnic").id


def _stamp(storage, cid):
    with storage.read() as s:
        return s.scalar(select(Conversation.guidelines_version).where(Conversation.id == cid))


def test_nothing_published_nothing_to_read_and_no_stamp(storage, people):
    _, alice = people
    st = guidelines.status(storage, alice)
    assert (st.current, st.text, st.must_acknowledge, st.blocks_new_conversations) == (
        None,
        None,
        False,
        False,
    )
    assert _stamp(storage, _start(storage, alice)) is None
    assert guidelines.versions(storage) == []


def test_publishing_numbers_the_versions_and_names_the_author(storage, people):
    root, _ = people
    v1 = guidelines.publish(storage, root, "  # Be kind\n\nAsk real questions.  \n")
    v2 = guidelines.publish(storage, root, "# Be kind\n\nAnd brief.", important=True)
    assert (v1.version, v1.important, v1.author) == (1, False, "root")
    assert (v2.version, v2.important) == (2, True)
    assert [v.version for v in guidelines.versions(storage)] == [2, 1]
    st = guidelines.status(storage, root)
    assert st.current == v2 and st.text == "# Be kind\n\nAnd brief."
    assert guidelines.status(storage, root).current.created_at is not None


def test_publishing_refuses_empty_huge_and_non_admins(storage, people):
    root, alice = people
    with pytest.raises(Invalid, match="empty"):
        guidelines.publish(storage, root, " \n\t ")
    with pytest.raises(TooLarge, match="guidelines is too long"):
        guidelines.publish(storage, root, "x" * (guidelines.MAX_GUIDELINES_CHARS + 1))
    with pytest.raises(Forbidden):
        guidelines.publish(storage, alice, "# Mine")
    assert guidelines.versions(storage) == []


def test_an_annotator_reads_before_the_first_conversation_and_is_stamped(storage, people):
    root, alice = people
    guidelines.publish(storage, root, "# Rules\n\nBe kind.")
    st = guidelines.status(storage, alice)
    assert st.must_acknowledge and st.blocks_new_conversations and st.acknowledged is None
    with pytest.raises(Conflict, match=r"guidelines \(version 1\) before your first"):
        _start(storage, alice)
    with storage.read() as s:
        assert s.scalar(select(Conversation.id)) is None  # nothing was inserted
    after = guidelines.acknowledge(storage, alice, 1)
    assert (after.acknowledged, after.must_acknowledge) == (1, False)
    assert guidelines.acknowledge(storage, alice, 1) == after  # idempotent
    assert _stamp(storage, _start(storage, alice)) == 1


def test_a_plain_change_needs_no_new_acknowledgement_an_important_one_does(storage, people):
    root, alice = people
    guidelines.publish(storage, root, "v1")
    guidelines.acknowledge(storage, alice, 1)
    guidelines.publish(storage, root, "v2: a typo fixed")
    st = guidelines.status(storage, alice)
    assert (st.current.version, st.acknowledged, st.must_acknowledge) == (2, 1, False)
    assert _stamp(storage, _start(storage, alice)) == 2
    guidelines.publish(storage, root, "v3: a new rule", important=True)
    guidelines.publish(storage, root, "v4: another typo")  # v3 still unread: still due
    assert guidelines.status(storage, alice).must_acknowledge
    with pytest.raises(Conflict, match="changed in an important way.*version 4"):
        _start(storage, alice)
    with pytest.raises(Conflict, match="not the current one"):
        guidelines.acknowledge(storage, alice, 3)
    with pytest.raises(NotFound):
        guidelines.acknowledge(storage, alice, 9)
    guidelines.acknowledge(storage, alice, 4)
    assert _stamp(storage, _start(storage, alice)) == 4


def test_admins_are_not_held_but_stamped(storage, people):
    root, _ = people
    guidelines.publish(storage, root, "v1", important=True)
    st = guidelines.status(storage, root)
    assert st.must_acknowledge and not st.blocks_new_conversations
    assert _stamp(storage, _start(storage, root)) == 1


def test_a_disabled_annotator_is_refused_as_disabled_not_for_the_guidelines(storage, people):
    root, alice = people
    guidelines.publish(storage, root, "v1")
    annotators.set_disabled(storage, "alice")
    with pytest.raises(Forbidden, match="disabled"):
        _start(storage, alice)
    with pytest.raises(Forbidden, match="disabled"):
        guidelines.acknowledge(storage, alice, 1)


def test_without_guidelines_a_new_conversation_costs_no_statement_more(storage, people):
    _, alice = people
    _start(storage, alice)  # warm: the first unit of work may read the schema version
    sent = []

    def record(conn, cursor, statement, *args):
        sent.append(statement.split()[0].upper())

    event.listen(Engine, "before_cursor_execute", record)
    try:
        with count_statements() as n:
            _start(storage, alice)
    finally:
        event.remove(Engine, "before_cursor_execute", record)
    # the insert only (the gate and the stamp are in it), and SQLite's BEGIN IMMEDIATE
    assert [s for s in sent if s != "BEGIN"] == ["INSERT"]
    assert n[0] == len(sent)


def test_the_export_tally_records_versions_only_when_some_conversation_has_one():
    tally = guidelines.GuidelinesTally()
    tally.conversations[None] += 2
    tally.add_line("helpful-base/train.jsonl.gz", None)
    assert tally.manifest() is None
    tally.conversations[1] += 1
    tally.conversations[2] += 1
    for v in (1, 1, 2):
        tally.add_line("helpful-base/train.jsonl.gz", v)
    tally.add_line("helpful-base/test.jsonl.gz", 2)
    assert tally.manifest() == {
        "conversations": {"1": 1, "2": 1, "none": 2},
        "rows": {"1": 2, "2": 2, "none": 1},
        "lines": {
            "helpful-base/test.jsonl.gz": [[2, 1]],
            "helpful-base/train.jsonl.gz": [[None, 1], [1, 2], [2, 1]],
        },
    }
