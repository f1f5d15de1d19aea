"""``hh serve --workers N`` as an operator runs it: the connections spread over the workers, a
port in use is refused, a dead worker is replaced, SIGTERM stops every worker.

The spread is read from ``/proc`` (each worker's socket inodes against the established
connections on the server's port), so these tests run on Linux, where the per-worker sockets
are used (elsewhere ``hh serve`` runs uvicorn's supervisor).
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from serving import wait_until_serving

from hhrlhf.collect.serve.workers import balances, free_port

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(not balances(), reason="per-worker sockets are Linux only")


def _hh(*args: str, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.Popen(
        [sys.executable, "-m", "hhrlhf", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **kwargs,
    )


def _serve(db: Path, port: int, workers: int) -> subprocess.Popen:
    """``hh serve --demo`` on ``port`` with ``workers`` workers and a SQLite file ``db``."""
    return _hh(
        "serve", "--demo", "--db", f"sqlite:///{db}", "--port", str(port),
        "--workers", str(workers),
    )  # fmt: skip


def _workers(parent: int) -> list[int]:
    """The worker processes of ``parent`` (multiprocessing's spawned children)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if ppid == parent and b"spawn_main" in cmdline:
            found.append(int(proc.name))
    return sorted(found)


def _sockets(port: int, state: str) -> set[str]:
    """The inodes of the TCP sockets on local ``port`` in ``state`` (01 established, 0A
    listening)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == state:
                found.add(fields[9])
    return found


def _inodes(pid: int) -> set[str]:
    found = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            found.add(target[8:-1])
    return found


def _listening(workers: list[int], port: int) -> list[int]:
    """The workers that listen on ``port`` (a starting worker has bound it, not listened)."""
    listening = _sockets(port, "0A")
    return [pid for pid in workers if _inodes(pid) & listening]


def _connections_per_worker(workers: list[int], port: int) -> dict[int, int]:
    """How many established connections on ``port`` each worker holds."""
    established = _sockets(port, "01")
    return {pid: len(_inodes(pid) & established) for pid in workers}


@contextmanager
def serving(
    tmp_path: Path, workers: int, *, every_worker: bool = True
) -> Iterator[tuple[subprocess.Popen, int]]:
    """``hh serve`` with ``workers`` workers, from when every worker listens (or, without
    ``every_worker``, from the first answer of any of them: when a proxy or a waiting browser
    gets through)."""
    port = free_port("127.0.0.1")
    proc = _serve(tmp_path / "w.db", port, workers)
    try:
        wait_until_serving(
            proc,
            f"http://127.0.0.1:{port}",
            also=lambda: not every_worker or len(_listening(_workers(proc.pid), port)) == workers,
            log=lambda: str(proc.communicate()),
        )
        yield proc, port
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _burst(proc: subprocess.Popen, port: int, n: int) -> dict[int, int]:
    """Open ``n`` connections at once, each kept open after one answered request, and count
    them per worker while they are open."""

    async def one() -> asyncio.StreamWriter:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /api/v1/health HTTP/1.1\r\nHost: t\r\n\r\n")
        head = await reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200"), head
        return writer

    async def main() -> dict[int, int]:
        writers = await asyncio.gather(*(one() for _ in range(n)))
        try:
            return _connections_per_worker(_workers(proc.pid), port)
        finally:
            for w in writers:
                w.close()
                await w.wait_closed()

    return asyncio.run(main())


def test_connections_opened_together_spread_over_every_worker(tmp_path):
    """A burst of kept-alive connections (annotators starting together) lands on every worker:
    with one shared socket the first worker awake took most of them (8 workers: 112 of 200)."""
    with serving(tmp_path, 4) as (proc, port):
        counts = _burst(proc, port, 80)
    assert len(counts) == 4
    assert sum(counts.values()) == 80, counts
    # a fair hash gives each worker 20 +- 4; the shared socket gave one worker most
    assert min(counts.values()) >= 5, counts
    assert max(counts.values()) <= 40, counts


def test_connections_made_as_soon_as_the_server_answers_spread_too(tmp_path):
    """Connections that arrive the moment the first worker answers (a proxy's, browsers'
    reconnecting after a restart) are spread over every worker, the ones still loading
    included: when a worker listened only once its app had loaded, all of them went to the
    first one ready (200 of 200 connections in 4 runs of 5, with 2 workers) and stayed."""
    with serving(tmp_path, 4, every_worker=False) as (proc, port):
        counts = _burst(proc, port, 80)
    assert len(counts) == 4
    assert sum(counts.values()) == 80, counts
    assert min(counts.values()) >= 5, counts


def test_a_port_in_use_is_refused_not_shared(tmp_path):
    """Per-worker sockets share their port with each other only: a port something else
    listens on (another hh serve, say) is one error line and exit 1."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        proc = _serve(tmp_path / "p.db", port, 2)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    assert f"error: cannot serve on 127.0.0.1:{port}: Address already in use" in err
    assert "Traceback" not in err


def test_a_second_server_on_the_same_port_is_refused(tmp_path):
    with serving(tmp_path, 2) as (_, port):
        second = _serve(tmp_path / "second.db", port, 2)
        _, err = second.communicate(timeout=60)
        assert second.returncode == 1, err
        assert "Address already in use" in err


def test_a_dead_worker_is_replaced_and_sigterm_stops_them_all(tmp_path):
    with serving(tmp_path, 3) as (proc, port):
        first = _workers(proc.pid)
        os.kill(first[0], signal.SIGKILL)
        deadline = time.monotonic() + 30
        while True:
            now = _workers(proc.pid)
            if len(_listening(now, port)) == 3 and first[0] not in now:
                break
            assert time.monotonic() < deadline, now
            time.sleep(0.1)
        # the replacement serves: every connection of a burst is answered
        counts = _burst(proc, port, 30)
        assert sorted(counts) == now
        assert sum(counts.values()) == 30 and min(counts.values()) > 0, counts
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert f"warning: worker {first[0]} ended (killed by SIGKILL); starting another" in err
        assert not [pid for pid in now if Path(f"/proc/{pid}").exists()]


def test_workers_stop_when_the_supervisor_is_killed_outright(tmp_path):
    """SIGKILL of the parent alone (no chance to stop anyone): the workers end too, and the
    port is free again, instead of orphans serving it."""
    with serving(tmp_path, 2) as (proc, port):
        workers = _workers(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 30
        while [pid for pid in workers if _alive(pid)]:
            assert time.monotonic() < deadline, "the workers outlived their supervisor"
            time.sleep(0.1)
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))  # free: nothing listens any more


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has ended (its parent, init here, reaps it)


def test_a_worker_that_cannot_start_stops_the_server():
    """A worker that fails before serving (an app that cannot load) would fail the same way
    on every restart: the supervisor stops with exit status 1 instead of looping."""
    code = (
        "import sys; from hhrlhf.collect.serve.workers import run_workers; "
        f"sys.exit(run_workers(2, app='hhrlhf_no_such_module:app', host='127.0.0.1', "
        f"port={free_port('127.0.0.1')}, log_level='critical'))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1, proc.stderr
    assert "error: a worker could not start" in proc.stderr
