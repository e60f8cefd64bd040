"""A real LangGraph Server (``langgraph dev``, the in-memory Agent Server) serving the
repository's ``langgraph.json``, for the tests and benchmarks.

It starts offline: no tracing, no CLI analytics, no browser, no reload, on loopback, in a
home of its own (``STEPWISE_HOME`` and the server's ``.langgraph_api`` persistence both
go there, never into the repository). ``langgraph dev`` moves to another port when the
one asked for is taken, saying so in its log, so the port is read back from the log.

    python tests/support_procs/langgraph_server.py [PORT]    # serve in the foreground
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "langgraph.json"
AUDIT = Path(__file__).resolve().parent / "net_audit"

# What keeps ``langgraph dev`` off the network (checked with ``strace -e trace=connect``:
# with these it connects to nothing but loopback): LangSmith tracing, the CLI's usage
# analytics, the server's check for a newer langgraph-api on pypi.org. Its metadata beacon
# only runs with a license key, left empty.
OFFLINE_ENV = {
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGSMITH_API_KEY": "",
    "LANGGRAPH_CLOUD_LICENSE_KEY": "",
    "PYTHONUNBUFFERED": "1",
}
# What a served run must not inherit from the shell running the tests.
UNSET = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "TAVILY_API_KEY", "STEPWISE_PROVIDER")
_API_LINE = re.compile(r"API: \S*?http://127\.0\.0\.1:(\d+)")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class LangGraphServer:
    process: subprocess.Popen
    port: int
    home: Path
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def network_audit(self) -> Path:
        """Where the server's processes record any host they resolve or reach that is not
        loopback (``net_audit/sitecustomize.py``): empty while it stays offline."""
        return self.home / "network-audit.txt"

    def off_loopback(self) -> list[str]:
        """What the server tried to reach beyond loopback so far."""
        audit = self.network_audit
        return audit.read_text().splitlines() if audit.exists() else []

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def stop(self) -> None:
        """Stop the server and the worker processes it started (its process group)."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=20)


def start(
    home: Path | None = None,
    port: int | None = None,
    *,
    jobs_per_worker: int | None = None,
    env: dict[str, str] | None = None,
    config: Path = CONFIG,
    timeout: float = 120.0,
) -> LangGraphServer:
    """Start ``langgraph dev`` on loopback serving ``langgraph.json`` and wait for ``/ok``.
    ``jobs_per_worker``: how many runs its queue works at once (``--n-jobs-per-worker``);
    ``env``: more environment for the served graphs (``STEPWISE_*`` settings);
    ``config``: another ``langgraph.json`` (the foreign graphs of ``tests/server_graphs/``)."""
    home = Path(home or tempfile.mkdtemp(prefix="stepwise-langgraph-"))
    home.mkdir(parents=True, exist_ok=True)
    log = home / "langgraph-dev.log"
    command = [
        sys.executable,
        "-m",
        "langgraph_cli",
        "dev",
        "--config",
        str(config),
        "--host",
        "127.0.0.1",
        "--port",
        str(port or _free_port()),
        "--no-browser",
        "--no-reload",
    ]
    if jobs_per_worker is not None:
        command += ["--n-jobs-per-worker", str(jobs_per_worker)]
    environment = {k: v for k, v in os.environ.items() if k not in UNSET}
    environment.update(OFFLINE_ENV)
    environment.update(
        {
            "STEPWISE_HOME": str(home),
            # the repository's packages (graph.served) for the graphs langgraph.json names,
            # and the network audit every Python process of the server loads
            "PYTHONPATH": os.pathsep.join(
                p for p in (str(ROOT), str(AUDIT), os.environ.get("PYTHONPATH", "")) if p
            ),
            "STEPWISE_NET_AUDIT": str(home / "network-audit.txt"),
            **(env or {}),
        }
    )
    with open(log, "w") as out:
        process = subprocess.Popen(
            command,
            cwd=home,  # the in-memory server persists into ./.langgraph_api
            stdout=out,
            stderr=subprocess.STDOUT,
            env=environment,
            start_new_session=True,  # its own process group: stop() ends it all
        )
    deadline = time.time() + timeout
    found: int | None = None
    while time.time() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"langgraph dev exited (code {process.returncode}):\n"
                + "\n".join(log.read_text(errors="replace").splitlines()[-40:])
            )
        if found is None and (match := _API_LINE.search(log.read_text(errors="replace"))):
            found = int(match.group(1))
        if found is not None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{found}/ok", timeout=2) as r:
                    if r.status == 200:
                        return LangGraphServer(process, found, home, log)
            except OSError:
                pass
        time.sleep(0.3)
    server = LangGraphServer(process, found or 0, home, log)
    tail = server.log_tail()
    server.stop()
    raise RuntimeError(f"langgraph dev did not answer /ok within {timeout:g} s:\n{tail}")


if __name__ == "__main__":
    served = start(port=int(sys.argv[1]) if len(sys.argv) > 1 else None)
    print(f"{served.url} serving {CONFIG} (home {served.home}); Ctrl-C stops it", flush=True)
    try:
        served.process.wait()
    except KeyboardInterrupt:
        served.stop()
