"""hhrlhf.outputs: outputs checked before the work, never replaced silently, swapped in whole."""

from __future__ import annotations

import os

import pytest

from hhrlhf.errors import OutputError
from hhrlhf.outputs import MARKER, check_writable, replace_dir, replaceable, written_by

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
    with replace_dir(d, command="hh stats") as tmp:
        (tmp / "x").write_text("x")
    with pytest.raises(OutputError, match="--plots: folder exists \\(written by hh stats\\)"):
        check_writable(d, kind="dir", option="--plots")
    check_writable(d, kind="dir", force=True)


def test_a_folder_hhrlhf_did_not_write_is_refused_even_with_force(tmp_path):
    d = tmp_path / "cleaned"
    d.mkdir()
    for name in ("thesis.tex", "b.txt", "c.txt", "notes"):
        (d / name).write_text("mine")
    with pytest.raises(OutputError) as err:
        check_writable(d, kind="dir", force=True)
    assert str(err.value) == (
        f"{d}: --out: holds 4 items hhrlhf did not write (b.txt, c.txt, notes, ...): "
        "choose another folder"
    )
    with pytest.raises(OutputError, match="hhrlhf did not write"):
        with replace_dir(d) as tmp:  # the library refuses it too, after the work
            (tmp / "new").write_text("new")
    assert sorted(p.name for p in d.iterdir()) == ["b.txt", "c.txt", "notes", "thesis.tex"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cleaned"]


def test_a_file_put_in_an_hhrlhf_output_later_makes_force_refuse(tmp_path):
    out = tmp_path / "out"
    with replace_dir(out, command="hh clean") as tmp:
        (tmp / "sub").mkdir()
        (tmp / "sub" / "a.jsonl").write_text("a")
    assert written_by(out) == "hh clean" and replaceable(out)
    (out / "sub" / "thesis.tex").write_text("mine")
    (out / "mine").mkdir()
    (out / "mine" / "x").write_text("x")
    with pytest.raises(
        OutputError, match=r"holds 2 items hhrlhf did not write \(mine, sub/thesis.tex\)"
    ):
        check_writable(out, kind="dir", force=True)
    assert not replaceable(out)


def test_the_marker_must_be_a_plain_file_of_ours(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / MARKER).write_text("not ours")
    assert written_by(out) is None
    other = tmp_path / "other"
    with replace_dir(other, command="hh clean"):
        pass
    (out / MARKER).unlink()
    (out / MARKER).symlink_to(other / MARKER)
    assert written_by(out) is None and written_by(other) == "hh clean"
    with pytest.raises(OutputError, match="hhrlhf did not write"):
        check_writable(out, kind="dir", force=True)


def test_the_current_folder_and_its_parents_are_refused(tmp_path, monkeypatch):
    work = tmp_path / "a" / "work"
    with replace_dir(work, command="hh clean"):
        pass
    monkeypatch.chdir(work)  # even an hhrlhf output: the shell would sit in a removed folder
    for given, where in ((".", "the current folder"), ("..", "a folder holding the current")):
        with pytest.raises(OutputError, match=f"--out: is {where}"):
            check_writable(given, kind="dir", force=True)
        with pytest.raises(OutputError, match=f"is {where}"):
            with replace_dir(given):
                pass
    link = tmp_path / "link"
    link.symlink_to(work, target_is_directory=True)
    with pytest.raises(OutputError, match="is the current folder"):
        check_writable(link, kind="dir", force=True)
    assert written_by(work) == "hh clean"
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["work"]


def test_an_output_never_is_nor_holds_what_the_command_reads(tmp_path):
    data = tmp_path / "data"
    (data / "harmless-base").mkdir(parents=True)
    f = data / "harmless-base" / "test.jsonl"
    f.write_text("{}\n")
    reads = [(data, "the data")]
    for out in (data, tmp_path):
        with pytest.raises(OutputError, match="the data this command reads"):
            check_writable(out, kind="dir", force=True, reads=reads)
    with pytest.raises(OutputError, match="--out: is the data this command reads"):
        check_writable(f, force=True, reads=[(f, "the data")])
    link = tmp_path / "link.jsonl"
    link.symlink_to(f)
    with pytest.raises(OutputError, match="is the data"):
        check_writable(link, force=True, reads=[(f, "the data")])
    check_writable(tmp_path / "elsewhere", kind="dir", reads=reads)  # a new folder is fine


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


def test_replace_dir_replaces_a_marked_folder_whole(tmp_path):
    out = tmp_path / "model"
    with replace_dir(out, command="hh pm train") as tmp:
        (tmp / "stale.bin").write_text("old")
    with replace_dir(out) as tmp:
        assert tmp.parent == tmp_path and tmp != out and not any(tmp.iterdir())
        (tmp / "model.json").write_text("{}")
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "model.json"]
    assert written_by(out) == "hhrlhf"  # outside the CLI
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o777 & ~umask  # a normal folder, not mkdtemp's 0700


def test_replace_dir_follows_a_link_and_keeps_it(tmp_path):
    real = tmp_path / "real"
    with replace_dir(real, command="hh clean") as tmp:
        (tmp / "old.txt").write_text("old")
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    check_writable(link, kind="dir", force=True)
    with replace_dir(link, command="hh clean") as tmp:
        (tmp / "new.txt").write_text("new")
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert sorted(p.name for p in real.iterdir()) == [MARKER, "new.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "real"]  # no .old- left


def test_links_inside_an_output_are_neither_followed_nor_copied(tmp_path):
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.tex").write_text("mine")
    out = tmp_path / "out"
    with replace_dir(out, command="hh clean") as tmp:
        (tmp / "data").symlink_to(precious, target_is_directory=True)
    assert written_by(out) == "hh clean"
    with replace_dir(out, command="hh clean") as tmp:
        (tmp / "x").write_text("x")
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "x"]
    assert (precious / "thesis.tex").read_text() == "mine"


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


def test_atomic_files_put_all_in_place_or_none(tmp_path):
    from hhrlhf.outputs import atomic_files

    a, b = tmp_path / "p.train.jsonl", tmp_path / "p.test.jsonl"
    b.write_text("old test\n")
    with pytest.raises(RuntimeError):
        with atomic_files([a, b]) as (pa, pb):
            assert pa.name.endswith("-p.train.jsonl") and pa.parent == tmp_path
            pa.write_text("new train\n")
            raise RuntimeError("the second split failed")
    assert not a.exists() and b.read_text() == "old test\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.test.jsonl"]
    with atomic_files([a, b]) as (pa, pb):
        pa.write_text("new train\n")
        pb.write_text("new test\n")
        assert not a.exists()  # nothing in place before the block ends
    assert a.read_text() == "new train\n" and b.read_text() == "new test\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.test.jsonl", "p.train.jsonl"]


def test_write_atomic_replaces_what_a_link_points_to(tmp_path):
    from hhrlhf.outputs import write_atomic

    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_atomic(link, b"new")
    assert link.is_symlink() and real.read_text() == "new"


def test_interrupts_held_delivers_ctrl_c_after_the_block(tmp_path):
    import signal

    from hhrlhf.outputs import interrupts_held

    done = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts_held():
            os.kill(os.getpid(), signal.SIGINT)
            done.append("the renames")
    assert done == ["the renames"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
