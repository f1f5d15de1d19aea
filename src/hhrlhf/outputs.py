"""Output paths: checked before any work starts, never replaced silently, swapped in whole.

Every command that writes (``--out``, ``--report``, ``--plots``, ``--hf``, model
directories) calls :func:`check_writable` first, so a path that cannot be written (no
permission, a read-only file system, a regular file where a folder is needed) is one
:class:`~hhrlhf.errors.OutputError` before the data is read or a model trained, and an
existing output is refused unless ``force``. Missing parent folders are created when the
output is written, as long as the nearest existing one is a writable folder.

:func:`replace_dir` builds a directory output in a fresh temporary folder beside the target
and swaps it in, so replacing a model directory never leaves stray files of the old one.

Example::

    from hhrlhf.outputs import check_writable, replace_dir

    out = check_writable("pm-model", kind="dir", force=True)
    with replace_dir(out) as tmp:
        model.save(tmp)
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from .errors import OutputError

__all__ = ["check_writable", "plain_mode", "replace_dir"]


def plain_mode(path: str | os.PathLike[str], *, folder: bool = False) -> None:
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
    path: str | os.PathLike[str], *, kind: str = "file", force: bool = False, option: str = "--out"
) -> Path:
    """Check that ``path`` can be written as a ``kind`` (``"file"`` or ``"dir"``); return it.

    An existing file, or an existing non-empty folder, is refused unless ``force`` (an empty
    folder is fine). Raises :class:`~hhrlhf.errors.OutputError` naming the path and the
    problem; ``option`` names the command-line option in the message.
    """
    if kind not in ("file", "dir"):
        raise ValueError(f"kind must be 'file' or 'dir', not {kind!r}")
    path = Path(path)
    if path.is_symlink() and not path.exists():
        raise OutputError(path, f"{option}: a dangling symbolic link; remove it first")
    if path.exists():
        if kind == "file" and path.is_dir():
            raise OutputError(path, f"{option}: is a folder, a file is needed")
        if kind == "dir" and not path.is_dir():
            raise OutputError(path, f"{option}: is a file, a folder is needed")
        if kind == "file" or any(path.iterdir()):
            if not force:
                what = "file" if kind == "file" else "folder (not empty)"
                err = OutputError(path, f"{option}: {what} exists; pass --force to replace it")
                err.hint = "choose a new path, or pass --force to replace it"
                raise err
        _probe(path.parent if kind == "file" else path, path, option)
        if kind == "file" and not os.access(path, os.W_OK):
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


@contextlib.contextmanager
def replace_dir(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a fresh temporary folder beside ``path``; on success it becomes ``path``.

    An existing ``path`` is moved aside and removed only once the new one is in place; on
    an error the temporary folder is removed and ``path`` is left as it was.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.new-", dir=path.parent))
    plain_mode(tmp, folder=True)
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = None
    if path.exists() or path.is_symlink():
        old = Path(tempfile.mkdtemp(prefix=f".{path.name}.old-", dir=path.parent))
        os.replace(path, old / "content")
    os.replace(tmp, path)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
