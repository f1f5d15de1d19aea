"""Tasks, assignment and quotas in the database (SQLite and PostgreSQL): importing task files,
the order tasks are handed out in, red-team tasks, concurrent claims, free conversations,
targets and the campaign's total."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import select, update
from test_review import PTS, make_turn

from hhrlhf.collect.db.models import Comparison, Conversation, Task
from hhrlhf.collect.services import annotators, assign, campaign, choices, conversations, tasks
from hhrlhf.collect.services.campaign import CampaignTotal, Targets
from hhrlhf.errors import Conflict, DataFormatError, Forbidden, Invalid, NotFound


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _start(storage, who, text=None, mode="helpful"):
    """A new conversation: ``text`` None asks for the next task."""
    return conversations.create_conversation(storage, who, mode, text)


def _task_of(storage, cid):
    with storage.read() as s:
        return s.scalar(select(Conversation.task_id).where(Conversation.id == cid))


def _served(storage):
    with storage.read() as s:
        return {t.text: (t.served, t.repeat) for t in s.scalars(select(Task))}


def _pick(storage, who, cid, i=0):
    tid = make_turn(storage, who, cid, f"Question {i}?", f"Answer A{i}.", f"Answer B{i}.")
    choices.record_choice(storage, who, tid, pick="a", strength=2, strength_points=PTS)


@pytest.fixture
def people(storage):
    return [annotators.add_annotator(storage, n)[0] for n in ("alice", "bob", "carol")]


# -- import ----------------------------------------------------------------------------------


def test_a_jsonl_file_imports_with_defaults_and_duplicates_are_skipped_and_said(storage, tmp_path):
    path = _write(
        tmp_path,
        "tasks.jsonl",
        '{"text": "Plan a garden"}\n'
        "\n"
        '{"text": "Get the model to insult you", "mode": "red-team", "repeat": 3, '
        '"tags": ["insults", "easy"]}\n'
        '{"text": "Plan a garden", "repeat": 2}\n',
    )
    report = tasks.import_tasks(storage, path)
    assert report.imported == 2 and report.errors == ()
    assert report.skipped == (f"{path}, line 4: skipped: the same text and mode as line 1",)
    got = {t.text: t for t in tasks.list_tasks(storage)}
    assert got["Plan a garden"].mode == "helpful" and got["Plan a garden"].repeat == 1
    red = got["Get the model to insult you"]
    assert (red.mode, red.repeat, red.tags, red.served) == ("red-team", 3, ("insults", "easy"), 0)
    again = tasks.import_tasks(storage, path)  # already in the database: nothing added
    assert again.imported == 0 and len(again.skipped) == 3
    assert again.skipped[0].endswith(f"skipped: already task {got['Plan a garden'].id}")
    assert len(tasks.list_tasks(storage)) == 2


def test_a_csv_file_imports_with_tags_split_on_semicolons(storage, tmp_path):
    path = _write(
        tmp_path,
        "tasks.csv",
        '\ufefftext,mode,repeat,tags\n"Write a poem, short",helpful,2,poems;short\n'
        "Ask for a lock-picking guide,red-team,,\n",
    )
    assert tasks.import_tasks(storage, path).imported == 2
    got = {t.text: t for t in tasks.list_tasks(storage)}
    assert got["Write a poem, short"].tags == ("poems", "short")
    assert got["Write a poem, short"].repeat == 2
    assert got["Ask for a lock-picking guide"].repeat == 1
    assert got["Ask for a lock-picking guide"].tags == ()


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"text": "x", "repeat": 0}', "repeat must be a whole number >= 1, not 0"),
        ('{"text": "x", "mode": "evil"}', "mode 'evil'; expected one of: helpful, red-team"),
        ('{"text": "   "}', "the task's text is empty"),
        ('{"text": "' + "y" * 5001 + '"}', "the task's text is 5,001 characters; at most 5,000"),
        ('{"text": "x", "colour": 1}', "unknown key 'colour'"),
        ("{not json", "not JSON"),
        ('{"text": "x", "tags": "a;b"}', "tags must be a list"),
        ('{"mode": "helpful"}', "the task has no text"),
        ('{"text": 7}', "text must be a string, not int"),
    ],
)
def test_a_bad_line_stops_a_strict_import_naming_file_and_line(storage, tmp_path, line, problem):
    path = _write(tmp_path, "t.jsonl", '{"text": "good one"}\n' + line + "\n")
    with pytest.raises(DataFormatError) as err:
        tasks.import_tasks(storage, path)
    assert err.value.line == 2
    assert str(err.value).startswith(f"{path}, line 2: {problem}")
    assert "nothing imported" in str(err.value)
    assert tasks.list_tasks(storage) == []


def test_a_lenient_import_keeps_the_good_lines_and_reports_every_bad_one(storage, tmp_path):
    path = _write(
        tmp_path,
        "t.csv",
        'text,mode,repeat,tags\nfine,helpful,1,\nbad,helpful,-2,\n" ",helpful,1,\n',
    )
    report = tasks.import_tasks(storage, path, strict=False)
    assert report.imported == 1
    assert report.errors == (
        f"{path}, line 3: repeat must be a whole number >= 1, not -2",
        f"{path}, line 4: the task's text is empty",
    )


def test_a_dry_run_stores_nothing_and_a_bad_header_is_named(storage, tmp_path):
    path = _write(tmp_path, "t.jsonl", '{"text": "one"}\n{"text": "two"}\n')
    report = tasks.import_tasks(storage, path, dry_run=True)
    assert (report.imported, report.dry_run) == (2, True)
    assert tasks.list_tasks(storage) == []
    bad = _write(tmp_path, "t.csv", "prompt,mode\nx,helpful\n")
    with pytest.raises(DataFormatError, match=r"line 1: the header must be text,mode,repeat,tags"):
        tasks.import_tasks(storage, bad)


def test_add_list_and_disable(storage):
    t = tasks.add_task(storage, "Ask about tides", "helpful", 2, ["sea"])
    assert (t.served, t.repeat, t.tags, t.disabled) == (0, 2, ("sea",), False)
    with pytest.raises(Conflict, match=f"task {t.id} already has this text and mode"):
        tasks.add_task(storage, "Ask about tides")
    with pytest.raises(Invalid, match="repeat must be"):
        tasks.add_task(storage, "Other", repeat=0)
    assert tasks.set_task_disabled(storage, t.id).disabled
    assert [x.disabled for x in tasks.list_tasks(storage)] == [True]
    with pytest.raises(NotFound):
        tasks.set_task_disabled(storage, t.id + 99)


# -- assignment ------------------------------------------------------------------------------


def test_least_served_first_then_the_oldest_and_never_the_same_task_twice(storage, people):
    alice, bob, carol = people
    first = tasks.add_task(storage, "First", repeat=3)
    tasks.add_task(storage, "Second", repeat=3)
    c1 = _start(storage, alice)
    assert c1.task_description == "First" and _task_of(storage, c1.id) == first.id
    # bob: Second was served less than First
    assert _start(storage, bob).task_description == "Second"
    # carol: both served once; the oldest
    assert _start(storage, carol).task_description == "First"
    # alice had First: she gets Second
    assert _start(storage, alice).task_description == "Second"
    # alice has had both: none is left for her, so she writes her own (free conversations on)
    with pytest.raises(Invalid, match="no task is left"):
        _start(storage, alice)
    assert _served(storage) == {"First": (2, 3), "Second": (2, 3)}
    assert _start(storage, alice, "My own").task_description == "My own"


def test_a_task_is_served_at_most_repeat_times_and_disabled_ones_never(storage, people):
    alice, bob, carol = people
    tasks.add_task(storage, "Once", repeat=1)
    off = tasks.add_task(storage, "Off", repeat=5)
    tasks.set_task_disabled(storage, off.id)
    assert _start(storage, alice).task_description == "Once"
    with pytest.raises(Invalid):
        _start(storage, bob)  # Once is used up; Off is disabled
    assert _served(storage) == {"Once": (1, 1), "Off": (0, 5)}


def test_red_team_tasks_go_only_to_annotators_allowed_red_team(storage, people):
    alice, bob, _ = people
    annotators.set_annotator(storage, "bob", attributes={"red_team": False})
    bob = annotators.annotator_by_name(storage, "bob")
    tasks.add_task(storage, "Attack", "red-team", repeat=2)
    tasks.add_task(storage, "Help", "helpful", repeat=2)
    got = _start(storage, bob)
    assert (got.task_description, got.mode) == ("Help", "helpful")
    with pytest.raises(Invalid):
        _start(storage, bob)  # only the red-team task is left, and not for bob
    red = _start(storage, alice)
    assert (red.task_description, red.mode) == ("Attack", "red-team")  # its own mode
    with pytest.raises(Forbidden, match="not allowed red-team"):
        _start(storage, bob, "My own attack", mode="red-team")
    assert assign.my_progress(storage, bob).next_task is None


def test_two_claims_of_the_last_repeat_give_it_to_one_and_the_next_task_to_the_other(
    storage, people
):
    """Bob reads the open tasks while alice's claim of the last repeat is not committed yet
    (PostgreSQL: his claim waits for her row lock, then finds it taken; SQLite: his
    transaction waits for hers)."""
    alice, bob, _ = people
    last = tasks.add_task(storage, "Last repeat", repeat=1)
    spare = tasks.add_task(storage, "Spare", repeat=1)
    claimed = threading.Event()
    got: dict[str, int | None] = {}

    def claim(who, hold):
        with storage.write() as s:
            got[who.name] = assign.start_conversation(s.connection(), who, "helpful", None).task_id
            if hold:  # the claim holds until bob's is under way
                claimed.set()
                time.sleep(0.5)

    first = threading.Thread(target=claim, args=(alice, True))
    first.start()
    assert claimed.wait(10)
    claim(bob, False)
    first.join()
    assert got == {"alice": last.id, "bob": spare.id}
    assert _served(storage) == {"Last repeat": (1, 1), "Spare": (1, 1)}


def test_one_annotators_two_starts_at_once_get_two_tasks_and_keep_the_quota(storage, people):
    """Alice starts in two tabs at once: the second start waits for the first (her row is
    locked), then sees its conversation: another task, and a quota of one is kept."""
    alice = people[0]
    one = tasks.add_task(storage, "One", repeat=5)
    two = tasks.add_task(storage, "Two", repeat=5)
    tasks.add_task(storage, "Three", repeat=5)
    started = threading.Event()
    got: list[int | None] = []

    def start(hold):
        with storage.write() as s:
            conn = s.connection()
            start = assign.start_conversation(conn, alice, "helpful", None)
            values = _row(alice, start)
            conn.execute(Conversation.__table__.insert().values(**values))
            got.append(start.task_id)
            if hold:  # the first start holds until the second is under way
                started.set()
                time.sleep(0.5)

    first = threading.Thread(target=start, args=(True,))
    first.start()
    assert started.wait(10)
    start(False)
    first.join()
    assert sorted(got) == [one.id, two.id]
    campaign.set_targets(storage, "root", Targets(unit="conversations", per_day=3))
    started.clear()
    first = threading.Thread(target=start, args=(True,))
    first.start()
    assert started.wait(10)
    with pytest.raises(Conflict, match="today's target of 3"):
        start(False)
    first.join()


def _row(who, start):
    return dict(
        uid=f"{who.id}-{start.task_id}-{time.monotonic_ns()}",
        annotator_id=who.id,
        mode=start.mode,
        task_description=start.task_description,
        status="open",
        created_at=datetime.now(timezone.utc),
        task_id=start.task_id,
    )


def test_a_claim_whose_task_was_taken_since_it_was_read_takes_the_next(storage, people):
    alice = people[0]
    first = tasks.add_task(storage, "Taken", repeat=1)
    tasks.add_task(storage, "Next", repeat=1)
    with storage.write() as s:
        conn = s.connection()
        rows = conn.execute(assign._open_tasks(alice.id, True)).all()  # read before the race
        assert [r[0] for r in rows][0] == first.id
        conn.execute(update(Task).where(Task.id == first.id).values(served=1))  # someone else
        assert assign._claim_first(conn, rows).text == "Next"
    assert _served(storage) == {"Taken": (1, 1), "Next": (1, 1)}


def test_free_conversations_off_leaves_only_the_tasks(storage, people):
    alice, bob, _ = people
    campaign.set_free_conversations(storage, "root", False)
    with pytest.raises(Forbidden, match="Conversations of your own are off"):
        _start(storage, alice, "My own")
    with pytest.raises(Conflict, match="No task is left for you"):
        _start(storage, alice)
    tasks.add_task(storage, "Only task")
    assert _start(storage, alice).task_description == "Only task"
    progress = assign.my_progress(storage, bob)
    assert progress.refused is not None and not progress.free_allowed
    campaign.set_free_conversations(storage, "root", True)
    assert _start(storage, bob, "Mine again").task_description == "Mine again"


def test_without_a_campaign_everything_is_as_before(storage, people):
    alice = people[0]
    c = _start(storage, alice, "  Plan dinners  ")
    assert c.task_description == "Plan dinners" and _task_of(storage, c.id) is None
    with pytest.raises(Invalid, match="task_description is empty"):
        _start(storage, alice, "  ")
    p = assign.my_progress(storage, alice)
    assert (p.targets, p.next_task, p.refused, p.free_allowed) == (None, None, None, True)
    assert campaign.campaign(storage) == campaign.Campaign(changed={})


# -- targets and quotas ----------------------------------------------------------------------


def test_a_daily_turn_target_refuses_new_conversations_until_the_next_utc_day(storage, people):
    alice, bob, _ = people
    campaign.set_targets(storage, "root", Targets("turns", per_day=2))
    cid = _start(storage, alice, "Chat").id
    _pick(storage, alice, cid, 0)
    _start(storage, alice, "Chat again")  # 1 turn of 2: still open
    _pick(storage, alice, cid, 1)
    with pytest.raises(Conflict) as err:
        _start(storage, alice, "A third")
    assert str(err.value) == (
        "You have reached today's target of 2 turns; new conversations open again tomorrow (UTC)."
    )
    _start(storage, bob, "Bob has his own count")
    tomorrow = datetime.now(timezone.utc) + timedelta(days=1)
    p = assign.my_progress(storage, alice, at=tomorrow)
    assert p.refused is None and p.counts.today == 0 and p.counts.total == 2
    assert assign.my_progress(storage, alice).counts.today == 2


def test_a_total_in_conversations_and_an_annotators_own_target(storage, people):
    alice, bob, _ = people
    campaign.set_targets(storage, "root", Targets("conversations", total=1))
    campaign.set_targets(storage, "root", Targets("conversations", total=3), annotator="bob")
    _start(storage, alice, "one")
    with pytest.raises(Conflict, match="You have reached your target of 1 conversation:"):
        _start(storage, alice, "two")
    for i in range(3):
        _start(storage, bob, f"bob {i}")
    with pytest.raises(Conflict, match="your target of 3 conversations"):
        _start(storage, bob, "bob 4")
    board = {a.name: a for a in assign.campaign_progress(storage).annotators}
    assert board["bob"].counts.total == 3 and board["bob"].targets.total == 3
    assert board["alice"].reached and board["carol"].reached is None
    with pytest.raises(NotFound):
        campaign.set_targets(storage, "root", Targets(total=1), annotator="nobody")


def test_a_weekly_target_counts_from_monday_utc(storage, people):
    alice = people[0]
    campaign.set_targets(storage, "root", Targets("conversations", per_week=1))
    _start(storage, alice, "this week")
    with pytest.raises(Conflict, match="this week's target of 1 conversation; .* Monday"):
        _start(storage, alice, "again")
    monday = campaign.week_start(datetime.now(timezone.utc)) + timedelta(days=7)
    assert assign.my_progress(storage, alice, at=monday).refused is None
    assert campaign.week_start(datetime(2026, 11, 28, 15, tzinfo=timezone.utc)) == datetime(
        2026, 11, 23, tzinfo=timezone.utc
    )


def test_the_campaign_closes_at_its_total_and_running_conversations_finish(storage, people):
    alice, bob, _ = people
    campaign.set_campaign_total(storage, "root", CampaignTotal("turns", 2))
    running = _start(storage, alice, "Running").id
    _pick(storage, alice, running, 0)
    other = _start(storage, bob, "Bob's").id
    _pick(storage, bob, other, 0)
    with pytest.raises(Conflict) as err:
        _start(storage, bob, "More")
    assert str(err.value) == (
        "The campaign has reached its target of 2 turns and is closed to new conversations."
    )
    # the running conversation takes its next message and choice
    _pick(storage, alice, running, 1)
    conversations.finish_conversation(storage, alice, running)
    with storage.read() as s:
        assert s.scalar(select(Comparison.id).where(Comparison.kind == "pick").limit(1))
    board = assign.campaign_progress(storage)
    assert (board.count, board.closed) == (3, True)
    assert not assign.my_progress(storage, alice).campaign_open
    campaign.set_campaign_total(storage, "root", None)  # reopened
    assert _start(storage, bob, "Reopened").id


def test_settings_are_validated_and_say_who_set_them(storage):
    with pytest.raises(Invalid, match="unit 'hours'"):
        campaign.set_targets(storage, "root", Targets("hours", per_day=1))
    with pytest.raises(Invalid, match="per_day must be a whole number >= 1"):
        campaign.set_targets(storage, "root", Targets(per_day=0))
    with pytest.raises(Invalid, match="the campaign total must be"):
        campaign.set_campaign_total(storage, "root", CampaignTotal("turns", -1))
    c = campaign.set_targets(storage, "admin-ann", Targets(per_day=40))
    assert c.targets == Targets("turns", 40, None, None)
    assert c.changed["targets"][0] == "admin-ann"
    assert campaign.set_targets(storage, "root", None).targets == Targets()
