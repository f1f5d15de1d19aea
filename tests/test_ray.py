"""hhrlhf on Ray Data: the same job on a local Ray and in one process gives the same values.

One local Ray for the session (two CPUs, loopback only: ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``
is set before Ray is imported, without which Ray listens on the host's outward address).
Skipped without the ``[ray]`` extra.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
ray = pytest.importorskip("ray", reason="needs the [ray] extra: pip install 'hhrlhf[ray]'")

import hhrlhf  # noqa: E402
from hhrlhf.checks import run_checks  # noqa: E402
from hhrlhf.convert import FORMATS, format_rows, get_format  # noqa: E402
from hhrlhf.errors import (  # noqa: E402
    DataFormatError,
    ModelFormatError,
    TruncatedStreamError,
    UnknownNameError,
)
from hhrlhf.integrations import ray as hray  # noqa: E402
from hhrlhf.records import RedTeamAttempt  # noqa: E402
from hhrlhf.testing.synth import (  # noqa: E402
    generate_pairs,
    generate_red_team,
    write_json_array_gz,
    write_jsonl_gz,
)

pytestmark = pytest.mark.ray
#: Rows per read block in these tests (files of 250 to 900 rows span several blocks).
BLOCK = 128


def _read(data, **kw):
    return hray.read_pairs(data, rows_per_block=BLOCK, **kw)


@pytest.fixture(scope="session")
def local_ray():
    import logging

    from ray._private import ray_constants

    # read when Ray is imported: if Ray came in before this module set it, Ray would listen
    # on the host's outward address, so stop rather than start it
    assert ray_constants.ENABLE_RAY_CLUSTER is False, "Ray was imported before this module"
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.WARNING,
    )
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    try:
        yield ray
    finally:
        ray.shutdown()


@pytest.fixture
def in_order(local_ray):
    """Ray keeps the order of the files too (within a file it always does)."""
    ctx = ray.data.DataContext.get_current()
    before = ctx.execution_options.preserve_order
    ctx.execution_options.preserve_order = True
    yield
    ctx.execution_options.preserve_order = before


@pytest.fixture(scope="module")
def synth_dir(tmp_path_factory) -> Path:
    """Real-like synthetic data (every quirk class), two subsets. Read in blocks of
    :data:`BLOCK`, so a file spans several and block edges are crossed."""
    root = tmp_path_factory.mktemp("synth")
    sizes = {("harmless-base", "train"): 900, ("harmless-base", "test"): 300}
    sizes[("helpful-base", "test")] = 250
    for seed, ((subset, split), n) in enumerate(sizes.items()):
        path = root / subset / f"{split}.jsonl.gz"
        write_jsonl_gz(path, generate_pairs(n, seed=seed, subset=subset), fast=True)
    write_json_array_gz(
        root / "red-team-attempts" / "red_team_attempts.jsonl.gz", generate_red_team(900, seed=3)
    )
    return root


def _pair_row(p) -> dict:
    return {k: getattr(p, k) for k in hray.PAIR_COLUMNS}


def _by_file(rows) -> dict:
    out: dict = {}
    for r in rows:
        out.setdefault((r["subset"], r["split"]), []).append(r)
    return out


@pytest.mark.parametrize("data", ["sample", "synth"])
def test_pairs_are_the_one_process_pairs_in_file_order(local_ray, synth_dir, data):
    data = synth_dir if data == "synth" else data
    want = [_pair_row(p) for p in hhrlhf.iter_pairs(data=data)]
    got = _read(data).take_all()
    assert list(got[0]) == list(hray.PAIR_COLUMNS)
    # whatever order Ray gives the files in, each file's rows come in the file's order
    assert _by_file(got) == _by_file(want)
    assert len(got) == len(want) > 300


def test_one_read_task_per_file_and_selection(local_ray, synth_dir):
    ds = _read(synth_dir, subsets="harmless-base", splits=["test", "train"])
    files = hhrlhf.select_files("harmless-base", data=synth_dir)
    assert sorted(ds.input_files()) == sorted(str(f.path) for f in files)
    jobs = [(str(f.path), f.subset, f.split) for f in files]
    tasks = hray._FileDatasource("x", jobs, hray._read_pair_file, None).get_read_tasks(1)
    assert len(tasks) == len(files) == 2  # one per file, whatever parallelism asks
    with pytest.raises(UnknownNameError, match="harmles-base"):
        _read(synth_dir, subsets="harmles-base")
    with pytest.raises(UnknownNameError, match="valid"):
        _read(synth_dir, splits="valid")


def test_the_whole_order_with_preserve_order(in_order, synth_dir):
    want = [_pair_row(p) for p in hhrlhf.iter_pairs(data=synth_dir)]
    assert _read(synth_dir).take_all() == want


def test_a_cut_file_is_loud(local_ray, synth_dir, tmp_path):
    """A cut .gz raises the library's error with what it lost, never a short dataset."""
    cut = tmp_path / "harmless-base" / "train.jsonl.gz"
    cut.parent.mkdir()
    whole = (synth_dir / "harmless-base" / "train.jsonl.gz").read_bytes()
    cut.write_bytes(whole[: len(whole) * 2 // 3])
    with pytest.raises(TruncatedStreamError) as one:
        list(hhrlhf.iter_pairs(data=tmp_path))
    with pytest.raises(TruncatedStreamError) as got:
        _read(tmp_path).take_all()
    assert got.value.path == one.value.path == str(cut)
    assert got.value.rows_read == one.value.rows_read > BLOCK
    assert one.value.problem in str(got.value)


def test_a_bad_line_is_the_library_error(local_ray, tmp_path):
    bad = tmp_path / "harmless-base" / "test.jsonl"
    bad.parent.mkdir()
    bad.write_text(
        '{"chosen": "\\n\\nHuman: a\\n\\nAssistant: b", "rejected": "x"}\n{"chosen": 1}\n'
    )
    with pytest.raises(DataFormatError) as got:
        _read(tmp_path).take_all()
    assert (got.value.path, got.value.line) == (str(bad), 2)


def _attempt_rows(data) -> list[dict]:
    """The attempts as one process makes them a table: member ids as strings in a file that
    mixes integer and string ids (as upstream's does; an Arrow column has one type)."""
    rows = [{**a.to_dict(), "index": a.index} for a in hhrlhf.iter_attempts(data=data)]
    if len({type(r["red_team_member_id"]) for r in rows}) > 1:
        for r in rows:
            r["red_team_member_id"] = str(r["red_team_member_id"])
    return rows


def test_redteam_array_is_streamed_into_rows(local_ray, synth_dir):
    want = _attempt_rows(synth_dir)
    got = hray.read_redteam(synth_dir).take_all()
    assert len(got) == 900
    assert got == want
    assert got == hhrlhf.load_attempts(data=synth_dir).to_arrow().to_pylist()
    assert hray.read_redteam("sample").take_all() == _attempt_rows("sample")


def test_a_broken_redteam_array_is_the_library_error(local_ray, tmp_path):
    path = tmp_path / "red_team_attempts.jsonl.gz"
    path.write_bytes(gzip.compress(b"[0]"))  # an element that is not an attempt
    with pytest.raises(DataFormatError, match="record 1"):
        hray.read_redteam(path).take_all()
    write_json_array_gz(path, generate_red_team(5, seed=1))
    path.write_bytes(gzip.compress(gzip.decompress(path.read_bytes())[:-1]))  # no "]"
    with pytest.raises(DataFormatError, match="missing '\\]'"):
        hray.read_redteam(path).take_all()


@pytest.fixture(scope="module")
def saved_pm(tmp_path_factory) -> Path:
    from hhrlhf.reward import FeatureConfig, train_pm

    config = FeatureConfig(word_bits=12, char_bits=12, edge_bits=10, pair_bits=12)
    train = hhrlhf.load_dataset(data="sample", split="train")
    path = tmp_path_factory.mktemp("pm") / "pm"
    train_pm(train, config=config, max_iter=30).save(path)
    return path


def test_scores_are_bit_identical_to_one_process(local_ray, synth_dir, saved_pm):
    import numpy as np

    from hhrlhf.reward import load_model

    pairs = list(hhrlhf.iter_pairs(data=synth_dir))
    chosen, rejected = load_model(saved_pm).score_pairs(pairs)
    want = {
        (p.subset, p.split, p.index): (c, r, c - r)
        for p, c, r in zip(pairs, chosen.tolist(), rejected.tolist(), strict=True)
    }
    # streamed from the read tasks into one actor (the other CPU reads); then two actors
    # (every CPU) on pairs read beforehand
    streamed = hray.score_pairs(_read(synth_dir), saved_pm, concurrency=1, batch_size=200)
    read_first = _read(synth_dir).materialize()
    pool = hray.score_pairs(read_first, saved_pm, concurrency=2, batch_size=200)
    for ds in (streamed, pool):
        rows = ds.take_all()
        got = {
            (r["subset"], r["split"], r["index"]): tuple(r[k] for k in hray.SCORE_COLUMNS)
            for r in rows
        }
        assert len(rows) == len(pairs)
        assert got == want  # exact floats: == on every score
    assert np.asarray([v[2] for v in got.values()]).std() > 0  # the model says something


def test_a_bad_model_fails_before_ray_runs(local_ray, tmp_path):
    with pytest.raises(ModelFormatError, match="no model.json"):
        hray.score_pairs(_read("sample"), tmp_path)


def test_check_classes_are_the_checks_per_pair(local_ray, synth_dir):
    pairs = list(hhrlhf.iter_pairs(data=synth_dir))
    mine = {k.name for c in hray._pair_checks() for k in c.classes}
    assert hray.pair_check_names() == ["pair_classes", "invisible_characters"]
    result = run_checks(pairs)
    want = {}
    for p in pairs:
        flags = result.flags.get((p.subset, p.split, p.index), {})
        found = {k: v for k, v in flags.items() if k in mine}
        want[(p.subset, p.split, p.index)] = (list(found), list(found.values()))
    rows = hray.check_pairs(_read(synth_dir)).take_all()
    got = {(r["subset"], r["split"], r["index"]): (r["flags"], r["flag_details"]) for r in rows}
    assert got == want
    assert sum(bool(f) for f, _ in got.values()) > 10  # the quirks are flagged


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_every_export_format_gives_the_same_lines(in_order, synth_dir, name):
    fmt = get_format(name)
    if fmt.kind == "red-team":  # member ids as the table holds them (see _attempt_rows)
        records = [RedTeamAttempt(**r) for r in _attempt_rows(synth_dir)]
        ds = hray.read_redteam(synth_dir)
    else:
        records = list(hhrlhf.iter_pairs(data=synth_dir))
        ds = _read(synth_dir)
    want = [fmt.encode(row) for row in format_rows(records, fmt)]
    got = [fmt.encode(row) for row in hray.to_format(ds, name).take_all()]
    assert got == want


def test_merged_messages_and_no_source(in_order, synth_dir):
    pairs = list(hhrlhf.iter_pairs(data=synth_dir))
    rows = format_rows(pairs, "messages", source=False, merge_consecutive=True)
    want = [get_format("messages").encode(r) for r in rows]
    ds = hray.to_format(_read(synth_dir), "messages", source=False, merge_consecutive=True)
    assert [get_format("messages").encode(r) for r in ds.take_all()] == want
    with pytest.raises(UnknownNameError, match="format"):
        hray.to_format(ds, "dop")


def _ray_pids() -> set[int]:
    """This process and its descendants: the Ray processes it started."""
    parent: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    mine = {os.getpid()}
    grew = True
    while grew:
        more = {p for p, pp in parent.items() if pp in mine} - mine
        grew = bool(more)
        mine |= more
    return mine


def _listening() -> dict[str, str]:
    """Socket inode -> local address of every listening TCP socket (IPv4 and IPv6)."""
    out = {}
    for name in ("tcp", "tcp6"):
        path = Path("/proc/net") / name
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":  # LISTEN
                out[fields[9]] = fields[1].rsplit(":", 1)[0]
    return out


def _loopback(hex_addr: str) -> bool:
    if len(hex_addr) == 8:  # IPv4, little-endian: 127.x.x.x ends with 7F
        return hex_addr.endswith("7F")
    v4_mapped = hex_addr[:24] == "0000000000000000FFFF0000"
    return hex_addr == "00000000000000000000000001000000" or (v4_mapped and hex_addr.endswith("7F"))


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads Linux's /proc")
def test_local_ray_listens_on_loopback_only(local_ray):
    _read("sample").take_all()  # workers started
    assert ray.util.get_node_ip_address() == "127.0.0.1"
    listening = _listening()
    seen = []
    for pid in _ray_pids():
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            inode = target[len("socket:[") : -1] if target.startswith("socket:[") else None
            if inode in listening:
                seen.append((pid, listening[inode]))
    assert len(seen) >= 3  # the GCS, the raylet, the workers
    assert [s for s in seen if not _loopback(s[1])] == []


def test_the_scale_out_page_s_job_runs(local_ray, saved_pm, tmp_path, monkeypatch, capsys):
    """docs/scale-out.md's job, as written, on this session's Ray (its ``ray.init()`` would
    start a second one here; on a cluster it joins the cluster's)."""
    import re
    import sys

    import pyarrow.parquet as pq

    page = (Path(__file__).resolve().parents[1] / "docs" / "scale-out.md").read_text()
    code = re.findall(r"```python\n(.*?)```", page, re.S)[0]
    assert "ray.init()" in code
    monkeypatch.setattr(ray, "init", lambda *a, **k: None)
    monkeypatch.setattr(sys, "argv", ["score_hh.py", "sample", str(saved_pm), str(tmp_path)])
    exec(compile(code, "docs/scale-out.md", "exec"), {"__name__": "__main__"})
    scored = pq.read_table(tmp_path / "scored")
    assert scored.num_rows == 320
    assert {"margin", "flags", "chosen_score"} <= set(scored.column_names)
    kept = [r for r in scored.to_pylist() if r["margin"] > 0 and not r["flags"]]
    lines = [
        line for f in sorted((tmp_path / "dpo").iterdir()) for line in f.read_text().splitlines()
    ]
    assert len(lines) == len(kept) > 0
    assert capsys.readouterr().out.strip().endswith(f"320 pairs scored, {len(kept)} kept")


def test_write_upstream_writes_a_folder_hh_reads_back(in_order, synth_dir, tmp_path):
    from hhrlhf.errors import HHError, OutputError

    out = tmp_path / "out"
    counts = hray.write_upstream(_read(synth_dir), out)
    assert counts == {
        "harmless-base/train": 900,
        "harmless-base/test": 300,
        "helpful-base/test": 250,
    }
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.gz")) == [
        "harmless-base/test.jsonl.gz",
        "harmless-base/train.jsonl.gz",
        "helpful-base/test.jsonl.gz",
    ]
    assert list(hhrlhf.iter_pairs(data=out)) == list(hhrlhf.iter_pairs(data=synth_dir))
    raw = get_format("raw")
    for f in hhrlhf.select_files(data=synth_dir):
        pairs = hhrlhf.iter_pairs(f.subset, split=f.split, data=synth_dir)
        want = b"".join(raw.encode(r) for r in format_rows(pairs, raw, source=False))
        assert gzip.decompress((out / f.rel).read_bytes()) == want  # hh export's lines
    with pytest.raises(OutputError, match="--force"):
        hray.write_upstream(_read(synth_dir), out)
    shuffled = _read(synth_dir).sort("index", descending=True)
    with pytest.raises(HHError, match="preserve_order"):
        hray.write_upstream(shuffled, out, force=True)
    assert list(hhrlhf.iter_pairs(data=out)) == list(hhrlhf.iter_pairs(data=synth_dir))  # kept
