"""A real OpenTelemetry backend for the tests: Arize Phoenix (``phoenix serve``), which takes
OTLP over HTTP at ``/v1/traces`` and answers what it stored at ``/v1/projects/…/spans``.

Phoenix lives in a virtual environment of its own (``.venv-phoenix``, made by
``scripts/test.sh`` from ``requirements-phoenix.txt``): its dependencies would move the
app's pinned versions. It starts on loopback on free ports, its database in a temporary
folder, off the network (no telemetry, no downloads, no assistant), and every Python
process of it records any host beyond loopback it reaches (``net_audit``).

    python tests/support_procs/phoenix_server.py     # serve in the foreground
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support_procs.langgraph_server import AUDIT, _free_port

ROOT = Path(__file__).resolve().parents[2]
PHOENIX = ROOT / ".venv-phoenix" / "bin" / "phoenix"


class PhoenixMissing(RuntimeError):
    pass


@dataclass
class PhoenixServer:
    process: subprocess.Popen
    port: int
    home: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.url + path, timeout=30) as reply:
            return json.load(reply)

    def spans(self, project: str = "default") -> list[dict]:
        """Every span the project holds, as Phoenix's REST API gives them."""
        found: list[dict] = []
        cursor = ""
        while True:
            page = self.get(f"/v1/projects/{project}/spans?limit=1000{cursor}")
            found += page["data"]
            if not page.get("next_cursor"):
                return found
            cursor = f"&cursor={page['next_cursor']}"

    def off_loopback(self) -> list[str]:
        audit = self.home / "network-audit.txt"
        return audit.read_text().splitlines() if audit.exists() else []

    def log_tail(self, lines: int = 40) -> str:
        text = (self.home / "phoenix.log").read_text(errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=30)
        shutil.rmtree(self.home, ignore_errors=True)


def start(timeout: float = 300.0) -> PhoenixServer:
    """Start Phoenix and wait until its API answers (its first start migrates a new
    database: most of a minute on two busy cores)."""
    if not PHOENIX.exists():
        raise PhoenixMissing(
            f"{PHOENIX} is missing: `bash scripts/test.sh` installs Arize Phoenix into "
            ".venv-phoenix (requirements-phoenix.txt) before the server tests."
        )
    home = Path(tempfile.mkdtemp(prefix="stepwise-phoenix-"))
    port = _free_port()
    environment = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(home),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(_free_port()),
        # off the network: no usage pixels, no downloads or fonts of its own initiative,
        # no assistant (it connects to hosted documentation and GitHub servers)
        "PHOENIX_TELEMETRY_ENABLED": "false",
        "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
        "PHOENIX_DISABLE_AGENT_ASSISTANT": "true",
        "PYTHONPATH": str(AUDIT),
        "STEPWISE_NET_AUDIT": str(home / "network-audit.txt"),
        "PYTHONUNBUFFERED": "1",
    }
    with open(home / "phoenix.log", "w") as out:
        process = subprocess.Popen(
            [str(PHOENIX), "serve"],
            cwd=home,
            env=environment,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = PhoenixServer(process, port, home)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"phoenix serve exited {process.returncode}:\n{server.log_tail()}")
        try:
            server.get("/v1/projects")
            return server
        except OSError:
            time.sleep(0.5)
    tail = server.log_tail()
    server.stop()
    raise RuntimeError(f"phoenix serve did not answer in {timeout:.0f} s:\n{tail}")


if __name__ == "__main__":
    phoenix = start()
    print(f"Phoenix at {phoenix.url} (OTLP/HTTP at {phoenix.url}/v1/traces; Ctrl-C stops)")
    try:
        phoenix.process.wait()
    except KeyboardInterrupt:
        phoenix.stop()
