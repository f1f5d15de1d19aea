"""``hh collect export --force`` writes a new folder and swaps it in: a failure midway leaves
the old export whole, never a mix of old and new files."""

from __future__ import annotations

import pytest
from test_review import conversation

from hhrlhf.collect.services import annotators
from hhrlhf.collect.services import export as export_module
from hhrlhf.collect.services.export import MANIFEST, export_collection
from hhrlhf.outputs import MARKER


def _snapshot(folder) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_a_failed_forced_export_leaves_the_old_one_whole(storage, tmp_path, monkeypatch):
    alice, _ = annotators.add_annotator(storage, "alice")
    conversation(storage, alice, [("a", 3)])
    out = tmp_path / "exports" / "out"
    export_collection(storage, out)
    before = _snapshot(out)
    # the comparison lands in train or test (a hash of the conversation's uid): one file
    assert MANIFEST in before and any(name.startswith("helpful-base/") for name in before)
    conversation(storage, alice, [("b", 4), ("a", 2)])  # the next export differs

    def broken(*args, **kwargs):  # runs after the comparison files are written
        raise OSError("disk full")

    monkeypatch.setattr(export_module, "red_team_attempts", broken)
    with pytest.raises(OSError, match="disk full"):
        export_collection(storage, out, force=True)
    assert _snapshot(out) == before
    assert sorted(p.name for p in out.parent.iterdir()) == ["out"]  # no half-written folder left
    monkeypatch.undo()
    manifest = export_collection(storage, out, force=True)
    after = _snapshot(out)
    assert manifest["rows"] == 3

    def helpful(files: dict[str, bytes]) -> dict[str, bytes]:
        return {k: v for k, v in files.items() if k.startswith("helpful-base/")}

    assert helpful(after) != helpful(before)
    assert sorted(p.name for p in out.parent.iterdir()) == ["out"]


def test_files_of_the_old_export_that_the_new_one_lacks_are_gone(storage, tmp_path):
    alice, _ = annotators.add_annotator(storage, "alice")
    conversation(storage, alice, [("a", 3)])
    conversation(storage, alice, [("a", 3)], mode="red-team")
    out = tmp_path / "out"
    first = export_collection(storage, out)
    # the one red-team comparison lands in train or test (a hash of the conversation's uid);
    # the other split has no rows, so no file
    (old,) = [f for f in first["files"] if f.startswith("harmless-base/")]
    # the same comparisons under another red-team subset name: the old subset must not linger
    second = export_collection(storage, out, force=True, red_team_subset="helpful-online")
    assert old.replace("harmless-base", "helpful-online") in second["files"]
    names = set(_snapshot(out))
    assert old not in names
    assert names == set(second["files"]) | {MANIFEST, MARKER}
