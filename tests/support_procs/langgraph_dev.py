"""A real LangGraph Server (``langgraph dev``, in-memory) serving graphs Stepwise did not
define, for the Server page's tests: ``tests/server_graphs/`` (its own ``langgraph.json``).

The folder is copied to a temporary one first: ``langgraph dev`` keeps its threads in a
``.langgraph_api`` folder where it runs, so each start begins empty and the repo stays clean.
Offline: no tracing, no analytics, no browser, no reload.

    python tests/support_procs/langgraph_dev.py [PORT]    # serve in the foreground
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

GRAPHS = Path(__file__).resolve().parents[1] / "server_graphs"
INSTALL_HINT = 'pip install -r requirements-test.txt (it pins "langgraph-cli[inmem]")'


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class DevServer:
    process: subprocess.Popen
    port: int
    folder: Path
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        """Stop the server and the worker it starts (its own process group)."""
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=15)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait(timeout=15)
        shutil.rmtree(self.folder, ignore_errors=True)


def start(port: int | None = None, timeout: float = 90.0, graphs: Path = GRAPHS) -> DevServer:
    """Start ``langgraph dev`` on loopback on a copy of ``graphs`` and wait for ``/ok``."""
    cli = shutil.which("langgraph") or str(Path(sys.executable).parent / "langgraph")
    if not Path(cli).exists():
        raise RuntimeError(f"The langgraph command is not installed: {INSTALL_HINT}.")
    port = port or _free_port()
    folder = Path(tempfile.mkdtemp(prefix="stepwise-langgraph-dev-"))
    shutil.copytree(graphs, folder, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".lang*"))
    log = folder / "server.log"
    env = {
        **os.environ,
        "LANGSMITH_TRACING": "false",
        "LANGCHAIN_TRACING_V2": "false",
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("LANGSMITH_API_KEY", None)
    with open(log, "w") as out:
        process = subprocess.Popen(
            [cli, "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1", "--port", str(port)],
            cwd=folder,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = DevServer(process, port, folder, log)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = server.log_tail()
            server.stop()
            raise RuntimeError(f"langgraph dev exited ({process.returncode}):\n{tail}")
        try:
            with urllib.request.urlopen(f"{server.url}/ok", timeout=2) as reply:
                if reply.status == 200:
                    return server
        except OSError:
            pass
        time.sleep(0.3)
    tail = server.log_tail()
    server.stop()
    raise RuntimeError(f"langgraph dev did not answer /ok within {timeout:g} s:\n{tail}")


if __name__ == "__main__":
    dev = start(int(sys.argv[1]) if len(sys.argv) > 1 else None)
    print(f"serving {GRAPHS} at {dev.url} (Ctrl-C stops)", flush=True)
    try:
        dev.process.wait()
    except KeyboardInterrupt:
        dev.stop()
