"""A real PostgreSQL whose test database lives on a small disk that a test fills: a tmpfs
mounted in a mount namespace of the server's own (``unshare -m``: the server is started
inside it and keeps it; nothing is mounted where others would see it), used as the
tablespace of the databases ``create_database`` makes. The server's WAL stays on the
ordinary disk, so a full tablespace is what PostgreSQL answers with SQLSTATE 53100
("could not extend file ...: No space left on device"), not a crash. ``fill`` also takes
the room left inside the tables' pages (``postgres_full_tables``), so that nothing new
fits anywhere until ``free``.

The test fills and frees that disk from outside through the server's own view of the
file system (``/proc/<postmaster>/root``). It needs root: PostgreSQL runs as the
``postgres`` user, which a user namespace (the unprivileged way of
``tests/support_procs/full_disk.py``) cannot map.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from tests.support_procs.postgres_full_tables import TableFiller
from tests.support_procs.postgres_server import (
    PostgresServer,
    _as_owner,
    _free_port,
    _run,
    binaries,
)

SIZE_MB = 8
TABLESPACE = "small_disk"


def unusable() -> str | None:
    """Why no PostgreSQL on a small disk can be made here (None: it can)."""
    if binaries() is None:
        return "PostgreSQL is not installed (no initdb)"
    if os.getuid() != 0:
        return "not root: PostgreSQL runs as its own user, which a user namespace cannot map"
    if not shutil.which("unshare"):
        return "no unshare(1) on this machine"
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"no mount namespace may be made here: {probe.stderr.strip()}"
    return None


@dataclass
class SmallDiskPostgres(PostgresServer):
    disk: Path = Path("/nonexistent")  # the tmpfs, where the server sees it
    databases: list[str] = field(default_factory=list)  # the URLs create_database made
    fillers: list[TableFiller] = field(default_factory=list)

    def create_database(self) -> str:
        """A new empty database in the small disk's tablespace; its URL."""
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name} TABLESPACE {TABLESPACE}")
        self.databases.append(self.url(name))
        return self.url(name)

    def _seen(self) -> Path:
        """The small disk as seen from here: through the server's own mount namespace."""
        pid = int((self.data / "postmaster.pid").read_text().split()[0])
        return Path(f"/proc/{pid}/root") / self.disk.relative_to("/")

    def free_bytes(self) -> int:
        stat = os.statvfs(self._seen())
        return stat.f_bavail * stat.f_frsize

    def fill(self) -> None:
        """Leave no room on the small disk (a filler file takes it all), nor inside the
        tables of the databases made here (``postgres_full_tables``: the room left in
        their pages filled by a transaction kept open until ``free``)."""
        for url in self.databases:
            filler = TableFiller(url)
            self.fillers.append(filler)
            filler.fill(self._fill_disk)
        self._fill_disk()  # (again, or first with no database made here)

    def _fill_disk(self) -> None:
        with open(self._seen() / "filler", "ab") as out:
            while True:
                try:
                    out.write(b"\0" * (1 << 20))
                    out.flush()
                except OSError:  # full: that is the point
                    break

    def free(self) -> None:
        for filler in self.fillers:
            filler.release()
        self.fillers.clear()
        (self._seen() / "filler").unlink(missing_ok=True)

    def stop(self) -> None:
        for filler in self.fillers:
            filler.release()
        self.fillers.clear()
        super().stop()


def start(size_mb: int = SIZE_MB) -> SmallDiskPostgres:
    """Start a throwaway cluster with a tablespace on a tmpfs of ``size_mb`` MB that only
    the server sees; raises with the commands' own output on failure."""
    folder = binaries()
    assert folder is not None, unusable()
    root = Path(tempfile.mkdtemp(prefix="stepwise-pg-small-"))
    shutil.chown(root, "postgres")
    os.chmod(root, 0o700)
    disk = root / "disk"
    disk.mkdir()
    server = SmallDiskPostgres(folder, root / "data", _free_port(), "postgres", disk=disk)
    options = f"-c listen_addresses=127.0.0.1 -p {server.port} -k {root} -c fsync=off"
    pg_ctl = [str(folder / "pg_ctl"), "-D", str(server.data), "-o", options]
    pg_ctl += ["-l", str(root / "log"), "-w", "start"]
    inside = " && ".join(
        [
            f"mount -t tmpfs -o size={size_mb}m,mode=0700 tmpfs {shlex.quote(str(disk))}",
            f"chown postgres {shlex.quote(str(disk))}",
            shlex.join(_as_owner(["mkdir", str(disk / "ts")])),
            shlex.join(_as_owner(pg_ctl)),
        ]
    )
    try:
        _run(
            server,
            ["initdb", "-D", str(server.data), "-U", "postgres", "-A", "trust", "-E", "UTF8"],
        )
        subprocess.run(
            ["unshare", "-m", "--propagation", "private", "sh", "-c", inside],
            check=True,
            capture_output=True,
            text=True,
        )
        import psycopg

        with psycopg.connect(server.admin_url, autocommit=True) as conn:
            conn.execute(f"CREATE TABLESPACE {TABLESPACE} LOCATION '{disk / 'ts'}'")
    except Exception as exc:  # the commands' output, or the server's refusal
        log = (root / "log").read_text() if (root / "log").exists() else ""
        server.stop()
        detail = (
            f"{exc.stderr}{exc.stdout}" if isinstance(exc, subprocess.CalledProcessError) else exc
        )
        raise RuntimeError(f"PostgreSQL on a small disk did not start: {detail}{log}") from None
    return server
