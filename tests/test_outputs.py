"""hhrlhf.outputs: outputs checked before the work, never replaced silently, swapped in whole."""

from __future__ import annotations

import os

import pytest

from hhrlhf.errors import OutputError
from hhrlhf.outputs import check_writable, replace_dir

ROOT = os.geteuid() == 0 if hasattr(os, "geteuid") else False


def test_new_paths_are_fine_and_parents_may_be_missing(tmp_path):
    assert check_writable(tmp_path / "a.jsonl") == tmp_path / "a.jsonl"
    assert check_writable(tmp_path / "x" / "y" / "a.jsonl") == tmp_path / "x" / "y" / "a.jsonl"
    assert check_writable(tmp_path / "d", kind="dir") == tmp_path / "d"
    (tmp_path / "empty").mkdir()
    check_writable(tmp_path / "empty", kind="dir")  # an empty folder is not an output yet
    assert not any(p.name.startswith(".hh-probe-") for p in tmp_path.iterdir())


def test_existing_outputs_need_force(tmp_path):
    f = tmp_path / "a.jsonl"
    f.write_text("old\n")
    with pytest.raises(OutputError, match="--out: file exists; pass --force"):
        check_writable(f)
    assert check_writable(f, force=True) == f and f.read_text() == "old\n"
    d = tmp_path / "d"
    d.mkdir()
    (d / "x").write_text("x")
    with pytest.raises(OutputError, match="--plots: folder \\(not empty\\) exists"):
        check_writable(d, kind="dir", option="--plots")
    check_writable(d, kind="dir", force=True)


def test_wrong_kind_and_paths_under_a_file(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(OutputError, match="is a file, a folder is needed"):
        check_writable(f, kind="dir", force=True)
    with pytest.raises(OutputError, match="is a folder, a file is needed"):
        check_writable(tmp_path, force=True)
    with pytest.raises(OutputError, match=f"{f} is a file, not a folder"):
        check_writable(f / "sub" / "out.jsonl")
    with pytest.raises(ValueError):
        check_writable(tmp_path / "x", kind="pipe")


def test_unwritable_places(tmp_path):
    with pytest.raises(OutputError, match="cannot write in /proc"):
        check_writable("/proc/hh-out.jsonl")
    if not ROOT:  # root writes through a chmod; the /proc case above covers it
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        try:
            with pytest.raises(OutputError, match="cannot write in"):
                check_writable(ro / "out.jsonl")
            with pytest.raises(OutputError, match="cannot write in"):
                check_writable(ro / "new" / "dir", kind="dir")
        finally:
            ro.chmod(0o700)


def test_dangling_symlink_is_refused(tmp_path):
    link = tmp_path / "out.jsonl"
    link.symlink_to(tmp_path / "nowhere")
    with pytest.raises(OutputError, match="dangling symbolic link"):
        check_writable(link, force=True)


def test_replace_dir_leaves_no_stray_files(tmp_path):
    out = tmp_path / "model"
    out.mkdir()
    (out / "stale.bin").write_text("old")
    with replace_dir(out) as tmp:
        assert tmp.parent == tmp_path and tmp != out and not any(tmp.iterdir())
        (tmp / "model.json").write_text("{}")
    assert sorted(p.name for p in out.iterdir()) == ["model.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o777 & ~umask  # a normal folder, not mkdtemp's 0700


def test_replace_dir_keeps_the_old_output_on_error(tmp_path):
    out = tmp_path / "model"
    out.mkdir()
    (out / "model.json").write_text("old")
    with pytest.raises(RuntimeError):
        with replace_dir(out) as tmp:
            (tmp / "model.json").write_text("half")
            raise RuntimeError("training failed")
    assert (out / "model.json").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


@pytest.mark.parametrize("name", ["rows.jsonl", "rows.jsonl.gz", "rows.parquet"])
def test_written_files_get_the_umask_mode_not_mkstemps(tmp_path, name):
    if name.endswith(".parquet"):
        pytest.importorskip("pyarrow")
    from hhrlhf.convert.files import write_rows

    old = os.umask(0o027)
    try:
        write_rows([{"a": 1}], tmp_path / name)
    finally:
        os.umask(old)
    assert (tmp_path / name).stat().st_mode & 0o777 == 0o640


def test_the_download_hash_note_gets_the_umask_mode(tmp_path):
    from hhrlhf.download import cached_sha256

    data = tmp_path / "test.jsonl.gz"
    data.write_bytes(b"x")
    old = os.umask(0o022)
    try:
        cached_sha256(data)
    finally:
        os.umask(old)
    (note,) = [p for p in tmp_path.iterdir() if p.name.endswith(".sha256.json")]
    assert note.stat().st_mode & 0o777 == 0o644


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="Linux /proc only")
def test_plain_mode_reads_the_umask_without_setting_it(tmp_path, monkeypatch):
    """Setting the umask to read it would leave it at 0 for a moment, for every thread."""
    from hhrlhf.outputs import plain_mode

    old = os.umask(0o027)
    try:
        monkeypatch.setattr(os, "umask", lambda *_: pytest.fail("os.umask was called"))
        f = tmp_path / "f"
        f.write_bytes(b"x")
        f.chmod(0o600)
        plain_mode(f)
        plain_mode(tmp_path, folder=True)
    finally:
        monkeypatch.undo()
        os.umask(old)
    assert f.stat().st_mode & 0o777 == 0o640 and tmp_path.stat().st_mode & 0o777 == 0o750
