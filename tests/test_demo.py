"""The demo's steps as library functions: they compute and write, and print nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hhrlhf.demo import (
    DEMO_FORMATS,
    DEMO_MARKER,
    convert_demo,
    finish_demo_output,
    is_demo_output,
    open_demo_data,
    pick_pair,
    start_demo_output,
    write_stats,
)
from hhrlhf.errors import HHError
from hhrlhf.stats import pair_stats

LAYOUTS = Path(__file__).parent / "data" / "layouts"


def test_start_demo_output_replaces_only_a_folder_the_demo_marked(tmp_path):
    out = tmp_path / "out"
    assert start_demo_output(out) is False and is_demo_output(out)
    (out / "old.txt").write_text("an earlier run")
    finish_demo_output(out)  # the marker lists what the run wrote
    assert start_demo_output(out) is True
    assert [p.name for p in out.iterdir()] == [DEMO_MARKER]
    # a user's folder of that name, even one holding a file of the marker's name, is kept
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    (mine / DEMO_MARKER).write_text("not the demo's text")
    assert not is_demo_output(mine)
    with pytest.raises(HHError, match="did not write"):
        start_demo_output(mine)
    assert (mine / "notes.txt").read_text() == "keep me"
    # so is a file put in a demo's folder after the demo wrote it
    (out / "thesis.tex").write_text("mine")
    assert not is_demo_output(out)
    with pytest.raises(HHError, match="did not write"):
        start_demo_output(out)
    assert (out / "thesis.tex").read_text() == "mine"
    (out / "thesis.tex").unlink()
    # a link to a demo's folder: the folder it points to is replaced, the link stays
    link = tmp_path / "link"
    link.symlink_to(out, target_is_directory=True)
    assert is_demo_output(link)
    assert start_demo_output(link) is True and link.is_symlink() and is_demo_output(out)


def test_open_demo_data_loads_the_sample_pairs_by_split(capsys):
    demo = open_demo_data("sample")
    assert demo.label == "sample" and demo.source.kind == "sample"
    assert set(demo.pairs) == {"train", "test"} and all(demo.pairs.values())
    assert demo.has_red_team and all(not f.red_team for f in demo.pair_files)
    assert demo.subsets.split(", ") == list(
        dict.fromkeys(f.subset for f in demo.files if not f.red_team)
    )
    assert capsys.readouterr() == ("", "")


def test_open_demo_data_names_a_directory_by_its_path_and_refuses_no_pairs():
    one = str(LAYOUTS / "one-split")
    demo = open_demo_data(one)
    assert demo.label == one and not demo.has_red_team
    assert [len(v) for v in demo.pairs.values()] == [5]
    with pytest.raises(HHError, match="no preference pairs to walk through"):
        open_demo_data(str(LAYOUTS / "empty"))


def test_write_stats_returns_and_writes_the_stats_of_each_split(tmp_path):
    pairs = open_demo_data("sample").pairs
    stats = write_stats(pairs, tmp_path)
    assert stats == {split: pair_stats(p) for split, p in pairs.items()}
    assert json.loads((tmp_path / "stats.json").read_text()) == json.loads(json.dumps(stats))


def test_pick_pair_prefers_a_response_with_speaker_markers():
    pairs = open_demo_data("sample").pairs
    shown = pick_pair(pairs)
    p = shown.pair
    assert "response_contains_turns" in p.classes
    assert shown.chosen_reassembles and shown.rejected_reassembles
    # the right-most marker lies inside the response, after the turn-level prompt's end
    assert shown.naive_prompt_end == p.chosen.rfind("\n\nAssistant:") + len("\n\nAssistant:")
    assert shown.naive_prompt_end > p.prompt_end


def test_pick_pair_without_such_a_pair_shows_the_first_test_pair():
    pairs = open_demo_data("sample").pairs
    plain = {
        k: [p for p in v if "response_contains_turns" not in p.classes] for k, v in pairs.items()
    }
    shown = pick_pair(plain)
    assert shown.pair is plain["test"][0]
    assert shown.naive_prompt_end == shown.pair.prompt_end


def test_convert_demo_exports_audits_and_cleans_under_out(tmp_path):
    done = convert_demo("sample", tmp_path)
    assert [(key, fmt) for key, fmt, _, _ in done.exports] == [
        ("harmless-base/test", fmt) for fmt in DEMO_FORMATS
    ]
    for _, _, n, target in done.exports:
        assert target.parent == tmp_path / "convert"
        assert len(target.read_text().splitlines()) == n > 0
    assert done.clean_dir == tmp_path / "convert" / "clean"
    m = done.manifest
    assert m["rows"] == done.audit.rows == m["kept"] + m["dropped"]
    assert sum(f["kept"] for f in m["files"].values()) == m["kept"]
    assert all((done.clean_dir / rel).is_file() for rel in m["files"])
    # a second run replaces its own cleaned copy
    assert convert_demo("sample", tmp_path).manifest["kept"] == m["kept"]
    # and never a folder of someone else's there
    (done.clean_dir / "thesis.tex").write_text("mine")
    with pytest.raises(HHError, match="did not write"):
        convert_demo("sample", tmp_path)
    assert (done.clean_dir / "thesis.tex").read_text() == "mine"


def test_pm_demo_trains_evaluates_and_writes_under_out(tmp_path, capsys):
    pytest.importorskip("sklearn")
    from hhrlhf.demo import pm_demo
    from hhrlhf.reward import load_model

    done = pm_demo("sample", tmp_path)
    assert capsys.readouterr().out == ""  # a library step prints nothing
    assert done.skipped is None and done.out == tmp_path / "pm"
    assert done.train_pairs == done.model.meta["metrics"]["pairs"] > 0
    assert json.loads((done.out / "eval.json").read_text()) == json.loads(json.dumps(done.report))
    assert done.model.meta["training_data"]["splits"] == ["train"]
    assert load_model(done.out / "model").meta == done.model.meta


def test_pm_demo_without_a_test_split_says_why(tmp_path):
    from hhrlhf.demo import pm_demo

    (tmp_path / "data" / "helpful-base").mkdir(parents=True)
    (tmp_path / "data" / "helpful-base" / "train.jsonl").write_text(
        '{"chosen": "\\n\\nHuman: a\\n\\nAssistant: b", '
        '"rejected": "\\n\\nHuman: a\\n\\nAssistant: c"}\n'
    )
    done = pm_demo(str(tmp_path / "data"), tmp_path / "out")
    assert done.model is None and done.skipped.startswith("no test split in ")
