"""A real PostgreSQL server for the tests: initdb + pg_ctl into a temporary folder,
listening on 127.0.0.1 on a free port, trusted for local connections, stopped at the end.

``initdb`` refuses to run as root, so as root the cluster belongs to the ``postgres``
user and its commands run through ``runuser -u postgres --``. The binaries are found in
/usr/lib/postgresql/*/bin (Debian's layout) or on PATH; ``scripts/test.sh`` installs
them when missing.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path


def binaries() -> Path | None:
    """The folder of ``initdb`` and ``pg_ctl``, newest PostgreSQL first; None when absent."""
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(folder) / "initdb").exists():
            return Path(folder)
    found = shutil.which("initdb")
    return Path(found).parent if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class PostgresServer:
    bin: Path
    data: Path
    port: int
    user: str
    fsync: bool = False

    @property
    def admin_url(self) -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/postgres"

    def url(self, database: str) -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        """A new empty database; its URL."""
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def drop_database(self, url: str) -> None:
        import psycopg

        name = url.rsplit("/", 1)[1]
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def stop(self) -> None:
        _run(self, ["pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop"], check=False)
        shutil.rmtree(self.data.parent, ignore_errors=True)

    def halt(self) -> None:
        """Stop the server as a crash or a power cut would (``-m immediate``: every
        connection cut, no checkpoint), keeping its data for ``restart``."""
        _run(self, ["pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop"])

    def restart(self) -> None:
        """Start a halted server again, on the same port with the same data."""
        _pg_start(self)


def _as_owner(command: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if os.getuid() == 0 else command


def _run(server: PostgresServer, command: list[str], check: bool = True):
    command = [str(server.bin / command[0]), *command[1:]]
    return subprocess.run(_as_owner(command), check=check, capture_output=True, text=True)


def _pg_start(server: PostgresServer) -> None:
    root = server.data.parent
    fsync = "on" if server.fsync else "off"
    options = f"-c listen_addresses=127.0.0.1 -p {server.port} -k {root} -c fsync={fsync}"
    _run(
        server,
        ["pg_ctl", "-D", str(server.data), "-o", options, "-l", str(root / "log"), "-w", "start"],
    )


def start(fsync: bool = False) -> PostgresServer:
    """Start a throwaway cluster; raises with initdb's or pg_ctl's own output on failure.
    ``fsync``: sync each commit to disk as a production server does (a bench comparing
    backends needs it; the tests do not)."""
    folder = binaries()
    if folder is None:
        raise RuntimeError(
            "PostgreSQL is not installed (no initdb): apt-get install postgresql, "
            "or run scripts/test.sh, which does."
        )
    root = Path(tempfile.mkdtemp(prefix="stepwise-pg-"))
    data = root / "data"
    user = "postgres" if os.getuid() == 0 else (os.environ.get("USER") or "postgres")
    if os.getuid() == 0:
        shutil.chown(root, "postgres")
        os.chmod(root, 0o700)
    server = PostgresServer(folder, data, _free_port(), user, fsync)
    try:
        _run(server, ["initdb", "-D", str(data), "-U", user, "-A", "trust", "-E", "UTF8"])
        _pg_start(server)
    except subprocess.CalledProcessError as exc:
        log = (root / "log").read_text() if (root / "log").exists() else ""
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"PostgreSQL did not start: {exc.stderr}{exc.stdout}{log}") from None
    return server
