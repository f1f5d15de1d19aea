"""The export's manifest names the guidelines' version each conversation was collected under,
only when guidelines were in use (otherwise it is the manifest it always was)."""

from __future__ import annotations

import orjson
from test_export import _turn, build

from hhrlhf.collect.services import annotators, choices, conversations, guidelines
from hhrlhf.collect.services.export import export_collection

PTS = {"strength_points": 4}


def _conversation(storage, who, task, picks):
    cid = conversations.create_conversation(storage, who, "helpful", task).id
    for i, strength in enumerate(picks):
        t = _turn(storage, who, cid, f"Question {i} about {task}?", "A fine answer.", "Not so.")
        choices.record_choice(storage, who, t, pick="a", strength=strength, **PTS)
    conversations.finish_conversation(storage, who, cid)


def test_the_manifest_maps_each_line_to_its_guidelines_version(storage, tmp_path):
    root, _ = annotators.add_annotator(storage, "root", role="admin")
    alice, _ = annotators.add_annotator(storage, "alice")
    _conversation(storage, alice, "Tomatoes", [3])  # before any guidelines: no version
    guidelines.publish(storage, root, "# Rules\n\nAsk real questions.")
    guidelines.acknowledge(storage, alice, 1)
    _conversation(storage, alice, "Bread", [3, 2, 1])  # the weak pick is left out
    guidelines.publish(storage, root, "# Rules\n\nAsk real questions, in full.")
    _conversation(storage, alice, "Cheese", [2, 2])
    m = export_collection(storage, tmp_path / "out", test_fraction=0.0)
    assert m["guidelines"] == {
        "conversations": {"1": 1, "2": 1, "none": 1},
        "rows": {"1": 2, "2": 2, "none": 1},
        "lines": {"helpful-base/train.jsonl.gz": [[None, 1], [1, 2], [2, 2]]},
    }
    written = orjson.loads((tmp_path / "out" / "manifest.json").read_bytes())
    assert written["guidelines"] == m["guidelines"]
    assert sum(n for _, n in m["guidelines"]["lines"]["helpful-base/train.jsonl.gz"]) == m["rows"]


def test_without_guidelines_the_manifest_has_no_guidelines_key(storage, tmp_path):
    build(storage)
    root, _ = annotators.add_annotator(storage, "root", role="admin")
    m = export_collection(storage, tmp_path / "out", test_fraction=0.5)
    assert "guidelines" not in m
    # published, but no conversation started under it: still nothing to say
    guidelines.publish(storage, root, "# Rules")
    m = export_collection(storage, tmp_path / "again", test_fraction=0.5)
    assert "guidelines" not in m
    assert b"guidelines" not in (tmp_path / "again" / "manifest.json").read_bytes()
