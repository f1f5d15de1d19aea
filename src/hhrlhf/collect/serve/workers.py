"""``hh serve --workers N``: N worker processes, each listening on its own socket bound to the
same port (``SO_REUSEPORT``), so the kernel spreads new connections evenly over the workers.

uvicorn's own supervisor gives every worker one shared listening socket. Whichever worker
wakes first accepts every connection waiting (uvloop accepts until none is left), and browsers
and load balancers keep their connections open: 200 annotators starting together landed on
the workers as 112, 60, 24, 2, 2, 0, 0 and 0 connections with 8 workers, and a 16-core machine
served no more turns a second with 8 workers than with 1 (bench/RESULTS-collect.md). With a
socket per worker the kernel hashes each new connection to one of them.

Linux only (elsewhere ``SO_REUSEPORT`` does not balance, and :func:`balances` is false:
``hh serve`` then runs uvicorn's supervisor). The supervisor here replaces a worker that dies,
stops when a worker cannot start, and on SIGINT, SIGTERM or SIGHUP stops every worker and waits
for it; a worker whose supervisor is killed outright stops too.
Before the workers start, the port is bound once without ``SO_REUSEPORT``: a port another
program (or another ``hh serve``) holds is refused at once, never shared. The first workers
listen before they load the app, a replaced one once it has (:func:`_worker`).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import socket
import sys
import threading
import time
from multiprocessing.process import BaseProcess
from types import FrameType
from typing import Any

from uvicorn.config import STARTUP_FAILURE  # a worker that could not start exits with it

from ...errors import HHError

__all__ = ["balances", "free_port", "run_workers"]

#: seconds a stopping worker gets after SIGTERM (its open requests' grace included) before SIGKILL
STOP_WAIT = 15.0


def balances() -> bool:
    """Whether this system spreads connections over sockets sharing a port (Linux)."""
    return sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def free_port(host: str) -> int:
    """A port that is free on ``host`` now (the operating system's pick)."""
    with socket.socket(_family(host), socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def check_port(host: str, port: int) -> None:
    """Refuse a port that something already listens on (a plain bind, not shared)."""
    with socket.socket(_family(host), socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise HHError(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from exc


def bind(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` that other workers' sockets share, not listening yet
    (the kernel hashes new connections over the listening ones only)."""
    sock = socket.socket(_family(host), socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.set_inheritable(True)
    return sock


def _end_with_parent(parent: int) -> None:
    """Have the kernel send this process SIGTERM when the supervisor dies (even by SIGKILL),
    so no worker is left serving the port on its own (Linux's PR_SET_PDEATHSIG)."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not glibc/musl: the supervisor's own stop still works
        return
    if os.getppid() != parent:  # it died before the call above
        os.kill(os.getpid(), signal.SIGTERM)


def _worker(options: dict[str, Any], parent: int, listen_now: bool) -> None:
    """One worker process: its own socket, then uvicorn's server on it.

    ``listen_now``: the workers of a starting server listen before they load the app, all
    within a moment of each other, so that the first connections (a proxy's, annotators'
    waiting to reconnect) are spread over every worker and wait in its queue while it loads;
    had they listened once loaded, every connection made before the second worker was ready
    went to the first (200 of 200, in 4 runs of 5) and stayed there. A replacement for a
    dead worker listens only once its app has loaded: the others serve meanwhile.
    """
    _end_with_parent(parent)
    import uvicorn

    config = uvicorn.Config(**options)
    try:
        sock = bind(config.host, config.port)
        if listen_now:
            sock.listen(config.backlog)  # uvicorn's own listen() later changes nothing
    except OSError as exc:
        print(f"error: worker cannot listen on {config.host}:{config.port}: {exc}", file=sys.stderr)
        sys.exit(STARTUP_FAILURE)
    uvicorn.Server(config).run(sockets=[sock])


def run_workers(workers: int, **options: Any) -> int:
    """Serve uvicorn ``options`` (``uvicorn.Config``'s keywords: app, host, port...) from
    ``workers`` processes until SIGINT, SIGTERM or SIGHUP; the exit status (0, or 1 when a worker could
    not start)."""
    host, port = options["host"], options["port"]
    check_port(host, port)
    spawn = multiprocessing.get_context("spawn")
    stop = threading.Event()

    def start(listen_now: bool) -> BaseProcess:
        process = spawn.Process(
            target=_worker, args=(options, os.getpid(), listen_now), name="hh-serve-worker"
        )
        process.start()
        return process

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    stopping = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {s: signal.signal(s, on_signal) for s in stopping}
    processes = [start(listen_now=True) for _ in range(workers)]
    status = 0
    try:
        while not stop.wait(0.25):
            for i, process in enumerate(processes):
                if process.is_alive():
                    continue
                process.join()
                if process.exitcode == STARTUP_FAILURE:
                    print(
                        f"error: a worker could not start (exit status {process.exitcode}); "
                        "stopping",
                        file=sys.stderr,
                    )
                    status = 1
                    stop.set()
                    break
                code = process.exitcode
                why = (
                    f"killed by {signal.Signals(-code).name}"
                    if code is not None and code < 0
                    else f"exit status {code}"
                )
                print(
                    f"warning: worker {process.pid} ended ({why}); starting another",
                    file=sys.stderr,
                )
                processes[i] = start(listen_now=False)
    finally:
        for process in processes:
            if process.is_alive():
                process.terminate()  # SIGTERM: uvicorn finishes open requests, then exits
        deadline = time.monotonic() + STOP_WAIT
        for process in processes:
            process.join(max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                process.kill()
                process.join()
        for s, handler in previous.items():
            signal.signal(s, handler)
    return status
