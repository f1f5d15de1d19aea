"""PreferencePair alignment and classes: a fixture that triggers each class and one that does not."""

from __future__ import annotations

import pytest

from hhrlhf.reader import attempt_from_object
from hhrlhf.records import PAIR_CLASSES, PreferencePair, RedTeamAttempt, classify_pair

P = "\n\nHuman: Any tips for a first garden?\n\nAssistant:"
CLEAN = PreferencePair(P + " Start small with herbs.", P + " Plant everything at once.")

# name -> (a pair that has the class, given as chosen/rejected)
TRIGGERS = {
    "empty_response": (P + " ", P + " Start with herbs."),
    "response_contains_turns": (
        P + " Herbs.\n\nHuman: which ones?\n\nAssistant: Basil.",
        P + " Tomatoes.",
    ),
    "non_alternating": (
        "\n\nHuman: hi\n\nHuman: hello?\n\nAssistant: Hi!",
        "\n\nHuman: hi\n\nHuman: hello?\n\nAssistant: What?",
    ),
    "inline_speaker_label": (
        P + " My friend wrote  Human: plant basil first.",
        P + " Water daily.",
    ),
    "identical_pair": (P + " Herbs.", P + " Herbs."),
    "diverges_before_final_turn": (
        "\n\nHuman: a\n\nAssistant: b\n\nHuman: c\n\nAssistant: d",
        "\n\nHuman: a\n\nAssistant: b\n\nHuman: X\n\nAssistant: d",
    ),
    "no_prompt": ("\n\nHuman: only a question", "\n\nHuman: another question"),
}


def test_every_class_has_a_trigger():
    assert set(TRIGGERS) == set(PAIR_CLASSES)


@pytest.mark.parametrize("name", sorted(TRIGGERS))
def test_class_is_triggered(name):
    chosen, rejected = TRIGGERS[name]
    assert name in PreferencePair(chosen, rejected).classes
    assert name in classify_pair(chosen, rejected)


def test_clean_pair_has_no_class():
    assert CLEAN.classes == frozenset()


@pytest.mark.parametrize("name", sorted(TRIGGERS))
def test_reconstruction_holds_for_every_trigger(name):
    pair = PreferencePair(*TRIGGERS[name])
    assert pair.prompt + pair.chosen_response == pair.chosen
    assert pair.prompt + pair.rejected_response == pair.rejected


def test_prompt_and_responses():
    chosen, rejected = TRIGGERS["response_contains_turns"]
    pair = PreferencePair(chosen, rejected, "harmless-base", "test", 7)
    assert pair.prompt == P
    assert pair.chosen_response == " Herbs.\n\nHuman: which ones?\n\nAssistant: Basil."
    assert pair.rejected_response == " Tomatoes."
    assert pair.human_turns == 1
    assert [t.role for t in pair.prompt_dialogue.turns] == ["Human"]
    assert pair.source == {"subset": "harmless-base", "split": "test", "index": 7}
    assert pair.to_dict(source=True) == {
        "chosen": chosen,
        "rejected": rejected,
        "subset": "harmless-base",
        "split": "test",
        "index": 7,
    }
    view = pair.to_view()
    assert list(view) == [
        *("subset", "split", "index", "prompt", "chosen_response", "rejected_response"),
        "classes",
    ]
    assert view["prompt"] == P and view["rejected_response"] == " Tomatoes."
    assert view["classes"] == sorted(pair.classes) and "response_contains_turns" in view["classes"]
    full = pair.to_view(full=True)
    assert list(full) == [*list(view)[:-1], "human_turns", "classes", "chosen", "rejected"]
    assert (full["human_turns"], full["chosen"], full["rejected"]) == (1, chosen, rejected)


def test_pairs_compare_by_content_and_source_not_by_cached_offset():
    a = PreferencePair("x", "y", "s", "train", 1)
    assert a == PreferencePair("x", "y", "s", "train", 1)
    assert a != PreferencePair("x", "y", "s", "train", 2)
    assert hash(a) == hash(PreferencePair("x", "y", "s", "train", 1))
    with pytest.raises(AttributeError):
        a.chosen = "z"  # frozen


def test_red_team_params_and_success():
    obj = {
        "transcript": "\n\nHuman: hi\n\nAssistant: hello\n\nHuman: bye",
        "min_harmlessness_score_transcript": 0.1,
        "num_params": "13B",
        "model_type": "rlhf",
        "rating": 3,
        "task_description": "t",
        "task_description_harmlessness_score": 0.0,
        "red_team_member_id": 1,
        "is_upworker": False,
        "tags": None,
    }
    a = attempt_from_object(obj)
    assert isinstance(a, RedTeamAttempt)
    assert a.params == 13e9 and a.successful and a.human_turns == 2 and a.score_is_finite
    assert attempt_from_object(dict(obj, rating=2.5)).successful is False
    odd = attempt_from_object(dict(obj, num_params="350M"))
    assert odd.params == 350e6
    assert attempt_from_object(dict(obj, num_params="huge")).params is None


def test_pairs_are_untracked_by_the_garbage_collector():
    import copy
    import gc
    import pickle

    from hhrlhf import records

    p = PreferencePair("\n\nHuman: a\n\nAssistant: b", "\n\nHuman: a\n\nAssistant: c", "s", "t", 1)
    assert not gc.is_tracked(p)
    for q in (pickle.loads(pickle.dumps(p)), copy.copy(p), copy.deepcopy(p)):
        assert q == p and hash(q) == hash(p) and q.prompt_end == p.prompt_end
        assert not gc.is_tracked(q)
    # a field holding a container keeps the pair tracked (it could be part of a cycle)
    assert gc.is_tracked(PreferencePair("a", "b", index=[1]))  # type: ignore[arg-type]
    # the ctypes fallback used where the native module is not built
    untrack = records._untrack_ctypes()
    objs = [type("Slotted", (), {"__slots__": ("x",)})() for _ in range(2)]
    assert all(map(gc.is_tracked, objs))
    untrack(objs)
    assert not any(map(gc.is_tracked, objs))


@pytest.mark.parametrize(
    "text, inline",
    [
        (P + " Plain answer.", False),
        (P + " Quoted Human: in a turn.", True),
        ("Human: in the preamble only" + P + " Fine.", False),  # the preamble is no turn
        ("\n\nHuman:Human: at a turn's start", True),
        ("\n\n\nHuman: three newlines\n\nAssistant: ok", False),
        (P + " ends with Assistant:", True),
        ("\n\nAssistant:\n\nHuman:\n\nAssistant:", False),
    ],
)
def test_inline_label_counting_agrees_with_parsing(text, inline):
    """The counting shortcut in classify_pair gives what parsing every turn gives."""
    from hhrlhf.transcript import has_inline_label, parse_transcript

    parsed = any(has_inline_label(t.text) for t in parse_transcript(text).turns)
    assert parsed is inline
    assert ("inline_speaker_label" in classify_pair(text, text + " x")) is inline
