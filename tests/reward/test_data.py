"""Which files a model trains or is evaluated on, and reading their pairs."""

import pytest

from hhrlhf.errors import HHError
from hhrlhf.reward.data import load_pairs, select_pair_files


def test_preferred_split_where_there_is_one():
    files, note = select_pair_files(("helpful-base",), None, "sample", "train")
    assert note is None and {(f.subset, f.split) for f in files} == {("helpful-base", "train")}
    pairs = load_pairs(files)
    assert pairs and {(p.subset, p.split) for p in pairs} == {("helpful-base", "train")}


def test_no_preferred_split_uses_every_split_and_says_so(tmp_path):
    (tmp_path / "helpful-base").mkdir()
    src = tmp_path / "helpful-base" / "test.jsonl"
    src.write_text(
        '{"chosen": "\\n\\nHuman: a\\n\\nAssistant: b", "rejected": "\\n\\nHuman: a\\n\\nAssistant: c"}\n'
    )
    files, note = select_pair_files((), None, str(tmp_path), "train")
    assert [f.split for f in files] == ["test"]
    assert (
        note is not None and note.startswith("no train split in ") and note.endswith("using test")
    )


def test_red_team_and_no_pairs_are_errors(tmp_path):
    with pytest.raises(HHError, match="holds attempts, not pairs"):
        select_pair_files(("red-team-attempts",), None, "sample", "train")
    (tmp_path / "helpful-base").mkdir()
    (tmp_path / "helpful-base" / "train.jsonl").write_text("")
    files, _ = select_pair_files((), None, str(tmp_path), "train")
    assert [f.split for f in files] == ["train"]
    with pytest.raises(HHError, match="no pairs selected"):
        load_pairs(files)
