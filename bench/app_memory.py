"""Does the app's memory grow with page loads? A benchmark that prints figures, never a test.

    python bench/app_memory.py [--runs 1000] [--cycles 20] [--ttl 120]

1. Fills a fresh store with ``--runs`` real runs: each made by running a system (the
   three hosted systems in turn) through the run service with the offline scripted
   model, so the store holds their events and the checkpointer their checkpoints, as a
   class's store does. Prints the time per run.
2. Serves the app with ``streamlit run`` (as the README starts it) and, in Debian's
   chromium, loads every page of the app ``--cycles`` times, each load a new browser
   session (closed after it), as a class reloading the app would.
3. Prints the server's resident memory (RSS, from /proc) after each cycle. Then waits for
   the closed sessions to expire: Streamlit keeps a disconnected session for
   ``server.disconnectedSessionTTL`` seconds (``--ttl``, passed to the server; 120 is
   Streamlit's default) in a TTL cache that drops expired entries only when it is next
   written, so the bench waits the TTL and a margin, then loads one page in a new session
   (its disconnect writes the cache) and waits a few seconds more before the final
   reading. Targets (issue #33): growth under 10 MB over 20 cycles, measured after
   expiry, and at most 400 MB in all with 1,000 real runs. Prints the load average.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from ui_latency import HOME  # noqa: E402  (sets STEPWISE_HOME to a temp folder)

from bench.fairness import load  # noqa: E402
from graph.kernel.design import Design  # noqa: E402
from graph.kernel.system import systems  # noqa: E402
from graph.service.run_service import RunService  # noqa: E402
from graph.service.store import Store  # noqa: E402
from graph.settings import Settings  # noqa: E402
from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, start_app, stop_app  # noqa: E402

# Every page of the app (app.py's navigation; the default page, Design, is at "/").
PAGES = ("", "prompts", "run", "approvals", "history", "audit", "evals", "model", "tools", "server")
QUESTIONS = (
    "How did Apple's stock price change in 2008?",
    "What happened at Google's IPO?",
    "Compare AAPL and GOOGL in 2010.",
    "What caused the dot-com crash?",
)


def rss_mb(pid: int) -> float:
    """Resident memory of a process, in MB (from /proc: no extra package)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def fill(runs: int) -> float:
    """``runs`` real runs, the three systems in turn, through the run service with the
    offline scripted model (an approval gate on the way approved, as on the Approvals
    page); returns the seconds per run."""
    settings = Settings(home=HOME)
    service = RunService(Store.open(settings), settings)
    names = sorted(systems())
    prepared = {name: service.prepare(Design(system=name)) for name in names}
    started = time.perf_counter()
    try:
        for n in range(runs):
            name = names[n % len(names)]
            question = f"{QUESTIONS[n % len(QUESTIONS)]} (run {n})"
            run_id = service.start(question, Design(system=name), prepared=prepared[name])
            record = service.wait(run_id)
            while record.status == "waiting":  # an approval gate: approved, as a person would
                for asked in service.pending_approvals():
                    if asked["run_id"] == run_id:
                        service.decide(run_id, asked["id"], "approve")
                record = service.wait(run_id)
            if record.status != "done":
                raise SystemExit(f"run {n} ({name}) ended {record.status}: {record.reason}")
            if (n + 1) % 50 == 0:
                print(f"  {n + 1} runs made ({time.perf_counter() - started:.0f} s)", flush=True)
    finally:
        service.shutdown()
    return (time.perf_counter() - started) / max(1, runs)


def stored(home: Path) -> str:
    """What the store and the checkpointer hold, counted from their files."""
    import sqlite3

    found = []
    for file, table in (
        ("stepwise.sqlite", "runs"),
        ("stepwise.sqlite", "events"),
        ("checkpoints.sqlite", "checkpoints"),
    ):
        conn = sqlite3.connect(home / file)
        try:
            found.append(f"{conn.execute(f'SELECT COUNT(*) FROM {table}').fetchone()[0]} {table}")
        finally:
            conn.close()
    return ", ".join(found)


def cycle(browser, url: str) -> None:
    """One cycle: each page loaded in a new browser session, until its script is done."""
    for name in PAGES:
        context = browser.new_context(viewport={"width": 1440, "height": 900})
        page = context.new_page()
        page.goto(f"{url}/{name}")
        page.wait_for_selector("[data-testid=stMainBlockContainer] h1", timeout=60_000)
        # the script has finished when Streamlit's status widget stops showing "Running"
        page.wait_for_function(
            "() => !document.querySelector('[data-testid=stStatusWidget]')", timeout=60_000
        )
        page.wait_for_timeout(500)
        context.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--cycles", type=int, default=20)
    parser.add_argument(
        "--ttl", type=int, default=120, help="server.disconnectedSessionTTL, seconds"
    )
    args = parser.parse_args()

    print(f"load average at start: {load()}")
    print(f"Making {args.runs} real runs in {HOME} …", flush=True)
    per_run = fill(args.runs)
    print(f"  {per_run:.2f} s per run; stored: {stored(HOME)}")

    from playwright.sync_api import sync_playwright

    env = {"STREAMLIT_SERVER_DISCONNECTED_SESSION_TTL": str(args.ttl)}
    process, url = start_app(HOME, env=env)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            cycle(browser, url)  # warm-up: imports, caches, the first compiled graphs
            base = rss_mb(process.pid)
            print(f"after a warm-up cycle: {base:.1f} MB", flush=True)
            figures = []
            for n in range(1, args.cycles + 1):
                cycle(browser, url)
                figures.append(rss_mb(process.pid))
                print(f"cycle {n:2d}: {figures[-1]:.1f} MB", flush=True)
            closed = time.monotonic()
            wait = args.ttl + 10
            print(f"waiting {wait} s for the closed sessions to expire …", flush=True)
            time.sleep(wait)
            # The session cache drops expired sessions when it is next written: a
            # session's disconnect writes it.
            context = browser.new_context()
            context.new_page().goto(f"{url}/history")
            context.close()
            browser.close()
        time.sleep(5)
        final = rss_mb(process.pid)
        after = time.monotonic() - closed
    finally:
        stop_app(process)
    print()
    print(f"runs stored: {args.runs} real runs ({stored(HOME)})")
    print(f"pages per cycle ({len(PAGES)}): {', '.join(p or 'design' for p in PAGES)}")
    print(f"RSS after warm-up {base:.1f} MB; after {args.cycles} cycles {figures[-1]:.1f} MB")
    print(
        f"  {after:.0f} s after the last cycle, closed sessions expired "
        f"(disconnectedSessionTTL {args.ttl} s): {final:.1f} MB"
    )
    print(f"  growth after expiry {final - base:+.1f} MB (target < 10 MB)")
    print(f"  peak {max(figures):.1f} MB (target <= 400 MB with 1,000 real runs)")
    print(f"load average at end: {load()}")


if __name__ == "__main__":
    main()
