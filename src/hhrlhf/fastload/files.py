"""The fast loader's file stage: a file's decompressed bytes in blocks (through the reference
reader's own opener), files loaded in parallel threads, largest first, and what sends a
file to the reference reader."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from ..file_stream import _GZIP_ERRORS, open_data
from . import parse
from .parse import Fallback

__all__ = ["FileJob", "threads", "usable_cores"]

T = TypeVar("T")

#: A file to load and the labels its pairs get: ``(path, subset, split)``.
FileJob = tuple[str | os.PathLike[str], str | None, str | None]

#: What reading a damaged or unreadable file raises (the reference reader reports it).
_READ_ERRORS: tuple[type[BaseException], ...] = (*_GZIP_ERRORS, UnicodeDecodeError)

#: What sends a file to the reference reader.
_FALLBACK_ERRORS: tuple[type[BaseException], ...] = (Fallback, *_READ_ERRORS)


def _read_blocks(path: str | os.PathLike[str]) -> Iterator[bytes]:
    """A file's decompressed bytes in blocks, through the reference reader's own opener."""
    with open_data(path) as f:
        while True:
            block = f.read(parse.BLOCK)
            if not block:
                return
            yield block


def threads(n_files: int) -> int:
    """Threads a load uses for ``n_files`` files, at most one per file: ``HH_RLHF_THREADS``
    when set to a positive number, else one per core this process may run on. On 2 cores,
    two threads were faster than one idle (load_arrow 0.30x the floor against 0.40x), with
    one core busy with other work (0.37x against 0.43x) and with both busy (0.33x against
    0.41x); bench/RESULTS-load.md."""
    value = os.environ.get("HH_RLHF_THREADS", "").strip()
    wanted = int(value) if value.isdigit() and int(value) > 0 else usable_cores()
    return max(1, min(wanted, n_files))


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS says, else all)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS and Windows have no affinity call
        return os.cpu_count() or 1


def _map_files(fn: Callable[[Any], T], jobs: list[Any]) -> list[T]:
    """``[fn(job) for job in jobs]``, files in parallel threads: the files are independent,
    and inflating (ISA-L) and the native block parser run without the GIL."""
    n = threads(len(jobs))
    if n <= 1:
        return [fn(job) for job in jobs]
    with ThreadPoolExecutor(n, thread_name_prefix="hhrlhf-load") as pool:
        return [f.result() for f in _submit_files(pool, fn, jobs)]


def _submit_files(
    pool: ThreadPoolExecutor, fn: Callable[[Any], T], jobs: list[Any]
) -> list[Future[T]]:
    """``fn`` of each job submitted largest file first, so that the threads finish together
    (in upstream's order, the largest file comes last and one thread reads it alone); the
    futures in the jobs' order, so results and the first error keep it."""

    def size(k: int) -> int:
        try:
            return os.path.getsize(jobs[k][0])
        except OSError:
            return 0

    futures: dict[int, Future[T]] = {}
    for k in sorted(range(len(jobs)), key=size, reverse=True):
        futures[k] = pool.submit(fn, jobs[k])
    return [futures[k] for k in range(len(jobs))]
