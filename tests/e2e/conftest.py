"""End-to-end fixtures: ``streamlit run app.py`` on a free loopback port with its own
STEPWISE_HOME, and Debian's chromium driven by playwright (never a browser download).

The scripted model pauses per call (STEPWISE_SCRIPTED_DELAY) so a run lasts a few
seconds: long enough to watch the table fill and to reload mid-run.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import expect

# An approval card's Approve button: on the Approvals page the keyboard's current card
# names it with its key ("Approve Shortcut A"); never "Approve edited query".
APPROVE = re.compile(r"^Approve( Shortcut A)?$")

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
SCRIPTED_DELAY_S = "0.4"
# Where the browser tests leave a screenshot of each page they drive: a temporary folder,
# so the suite never touches tracked files. scripts/refresh_screenshots.sh points it at
# docs/screenshots/ to refresh the README's pictures.
SHOTS = Path(
    os.environ.get("STEPWISE_SCREENSHOTS") or Path(tempfile.gettempdir()) / "stepwise-screenshots"
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_healthy(url: str, process: subprocess.Popen, log: Path, timeout: float = 60) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"streamlit exited early:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as reply:
                if reply.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"streamlit did not become healthy in {timeout} s:\n{log.read_text()}")


@pytest.fixture(scope="session")
def app_home(tmp_path_factory) -> Path:
    """The served app's STEPWISE_HOME: tests may read its store to check what happened."""
    return tmp_path_factory.mktemp("e2e-home")


def start_app(
    home: Path, port: int | None = None, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen, str]:
    """Start ``streamlit run app.py`` with ``home`` as STEPWISE_HOME (and ``env`` on top)
    and wait until it answers; the process and its URL. The caller stops (or kills) it.

    Started as the README starts it, but headless and on a free port: the loopback bind
    address and the telemetry switch come from .streamlit/config.toml, so the browser
    tests check the settings a user gets."""
    log = home / "streamlit.log"
    port = port or _free_port()
    extra = env or {}
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "TAVILY_API_KEY", "STEPWISE_PROVIDER")
    }
    env.update(STEPWISE_HOME=str(home), STEPWISE_SCRIPTED_DELAY=SCRIPTED_DELAY_S, **extra)
    with open(log, "a") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "streamlit",
                "run",
                "app.py",
                "--server.headless",
                "true",
                "--server.port",
                str(port),
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, process, log)
    except BaseException:
        process.kill()
        raise
    return process, url


def stop_app(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


@contextmanager
def serve(home: Path, env: dict[str, str] | None = None):
    """``streamlit run app.py`` on a free loopback port with ``home`` as STEPWISE_HOME."""
    process, url = start_app(home, env=env)
    try:
        yield url
    finally:
        stop_app(process)


@pytest.fixture(scope="session")
def app_url(app_home):
    """The app, served for the whole e2e session."""
    with serve(app_home) as url:
        yield url


@pytest.fixture
def fresh_app_url(tmp_path):
    """A server of its own that no browser has visited yet."""
    with serve(tmp_path) as url:
        yield url


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def _page_of(browser, width: int, height: int, wait_ms: int):
    """A new browser page of that size whose actions and ``expect`` both wait ``wait_ms``.
    ``expect`` does not follow the page's timeout: its own default is 5 s. A fresh
    server's first script run imports the engine (2.5 s on an idle machine, over 5 s on
    two busy cores), so a first look at a new server failed under load."""
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(wait_ms)
    expect.set_options(timeout=wait_ms)
    yield page
    context.close()


@pytest.fixture
def page(browser):
    yield from _page_of(browser, 1400, 1000, 20_000)


@pytest.fixture
def small_page(browser):
    """A page at 1280×720, a laptop's screen, with 30 s waits (the tests of user agents)."""
    yield from _page_of(browser, 1280, 720, 30_000)
