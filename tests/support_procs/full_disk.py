"""A real full disk for a test, without root: a tmpfs of ``SIZE_MB`` mounted in a user and
mount namespace of a child process (``unshare -Urm``; no loop device, no sudo, where
unprivileged user namespaces are allowed), with STEPWISE_HOME on it. The writes fail as
on any full disk: ENOSPC from the kernel, SQLite's "database or disk is full".

The test's scenario runs in that child (a mount namespace belongs to a process: SQLite
in the test's own process would resolve ``/proc/<pid>/root`` back to this one's files).
``in_full_disk("tests.unit.test_disk_full:_scenario", tmp_path)`` runs ``_scenario(disk)``
there and returns the JSON-safe dict it returned.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SIZE_MB = 8
MARK = "full-disk-result: "


class Disk:
    """The child's small disk: ``fill`` it to leave ``free_kb``, ``free`` it again."""

    def __init__(self, mount: Path):
        self.mount = mount
        self.home = mount / "home"
        self.filler = mount / "filler"

    def free_bytes(self) -> int:
        stat = os.statvfs(self.mount)
        return stat.f_bavail * stat.f_frsize

    def fill(self, free_kb: int = 0) -> None:
        left = self.free_bytes() - free_kb * 1024
        with open(self.filler, "ab") as out:
            while left > 0:
                chunk = min(left, 1 << 20)
                try:
                    out.write(b"\0" * chunk)
                    out.flush()
                except OSError:  # full: that is the point
                    break
                left -= chunk

    def free(self) -> None:
        self.filler.unlink(missing_ok=True)


def unusable() -> str | None:
    """Why no full disk can be made here (None: it can)."""
    if not shutil.which("unshare"):
        return "no unshare(1) on this machine"
    probe = subprocess.run(["unshare", "-Urm", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"unprivileged user namespaces are not allowed here: {probe.stderr.strip()}"
    return None


def in_full_disk(target: str, workdir: Path, timeout: float = 300) -> dict[str, Any]:
    """Run ``module:function`` on a small disk of its own; what it returned."""
    child = subprocess.run(
        ["unshare", "-Urm", sys.executable, "-m", "tests.support_procs.full_disk", target],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**os.environ, "FULL_DISK_WORKDIR": str(workdir)},
    )
    for line in child.stdout.splitlines():
        if line.startswith(MARK):
            return json.loads(line.removeprefix(MARK))
    raise AssertionError(f"{target} gave no result (exit {child.returncode}): {child.stderr}")


def main(target: str) -> None:
    mount = Path(os.environ["FULL_DISK_WORKDIR"]) / "disk"
    mount.mkdir(parents=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={SIZE_MB}m", "tmpfs", str(mount)], check=True
    )
    disk = Disk(mount)
    disk.home.mkdir()
    os.environ.update({"STEPWISE_HOME": str(disk.home), "STEPWISE_PROVIDER": "scripted"})
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "STEPWISE_DATABASE_URL"):
        os.environ.pop(name, None)
    sys.path.insert(0, str(ROOT))
    import graph.registry  # noqa: F401  (the shipped systems, as the tests' conftest has them)

    module, _, function = target.partition(":")
    result = getattr(importlib.import_module(module), function)(disk)
    print(MARK + json.dumps(result), flush=True)
    os._exit(0)  # the scenario's worker threads are not waited for


if __name__ == "__main__":
    main(sys.argv[1])
