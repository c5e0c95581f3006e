"""A throwaway PostgreSQL server in a folder of its own, for tests, benchmarks and trying agentcell out.

``ScratchPostgres().start()`` runs ``initdb`` and ``pg_ctl`` from the machine's PostgreSQL (Debian's
``postgresql`` package puts them in ``/usr/lib/postgresql/<version>/bin``) on a free port of 127.0.0.1,
with its socket in the same folder; ``stop()`` removes everything. The server refuses to run as root, so
as root the binaries run as the ``postgres`` user. Local (socket) connections are trusted; TCP ones need
a password (SCRAM), so a test can check what happens to one.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

from ..errors import ConfigurationError

__all__ = ["ScratchPostgres", "find_pg_bin"]


def find_pg_bin() -> Path:
    """The folder of ``initdb`` and ``pg_ctl``: the newest under /usr/lib/postgresql, else on PATH."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    if initdb := shutil.which("initdb"):
        return Path(initdb).parent
    raise ConfigurationError(
        "no PostgreSQL server binaries (initdb, pg_ctl) on this machine; install them "
        "(Debian: apt-get install postgresql)"
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ScratchPostgres:
    def __init__(self, *, fsync: bool = False, port: int | None = None) -> None:
        """``fsync``: False trades durability after a power loss for speed (a test server)."""
        self.bin = find_pg_bin()
        self.port = port or _free_port()
        self.fsync = fsync
        self.folder = Path(tempfile.mkdtemp(prefix="agentcell-pg-"))
        self.data = self.folder / "data"
        self._as_postgres = os.geteuid() == 0

    def _run(self, *argv: str) -> None:
        command = [str(self.bin / argv[0]), *argv[1:]]
        if self._as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            log = (self.folder / "server.log").read_text() if (self.folder / "server.log").exists() else ""
            raise RuntimeError(f"{' '.join(argv[:2])} failed: {done.stderr.strip() or done.stdout.strip()}\n{log}")

    def _options(self) -> str:
        fsync = "on" if self.fsync else "off"
        return f"-k {self.folder} -p {self.port} -c listen_addresses=127.0.0.1 -c fsync={fsync}"

    def start(self) -> ScratchPostgres:
        if self._as_postgres:
            shutil.chown(self.folder, "postgres", "postgres")
        if not self.data.exists():
            self._run(
                "initdb", "-D", str(self.data), "-U", "postgres", "--auth-local=trust",
                "--auth-host=scram-sha-256", "--no-instructions",
            )  # fmt: skip
        self._pg_ctl_start()
        return self

    def _pg_ctl_start(self) -> None:
        self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.folder / "server.log"), "-o", self._options(), "-w", "start"
        )

    def restart(self) -> None:
        """Stop (disconnecting every client) and start again on the same port."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        self._pg_ctl_start()

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.folder, ignore_errors=True)

    def url(self, dbname: str = "postgres", *, user: str = "postgres") -> str:
        """A URL over the folder's socket (trusted: no password)."""
        return f"postgresql://{user}@/{dbname}?host={self.folder}&port={self.port}"

    def tcp_url(self, dbname: str, *, user: str, password: str) -> str:
        return f"postgresql://{user}:{password}@127.0.0.1:{self.port}/{dbname}"

    def sql(self, statement: str, *, dbname: str = "postgres") -> None:
        """Run one statement as the superuser (outside a transaction, so CREATE DATABASE works)."""
        import psycopg

        with psycopg.connect(self.url(dbname), autocommit=True) as conn:
            conn.execute(statement)

    def create_database(self, name: str) -> str:
        self.sql(f'CREATE DATABASE "{name}"')
        return self.url(name)
