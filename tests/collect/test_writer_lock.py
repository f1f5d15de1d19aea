"""The SQLite writer lock: one writer at a time across processes (flock), not SQLite's busy handler."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

from hhrlhf.collect.db import Storage
from hhrlhf.collect.db.engine import WriterLock, sqlite_file
from hhrlhf.collect.services import annotators


def test_sqlite_file_of_urls(tmp_path):
    assert sqlite_file(f"sqlite:///{tmp_path}/x.db") == tmp_path / "x.db"
    assert sqlite_file("sqlite://") is None
    assert sqlite_file("sqlite:///:memory:") is None
    assert sqlite_file("postgresql+psycopg://u@localhost/db") is None


def test_a_second_lock_on_the_same_file_waits_until_the_first_is_released(tmp_path):
    db = tmp_path / "x.db"
    first, second = WriterLock(db), WriterLock(db)  # two open files: as two processes
    got = threading.Event()

    def take():
        with second:
            got.set()

    with first:
        t = threading.Thread(target=take)
        t.start()
        assert not got.wait(0.3), "the second writer got the lock while the first held it"
    assert got.wait(5), "the second writer was not woken when the first released the lock"
    t.join(5)
    first.close()
    second.close()


def test_a_writer_in_another_process_waits_for_this_one(tmp_path):
    url = f"sqlite:///{tmp_path}/x.db"
    storage = Storage(url)
    storage.upgrade()
    script = textwrap.dedent(
        f"""
        import time
        from hhrlhf.collect.db import Storage
        from hhrlhf.collect.services import annotators
        s = Storage({url!r})
        t0 = time.monotonic()  # before "ready": the lock is held 1 s past it, however late this runs
        print("ready", flush=True)
        annotators.add_annotator(s, "other")
        print(time.monotonic() - t0)
        """
    )
    with storage._write_lock:
        proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(1.0)
        assert proc.poll() is None, "the other process wrote while this one held the lock"
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert float(out.strip()) >= 1.0  # it waited for the lock
    assert annotators.annotator_by_name(storage, "other") is not None
    storage.dispose()


def test_a_folder_without_write_access_falls_back_to_sqlite_locking(tmp_path):
    lock = WriterLock(tmp_path / "missing-folder" / "x.db")  # the lock file cannot be made
    with lock:
        pass
    with lock:  # and again: no error, the thread lock still released
        pass
