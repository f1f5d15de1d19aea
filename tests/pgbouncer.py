"""A throwaway PgBouncer in front of the tests' PostgreSQL server (Debian's ``pgbouncer``).

It listens on a Unix socket in a temp folder only, trusts every client (as the test server
does) and pools in **transaction** mode: each transaction may get a different server
connection, the mode that breaks clients relying on session state or server-side prepared
statements. ``pool_size`` caps the server connections it opens per database and user.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from pgserver import PostgresServer, _run_as

__all__ = ["find_pgbouncer", "PgBouncer", "SKIP_REASON"]

SKIP_REASON = "pgbouncer not found: apt-get install pgbouncer"
PORT = 6432


def find_pgbouncer() -> Path | None:
    for candidate in (shutil.which("pgbouncer"), "/usr/sbin/pgbouncer"):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


class PgBouncer:
    def __init__(self, server: PostgresServer, *, pool_size: int = 3, binary: Path | None = None):
        self.server = server
        self.pool_size = pool_size
        self.binary = binary or find_pgbouncer()
        if self.binary is None:
            raise RuntimeError(SKIP_REASON)
        self.user = _run_as()
        self.root: Path | None = None
        self.proc: subprocess.Popen | None = None

    def start(self) -> PgBouncer:
        self.root = Path(tempfile.mkdtemp(prefix="hh-pgb-"))
        (self.root / "users.txt").write_text(f'"{self.server.role}" ""\n')
        (self.root / "pgbouncer.ini").write_text(
            "[databases]\n"
            f"* = host={self.server.root}\n"
            "[pgbouncer]\n"
            f"unix_socket_dir = {self.root}\n"
            f"listen_port = {PORT}\n"
            "auth_type = trust\n"
            f"auth_file = {self.root / 'users.txt'}\n"
            "pool_mode = transaction\n"
            f"default_pool_size = {self.pool_size}\n"
            "max_client_conn = 500\n"
            f"logfile = {self.root / 'log'}\n"
        )
        if self.user is not None:
            pw = pwd.getpwnam(self.user)
            for path in (self.root, *self.root.iterdir()):
                os.chown(path, pw.pw_uid, pw.pw_gid)
        self.proc = subprocess.Popen(
            [str(self.binary), str(self.root / "pgbouncer.ini")],
            user=self.user,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        socket = self.root / f".s.PGSQL.{PORT}"
        deadline = time.monotonic() + 10
        while not socket.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                log = (self.root / "log").read_text() if (self.root / "log").exists() else ""
                self.stop()
                raise RuntimeError(f"could not start pgbouncer: {err}{log}")
            time.sleep(0.05)
        return self

    def url(self, database: str) -> str:
        """A SQLAlchemy URL for ``database`` through the pooler."""
        return f"postgresql+psycopg://{self.server.role}@/{database}?host={self.root}&port={PORT}"

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.proc = None
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None
