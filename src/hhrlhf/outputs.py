"""Output paths: checked before any work starts, never replaced silently, written whole.

Every command that writes (``--out``, ``--report``, ``--plots``, ``--hf``, model
directories) calls :func:`check_writable` first, so a path that cannot be written (no
permission, a read-only file system, a regular file where a folder is needed) is one
:class:`~hhrlhf.errors.OutputError` before the data is read or a model trained, and an
existing output is refused unless ``force``. Missing parent folders are created when the
output is written, as long as the nearest existing one is a writable folder.

Folders. Every output folder hhrlhf writes holds a marker file, :data:`MARKER`, naming the
command and listing the files it wrote. ``--force`` replaces such a folder whole, and only
such a folder: a non-empty folder without the marker, or one holding anything the marker
does not list (a ``thesis.tex`` put there later), is refused whatever the flags, and so are
the current folder, any folder that holds it, and any folder that holds what the command
reads (``reads``: the data, a database file). :func:`replace_dir` builds the folder in a
fresh temporary folder beside the target, marks it and swaps it in; a symbolic link given as
the output keeps pointing where it did, at the new folder.

Files. :func:`atomic_file` and :func:`atomic_files` write beside the target and rename into
place only when complete (several files: all of them, or none); :func:`write_atomic` writes
bytes that way. A link given as an output file is followed: the file it points to is
replaced, the link stays. Ctrl-C during the renames is held back until they are done.

Example::

    from hhrlhf.outputs import check_writable, replace_dir

    out = check_writable("pm-model", kind="dir", force=True)
    with replace_dir(out, command="hh pm train") as tmp:
        model.save(tmp)
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path, PurePosixPath
from types import FrameType
from typing import Any

from .errors import OutputError

__all__ = [
    "MARKER",
    "atomic_file",
    "atomic_files",
    "check_writable",
    "interrupts_held",
    "mark",
    "plain_mode",
    "replace_dir",
    "replaceable",
    "write_atomic",
    "written_by",
]

#: The file that marks a folder as an hhrlhf output that ``--force`` may replace whole.
MARKER = ".hh-output"
_FORMAT = "hhrlhf-output/1"
_NOTE = "--force replaces this whole folder; files it does not list make --force refuse"

PathLike = str | os.PathLike[str]


def plain_mode(path: PathLike, *, folder: bool = False) -> None:
    """Give a file made by ``mkstemp`` (0600) or a folder made by ``mkdtemp`` (0700) the mode
    a plain ``open``/``mkdir`` would have had under the current umask: the private mode
    protects the temporary name only, not the output other people read."""
    os.chmod(path, (0o777 if folder else 0o666) & ~_umask())


def _umask() -> int:
    """The process's umask, read where Linux shows it: setting it to read it (``os.umask``)
    would leave it at 0 for a moment, when a file another thread creates is world-writable."""
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    umask = os.umask(0)  # elsewhere: the only portable way
    os.umask(umask)
    return umask


# --- markers ----------------------------------------------------------------------------


def _listing(folder: Path) -> list[str]:
    """Every entry under ``folder`` as a relative POSIX path, links not followed."""
    found = []
    for root, dirs, files in os.walk(folder, followlinks=False):
        rel = Path(root).relative_to(folder)
        for name in (*dirs, *files):
            found.append((rel / name).as_posix())
    return sorted(p for p in found if p != MARKER)


def mark(folder: PathLike, command: str) -> None:
    """Write :data:`MARKER` in ``folder``: written by ``command``, listing what it holds now."""
    folder = Path(folder)
    text = {"format": _FORMAT, "written_by": command, "note": _NOTE, "files": _listing(folder)}
    (folder / MARKER).write_text(json.dumps(text, indent=1) + "\n", encoding="utf-8")


def _marker(folder: Path) -> dict[str, Any] | None:
    marker = folder / MARKER
    if marker.is_symlink() or not marker.is_file():
        return None
    try:
        info = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ok = isinstance(info, dict) and info.get("format") == _FORMAT
    if not ok or not isinstance(info.get("written_by"), str):
        return None
    if not isinstance(info.get("files"), list):
        return None
    return dict(info)


def written_by(folder: PathLike) -> str | None:
    """The command that wrote ``folder`` (a real folder holding a valid :data:`MARKER`), or
    None for a folder hhrlhf did not mark."""
    folder = Path(folder)
    if not folder.is_dir():
        return None
    info = _marker(folder)
    return None if info is None else str(info["written_by"])


def _foreign(folder: Path) -> list[str] | None:
    """What ``folder`` holds that hhrlhf did not write: its entries not in the marker's list
    (all of them when it has no marker); None when there is nothing but what it wrote."""
    info = _marker(folder)
    listed = set(info["files"]) if info else set()
    if info is None:
        extra = sorted(
            p.name + ("/" if p.is_dir() and not p.is_symlink() else "") for p in folder.iterdir()
        )
    else:
        new = [p for p in _listing(folder) if p not in listed]
        # a new folder counts once, not with every file in it
        unlisted = set(new)
        extra = [p for p in new if not any(str(a) in unlisted for a in PurePosixPath(p).parents)]
    return extra or None


def replaceable(folder: PathLike) -> bool:
    """Whether ``folder`` is an hhrlhf output holding nothing but what it lists (so
    ``--force`` may replace it whole), or an empty folder."""
    folder = Path(folder)
    return folder.is_dir() and _foreign(folder) is None


# --- what must never be replaced ---------------------------------------------------------


def _holds(folder: Path, path: PathLike) -> bool:
    """Whether ``folder`` is ``path`` or one of its ancestors, by inode (links, bind mounts)."""
    try:
        target = os.stat(folder)
    except OSError:
        return False
    real = Path(os.path.realpath(path))
    for p in (real, *real.parents):
        with contextlib.suppress(OSError):
            if os.path.samestat(os.stat(p), target):
                return True
    return False


def _same_file(a: PathLike, b: PathLike) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _guard(path: Path, kind: str, option: str, reads: Iterable[tuple[PathLike, str]]) -> None:
    """Refuse an output that is (or holds) the current folder or what the command reads."""
    if kind == "dir" and _holds(path, Path.cwd()):
        where = (
            "the current folder"
            if _same_file(path, Path.cwd())
            else "a folder holding the current folder"
        )
        raise OutputError(path, f"{option}: is {where}: choose another folder")
    for read, what in reads:
        if not os.path.exists(read):  # nothing there to lose (the command says it is missing)
            continue
        if kind == "file" and _same_file(path, read):
            raise OutputError(path, f"{option}: is {what} this command reads: choose another path")
        if kind == "dir" and _holds(path, read):
            verb = "is" if _same_file(path, read) else "holds"
            raise OutputError(
                path, f"{option}: {verb} {what} this command reads ({read}): choose another folder"
            )
        if kind == "dir" and path.is_dir():
            for entry in path.iterdir():  # a hard link or a link to it in the folder itself
                if _same_file(entry, read):
                    raise OutputError(
                        path,
                        f"{option}: holds {what} this command reads ({entry.name}): choose another folder",
                    )


def _names(items: Sequence[str], at_most: int = 3) -> str:
    from .text import printable

    shown = ", ".join(printable(i, keep_newlines=False) for i in items[:at_most])
    return shown + (", ..." if len(items) > at_most else "")


def _check_folder(path: Path, force: bool, option: str) -> None:
    """An existing folder: empty, or an hhrlhf output holding nothing else (and ``force``)."""
    if not any(path.iterdir()):
        return
    foreign = _foreign(path)
    if foreign:
        n = len(foreign)
        what = f"{n} item{'s' if n != 1 else ''} hhrlhf did not write ({_names(foreign)})"
        err = OutputError(path, f"{option}: holds {what}: choose another folder")
        err.hint = "--force replaces only a folder hhrlhf wrote, and never what others put there"
        raise err
    if not force:
        cmd = written_by(path)
        err = OutputError(
            path, f"{option}: folder exists (written by {cmd}); pass --force to replace it"
        )
        err.hint = "choose a new path, or pass --force to replace it"
        raise err


def _probe(folder: Path, path: Path, option: str) -> None:
    """Create and remove a file with an unpredictable name in ``folder``: the only test of
    writability that also holds for root, read-only mounts and ACLs."""
    try:
        fd, name = tempfile.mkstemp(prefix=".hh-probe-", dir=folder)
    except OSError as exc:
        why = exc.strerror or str(exc)
        raise OutputError(path, f"{option}: cannot write in {folder} ({why})") from None
    os.close(fd)
    os.unlink(name)


def check_writable(
    path: PathLike,
    *,
    kind: str = "file",
    force: bool = False,
    option: str = "--out",
    reads: Iterable[tuple[PathLike, str]] = (),
    into: bool = False,
) -> Path:
    """Check that ``path`` can be written as a ``kind`` (``"file"`` or ``"dir"``); return it.

    An existing file is refused unless ``force``; an existing non-empty folder is refused
    unless it is an hhrlhf output holding nothing else (:data:`MARKER`) and ``force``. The
    current folder, a folder holding it, and an output that is or holds one of ``reads``
    (``(path, "the data")`` pairs) are always refused. Raises
    :class:`~hhrlhf.errors.OutputError` naming the path and the problem; ``option`` names the
    command-line option in the message. ``into``: a folder that files are written into one by
    one (a cache), never replaced: only whether it can be written is checked.
    """
    if kind not in ("file", "dir"):
        raise ValueError(f"kind must be 'file' or 'dir', not {kind!r}")
    path = Path(path)
    if path.is_symlink() and not path.exists():
        raise OutputError(path, f"{option}: a dangling symbolic link; remove it first")
    if into and kind == "dir" and path.is_dir():
        _probe(path, path, option)
        return path
    _guard(path, kind, option, list(reads))
    if path.exists():
        if kind == "file" and path.is_dir():
            raise OutputError(path, f"{option}: is a folder, a file is needed")
        if kind == "dir" and not path.is_dir():
            raise OutputError(path, f"{option}: is a file, a folder is needed")
        if kind == "dir":
            _check_folder(path, force, option)
            real = Path(os.path.realpath(path))
            _probe(real.parent, path, option)  # the new folder is built beside it
        elif not force:
            err = OutputError(path, f"{option}: file exists; pass --force to replace it")
            err.hint = "choose a new path, or pass --force to replace it"
            raise err
        else:
            _probe(Path(os.path.realpath(path)).parent, path, option)
            if not os.access(path, os.W_OK):
                raise OutputError(path, f"{option}: the file is not writable")
        return path
    ancestor = path.parent
    while not ancestor.exists():
        if ancestor.is_symlink():
            raise OutputError(path, f"{option}: {ancestor} is a dangling symbolic link")
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise OutputError(path, f"{option}: {ancestor} is a file, not a folder")
    _probe(ancestor, path, option)
    return path


# --- writing ------------------------------------------------------------------------------


@contextlib.contextmanager
def interrupts_held() -> Iterator[None]:
    """Hold back Ctrl-C (SIGINT) until the block ends, then deliver it: for the renames that
    put several outputs in place, which must all happen or none. Elsewhere than the main
    thread (where signals cannot be handled) the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        caught.append(signum)

    previous = signal.signal(signal.SIGINT, hold)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if caught and callable(previous):
            previous(signal.SIGINT, None)
        elif caught and previous == signal.SIG_DFL:
            os.kill(os.getpid(), signal.SIGINT)  # what it would have done: end the process


def _target(path: PathLike) -> Path:
    """Where an output really goes: links are followed (a link given as the output stays, and
    points at the new output), ``.`` and ``..`` resolved."""
    return Path(os.path.realpath(path))


def _temp_file(path: Path) -> Path:
    """An empty temporary file beside ``path`` whose name ends like it (``.jsonl.gz``...), so
    the writers that go by the ending write the right container."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=".hh-part-", suffix=f"-{path.name}", dir=path.parent)
    os.close(fd)
    return Path(name)


@contextlib.contextmanager
def atomic_files(paths: Sequence[PathLike]) -> Iterator[list[Path]]:
    """Yield one temporary file beside each of ``paths``; when the block ends without an
    error they are renamed into place, all of them (Ctrl-C held back meanwhile), else
    removed and the old files left as they were."""
    targets = [_target(p) for p in paths]
    parts: list[Path] = []
    try:
        for t in targets:
            parts.append(_temp_file(t))
        yield list(parts)
        for part in parts:
            plain_mode(part)
        with interrupts_held():
            for part, t in zip(parts, targets, strict=True):
                os.replace(part, t)
    finally:
        for part in parts:
            with contextlib.suppress(OSError):
                part.unlink()


@contextlib.contextmanager
def atomic_file(path: PathLike) -> Iterator[Path]:
    """:func:`atomic_files` for one file."""
    with atomic_files([path]) as (part,):
        yield part


def write_atomic(path: PathLike, data: bytes, *, sync: bool = False) -> None:
    """Write ``data`` to ``path`` through a temporary file beside it (``sync``: flushed to
    disk before the rename)."""
    with atomic_file(path) as part:
        with open(part, "wb") as f:
            f.write(data)
            if sync:
                f.flush()
                os.fsync(f.fileno())


def _command() -> str:
    """The command running (``hh clean``), for the marker; ``hhrlhf`` outside the CLI."""
    import sys

    if "click" not in sys.modules:
        return "hhrlhf"
    import click

    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return "hhrlhf"
    names: list[str] = []
    while ctx.parent is not None:  # the root's name is the program's, whatever runs it
        names.insert(0, ctx.info_name or "")
        ctx = ctx.parent
    return " ".join(["hh", *names]) if names else f"hh {ctx.info_name}"


@contextlib.contextmanager
def replace_dir(
    path: PathLike, *, command: str | None = None, reads: Iterable[tuple[PathLike, str]] = ()
) -> Iterator[Path]:
    """Yield a fresh temporary folder beside ``path``; on success it becomes ``path``, marked
    (:data:`MARKER`) as written by ``command`` (default: the running ``hh`` command).

    An existing ``path`` is replaced only if it is empty or an hhrlhf output holding nothing
    else, and never when it is (or holds) the current folder or one of ``reads``; it is moved
    aside and removed once the new one is in place. On an error the temporary folder is
    removed and ``path`` left as it was. A link given as ``path`` is followed and stays.
    """
    given = Path(path)
    reads = list(reads)
    _guard(given, "dir", "output folder", reads)
    target = _target(given)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.new-", dir=target.parent))
    try:
        plain_mode(tmp, folder=True)
        yield tmp
        mark(tmp, command or _command())
        _swap(tmp, target, given, reads)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _swap(tmp: Path, target: Path, given: Path, reads: list[tuple[PathLike, str]]) -> None:
    old = None
    with interrupts_held():
        if target.exists() or target.is_symlink():
            # checked again now, with the work done: what is there may have changed meanwhile
            _guard(given, "dir", "output folder", reads)
            if not target.is_dir():
                raise OutputError(given, "output folder: is a file, a folder is needed")
            _check_folder(target, True, "output folder")
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
            os.replace(target, old / "content")
        os.replace(tmp, target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
