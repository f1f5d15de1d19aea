"""A throwaway PostgreSQL server for the tests: Debian's ``initdb``/``pg_ctl`` in a temp folder.

The server listens on a Unix socket only (no TCP port, so nothing else on the machine can reach
it), runs with ``fsync`` off (a test server needs no durability against power loss; a killed
*process* loses nothing either way) and is stopped and deleted when the session ends.

``initdb`` refuses to run as root; when the tests run as root the server runs as the
``postgres`` system user that Debian's package creates (or ``nobody``).

Use :func:`find_bindir` to learn whether the binaries are there (tests skip with a clear reason
when they are not; ``.ci/run`` installs them so CI never skips), :class:`PostgresServer` to run
one, and :meth:`PostgresServer.new_database` for an empty database per test.
"""

from __future__ import annotations

import glob
import os
import pwd
import re
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

__all__ = ["find_bindir", "PostgresServer", "SKIP_REASON"]

SKIP_REASON = (
    "PostgreSQL binaries (initdb, pg_ctl) not found: apt-get install postgresql "
    "(or set HH_PG_BINDIR to their folder)"
)


def _version_key(path: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", path)) or (0,)


def find_bindir() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``: ``$HH_PG_BINDIR``, Debian's newest, or PATH."""
    env = os.environ.get("HH_PG_BINDIR")
    candidates = [env] if env else []
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version_key, reverse=True)
    initdb = shutil.which("initdb")
    if initdb:
        candidates.append(str(Path(initdb).parent))
    for c in candidates:
        if c and (Path(c) / "initdb").is_file() and (Path(c) / "pg_ctl").is_file():
            return Path(c)
    return None


def _run_as() -> str | None:
    """The user to run the server as: ``None`` (ourselves) unless we are root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise RuntimeError("running as root and no unprivileged user (postgres, nobody) to run initdb")


class PostgresServer:
    """One PostgreSQL server in a temporary folder, reachable through a Unix socket."""

    def __init__(
        self, bindir: Path | None = None, *, max_connections: int = 200, durable: bool = False
    ):
        """``durable``: keep ``fsync`` on (benchmarks); the tests run with it off."""
        self.bindir = bindir or find_bindir()
        self.durable = durable
        if self.bindir is None:
            raise RuntimeError(SKIP_REASON)
        self.max_connections = max_connections
        self.user = _run_as()
        self.root: Path | None = None
        self.role = "hh"

    # -- lifecycle -------------------------------------------------------------------------
    def _cmd(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(self.bindir / args[0]), *args[1:]],
            user=self.user,
            check=check,
            capture_output=True,
            text=True,
            cwd=self.root,
        )

    def start(self) -> PostgresServer:
        self.root = Path(tempfile.mkdtemp(prefix="hh-pg-"))
        if self.user is not None:
            pw = pwd.getpwnam(self.user)
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
        os.chmod(self.root, 0o700)
        data = self.root / "data"
        try:
            self._cmd(
                "initdb",
                "-D",
                str(data),
                "-A",
                "trust",
                "-U",
                self.role,
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            )
            opts = (
                f"-k {self.root} -c listen_addresses='' {'' if self.durable else '-F '}"
                f"-c max_connections={self.max_connections} -c shared_buffers=32MB"
            )
            self._cmd(
                "pg_ctl", "-D", str(data), "-o", opts, "-w", "-l", str(self.root / "log"), "start"
            )
        except subprocess.CalledProcessError as exc:
            log = (self.root / "log").read_text() if (self.root / "log").exists() else ""
            self.stop()
            raise RuntimeError(f"could not start PostgreSQL: {exc.stderr}{log}") from exc
        return self

    def stop(self) -> None:
        if self.root is None:
            return
        data = self.root / "data"
        if (data / "postmaster.pid").exists():
            self._cmd("pg_ctl", "-D", str(data), "-m", "immediate", "-w", "stop", check=False)
        shutil.rmtree(self.root, ignore_errors=True)
        self.root = None

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- databases -------------------------------------------------------------------------
    def url(self, database: str = "postgres", driver: str = "postgresql+psycopg") -> str:
        """A SQLAlchemy URL for ``database`` over the server's Unix socket."""
        return f"{driver}://{self.role}@/{database}?host={self.root}"

    def conninfo(self, database: str = "postgres") -> str:
        """A libpq connection string (for psycopg directly)."""
        return f"host={self.root} user={self.role} dbname={database}"

    def new_database(self, prefix: str = "t", *, template: str | None = None) -> str:
        """Create a database (empty, or a copy of the database ``template``, which nothing may
        be connected to) and return its SQLAlchemy URL."""
        import psycopg

        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        copy = f' TEMPLATE "{template}"' if template else ""
        with psycopg.connect(self.conninfo(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"{copy}')
        return self.url(name)
