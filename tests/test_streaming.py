"""``load_dataset(streaming=True)``: iterable datasets sharded by file, the eager path's rows."""

from __future__ import annotations

from pathlib import Path

import pytest

import hhrlhf
from hhrlhf.convert import FORMATS, get_format
from hhrlhf.errors import HHError, TruncatedStreamError, UnknownNameError
from hhrlhf.subsets import RED_TEAM
from hhrlhf.testing.synth import generate_pairs, write_jsonl_gz

datasets = pytest.importorskip("datasets", reason="needs the [hf] extra")
from datasets.distributed import split_dataset_by_node  # noqa: E402


@pytest.fixture(scope="module")
def synth_dir(tmp_path_factory) -> Path:
    """Real-like synthetic pairs (every quirk class): three subsets with both splits."""
    root = tmp_path_factory.mktemp("synth")
    for seed, subset in enumerate(("harmless-base", "helpful-base", "helpful-online")):
        for split, n in (("train", 300 + 50 * seed), ("test", 40 + seed)):
            rows = generate_pairs(n, seed=seed * 2 + (split == "test"), subset=subset)
            write_jsonl_gz(root / subset / f"{split}.jsonl.gz", rows, fast=True)
    return root


def _eager(data, format=None, source=True, data_dir=None):
    return hhrlhf.load_dataset(data_dir, data=data).to_hf(format, source=source)


@pytest.mark.parametrize("data", ["sample", "synth"])
def test_every_field_streams_as_the_eager_rows_sharded_by_file(synth_dir, data):
    data = synth_dir if data == "synth" else data
    stream = hhrlhf.load_dataset(data=data, streaming=True)
    eager = _eager(data)
    assert isinstance(stream, datasets.IterableDatasetDict)
    assert list(stream) == list(eager) == ["train", "test"]
    for split, ds in stream.items():
        files = hhrlhf.select_files(data=data, split=split)
        assert ds.n_shards == len(files) > 1
        assert ds.features == eager[split].features
        assert list(ds) == list(eager[split])


@pytest.mark.parametrize("name", sorted(n for n, f in FORMATS.items() if f.kind != "red-team"))
def test_every_trainer_format_streams_as_the_eager_rows(synth_dir, name):
    stream = hhrlhf.load_dataset(data=synth_dir, split="test", streaming=True, format=name)
    eager = _eager(synth_dir, name)["test"]
    assert isinstance(stream, datasets.IterableDataset)
    got = list(stream)
    assert got == list(eager)
    fmt = get_format(name)
    assert [fmt.read(r) for r in got]  # the rows are the format's: they read back


def test_no_source_and_the_red_team_attempts(synth_dir):
    stream = hhrlhf.load_dataset(data=synth_dir, split="train", streaming=True, source=False)
    assert list(stream) == list(_eager(synth_dir, source=False)["train"])
    assert "index" not in next(iter(stream))
    red = hhrlhf.load_dataset(RED_TEAM, data="sample", streaming=True)
    assert red["train"].n_shards == 1
    assert list(red["train"]) == list(_eager("sample", data_dir=RED_TEAM)["train"])
    rows = list(
        hhrlhf.load_dataset(RED_TEAM, data="sample", streaming=True, format="redteam")["train"]
    )
    assert rows == list(_eager("sample", "redteam", data_dir=RED_TEAM)["train"])


@pytest.mark.parametrize("world_size", [1, 3])
def test_split_by_node_gives_each_node_its_own_files(synth_dir, world_size):
    stream = hhrlhf.load_dataset(data=synth_dir, split="train", streaming=True, format="dpo")
    assert stream.n_shards == 3
    parts = [split_dataset_by_node(stream, rank, world_size) for rank in range(world_size)]
    rows = [list(p) for p in parts]
    for part in parts:
        assert part.n_shards == 3 // world_size  # whole files, not every file on every node
    files = [{(r["subset"], r["split"]) for r in node} for node in rows]
    assert sum(len(f) for f in files) == 3  # each file on one node only
    everything = [r for node in rows for r in node]
    keys = [(r["subset"], r["index"]) for r in everything]
    assert len(keys) == len(set(keys))  # disjoint
    assert sorted(keys) == sorted((r["subset"], r["index"]) for r in list(stream))  # covering


def test_nothing_is_read_until_iterated_and_errors_are_the_library_s(tmp_path):
    cut = tmp_path / "harmless-base" / "train.jsonl.gz"
    cut.parent.mkdir()
    write_jsonl_gz(cut, generate_pairs(400, seed=1, subset="harmless-base"), fast=True)
    cut.write_bytes(cut.read_bytes()[:-200])
    stream = hhrlhf.load_dataset(data=tmp_path, streaming=True)  # no error yet: nothing read
    with pytest.raises(TruncatedStreamError):
        list(stream["train"])


def test_streaming_options_are_checked_now(synth_dir):
    with pytest.raises(UnknownNameError, match="format"):
        hhrlhf.load_dataset(data=synth_dir, streaming=True, format="dop")
    with pytest.raises(HHError, match="streaming=True"):
        hhrlhf.load_dataset(data=synth_dir, format="dpo")
    with pytest.raises(HHError, match="lenient"):
        hhrlhf.load_dataset(data=synth_dir, streaming=True, lenient=True)
    with pytest.raises(UnknownNameError, match="valid"):
        hhrlhf.load_dataset(data=synth_dir, split="valid", streaming=True)


def test_the_scale_out_page_s_streaming_example_runs():
    import re

    page = (Path(__file__).resolve().parents[1] / "docs" / "scale-out.md").read_text()
    code = re.findall(r"```python\n(.*?)```", page, re.S)[1]
    assert "streaming=True" in code
    namespace: dict = {}
    exec(compile(code, "docs/scale-out.md", "exec"), namespace)
    assert namespace["train"].n_shards == 4
    assert namespace["mine"].n_shards == 2
    assert set(next(iter(namespace["mine"]))) == {
        "prompt",
        "chosen",
        "rejected",
        "subset",
        "split",
        "index",
    }
