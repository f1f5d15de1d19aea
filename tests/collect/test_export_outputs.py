"""``hh collect export --out`` never replaces the database it reads, nor a folder hhrlhf did
not write; a linked ``--out`` stays a link.

The first case is the one that lost data: ``hh serve`` running on ``data/hh-collect.db`` and
``hh collect export --out data/``, which moved the database away under the live app."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner
from sqlalchemy import text
from test_export import build

from hhrlhf.cli import cli
from hhrlhf.collect.db import Storage
from hhrlhf.collect.services import annotators
from hhrlhf.collect.services.export import export_collection
from hhrlhf.errors import OutputError
from hhrlhf.outputs import MARKER, written_by


def export(db_url, out, *extra):
    return CliRunner().invoke(cli, ["collect", "export", "--db", db_url, "--out", str(out), *extra])


def one_error(result, needle):
    assert result.exit_code == 1, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and needle in errors[0], result.stderr
    assert "Traceback" not in result.output


def annotator_names(storage) -> list[str]:
    with storage.engine.connect() as conn:
        return sorted(r[0] for r in conn.execute(text("SELECT name FROM annotators")))


@pytest.fixture
def live(sqlite_only, storage, db_url):
    """The database, open in the app's Storage as ``hh serve`` holds it, with data in it."""
    build(storage)
    db = storage.url.removeprefix("sqlite:///")
    assert os.path.exists(db + "-wal")  # WAL mode: the -wal file is there while it is open
    return storage, db


def test_an_export_to_the_folder_of_the_live_database_is_refused(live, db_url, tmp_path):
    storage, db = live
    folder = os.path.dirname(db)
    before = os.stat(db)
    for extra in ([], ["--force"]):
        one_error(export(db_url, folder, *extra), "holds the database this command reads")
    with pytest.raises(OutputError, match="holds the database"):
        export_collection(storage, folder, force=True)
    # the app goes on writing to the same file, and what it writes is there when it stops
    annotators.add_annotator(storage, "written-after-the-export")
    storage.dispose()
    after = os.stat(db)
    assert (after.st_ino, after.st_dev) == (before.st_ino, before.st_dev)
    reopened = Storage(db_url)
    try:
        assert "written-after-the-export" in annotator_names(reopened)
    finally:
        reopened.dispose()
    temporaries = f".{os.path.basename(folder)}."  # where a new folder would have been built
    assert not [p for p in os.listdir(os.path.dirname(folder)) if p.startswith(temporaries)]


def test_the_database_is_found_through_links_and_by_its_wal(live, db_url, tmp_path):
    storage, db = live
    link = tmp_path.parent / f"{tmp_path.name}-link"
    link.symlink_to(tmp_path, target_is_directory=True)
    try:
        one_error(export(db_url, link, "--force"), "holds the database this command reads")
        # the database named through the link, the real folder as --out
        linked_url = f"sqlite:///{link / os.path.basename(db)}"
        one_error(export(linked_url, tmp_path, "--force"), "holds the database")
    finally:
        link.unlink()
    # a file as --out is a usage error of the command; the library says which file it is
    assert export(db_url, db + "-wal", "--force").exit_code == 2
    with pytest.raises(OutputError, match="is the database's wal file this command reads"):
        export_collection(storage, db + "-wal", force=True)
    with pytest.raises(OutputError, match="is the database this command reads"):
        export_collection(storage, db, force=True)


def test_a_database_put_in_an_earlier_export_is_never_replaced_with_it(live, db_url, tmp_path):
    storage, db = live
    out = tmp_path / "out"
    export_collection(storage, out)
    assert written_by(out) == "hh collect export"
    os.link(db, out / "backup.db")  # the same file, by another name, in the export
    one_error(export(db_url, out, "--force"), "holds the database this command reads (backup.db)")
    assert os.path.samefile(out / "backup.db", db)
    (out / "backup.db").unlink()
    (out / "log").symlink_to(db + "-wal")  # a link to the live -wal
    one_error(export(db_url, out, "--force"), "holds the database's wal file this command reads")
    assert os.path.exists(db + "-wal")
    (out / "log").unlink()
    assert export(db_url, out, "--force").exit_code == 0


def test_a_folder_hhrlhf_did_not_write_is_refused(storage, db_url, tmp_path):
    build(storage)
    out = tmp_path / "out"
    out.mkdir()
    (out / "thesis.tex").write_text("mine")
    one_error(export(db_url, out, "--force"), "holds 1 item hhrlhf did not write (thesis.tex)")
    assert [p.name for p in out.iterdir()] == ["thesis.tex"]
    # an earlier export with the user's notes put in it later: refused too, nothing carried
    other = tmp_path / "other"
    export_collection(storage, other)
    (other / "notes.txt").write_text("mine")
    one_error(export(db_url, other, "--force"), "did not write (notes.txt)")
    assert (other / "notes.txt").read_text() == "mine"


def test_a_linked_out_stays_a_link_to_the_new_export(storage, db_url, tmp_path):
    build(storage)
    real = tmp_path / "exports" / "v1"
    export_collection(storage, real)
    link = tmp_path / "current"
    link.symlink_to(real, target_is_directory=True)
    (real / "helpful-base" / "train.jsonl.gz").unlink()  # the new one must write it again
    r = export(db_url, link, "--force")
    assert r.exit_code == 0, r.output
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert (real / "helpful-base" / "train.jsonl.gz").is_file() and (real / MARKER).is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    assert sorted(p.name for p in real.parent.iterdir()) == ["v1"]  # no .v1.old- left
