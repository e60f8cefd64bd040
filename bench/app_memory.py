"""Does the app's memory grow with page loads? A benchmark that prints figures, never a test.

    python bench/app_memory.py [--runs 1000] [--cycles 20]

1. Fills a fresh store with ``--runs`` finished runs (the events a real run writes, as
   ``bench/ui_latency.py`` makes them).
2. Serves the app with ``streamlit run`` (as the README starts it) and, in Debian's
   chromium, loads the Run, History and Evals pages ``--cycles`` times, each load a new
   browser session, as a class reloading the app would.
3. Prints the server's resident memory (RSS, from /proc) after each cycle, then the
   growth over the cycles. Targets (issue #18): growth under 10 MB over 20 cycles, and
   at most 400 MB in all.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from ui_latency import HOME, make_run  # noqa: E402  (sets STEPWISE_HOME to a temp folder)

from graph.service.store import FILE_NAME, Store  # noqa: E402
from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, start_app, stop_app  # noqa: E402

PAGES = ("run", "history", "evals")


def rss_mb(pid: int) -> float:
    """Resident memory of a process, in MB (from /proc: no extra package)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def fill(store: Store, runs: int) -> None:
    started = time.perf_counter()
    for n in range(runs):
        make_run(store, steps=4, messages=12, question=f"Benchmark question {n}")
        if (n + 1) % 200 == 0:
            print(f"  {n + 1} runs stored ({time.perf_counter() - started:.0f} s)", flush=True)


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
    args = parser.parse_args()

    store = Store(HOME / FILE_NAME)
    print(f"Storing {args.runs} finished runs in {HOME} …", flush=True)
    fill(store, args.runs)
    store.close()

    from playwright.sync_api import sync_playwright

    process, url = start_app(HOME)
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
            browser.close()
        time.sleep(2)
        final = rss_mb(process.pid)
    finally:
        stop_app(process)
    growth = figures[-1] - base
    print()
    print(f"runs stored: {args.runs}; pages per cycle: {', '.join(PAGES)}")
    print(f"RSS after warm-up {base:.1f} MB; after {args.cycles} cycles {figures[-1]:.1f} MB;")
    print(f"  growth {growth:+.1f} MB (target < 10 MB); peak {max(figures):.1f} MB")
    print(f"  (target <= 400 MB); 2 s after the browser closed: {final:.1f} MB")
    print(f"machine: {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
