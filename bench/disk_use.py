"""Disk use of a run whose model returns 2 MB replies: STEPWISE_HOME's bytes after one run.

    python bench/disk_use.py [--systems plan_execute supervisor_bus hierarchical_teams]
                             [--reply-mb 2] [--skip-uncapped]

Each run gets a fresh home and the offline scripted model with every reply padded to
``--reply-mb`` MB (prose with prose, JSON with trailing blank lines, as a rambling small
model does). It runs twice per system: with the reply cap off (what every run did before
the cap) and with the default cap (``STEPWISE_MAX_REPLY_CHARS``); it prints the bytes of
the store, the checkpoints and the whole home, and how each run ended. Target: < 20 MB
with the cap. Prints figures only.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("STEPWISE_HOME", tempfile.mkdtemp(prefix="stepwise-bench-"))

import graph.registry  # noqa: E402,F401  (the hosted systems)
from graph.kernel.design import Design  # noqa: E402
from graph.models.scripted import ScriptedChatModel  # noqa: E402
from graph.service.run_service import RunService  # noqa: E402
from graph.service.store import Store  # noqa: E402
from graph.settings import Settings  # noqa: E402
from graph.tools.demo_api import start_demo_api  # noqa: E402

QUESTIONS = {
    "plan_execute": "Which stock in the database grew the most between 2005 and 2009? "
    "Chart the prices.",
    "supervisor_bus": "What caused the dot-com crash?",
    "hierarchical_teams": "Check that the API is healthy and find reliable news sites about "
    "semiconductor tariffs",
}
APPROVALS = {
    "supervisor_bus": {"writer": "never"},
    "hierarchical_teams": {"health_checker": "never", "site_requester": "never"},
}
NO_CAP = 50_000_000  # the setting's largest value: nothing a run makes reaches it


class PaddedModel(ScriptedChatModel):
    """The scripted model with every reply padded to ``reply_bytes``."""

    reply_bytes: int = 2 * 1024 * 1024

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        result = super()._generate(messages, stop, run_manager, **kwargs)
        message = result.generations[0].message
        text = message.content if isinstance(message.content, str) else ""
        filler = "\n" if text.lstrip().startswith("{") else "All work and no play. "
        message.content = text + filler * (self.reply_bytes // len(filler))
        return result


def _bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _sqlite_bytes(home: Path, name: str) -> int:
    return sum(p.stat().st_size for p in home.glob(f"{name}*") if p.is_file())


def measure(system: str, cap: int, reply_bytes: int, api_base: str) -> dict:
    home = Path(tempfile.mkdtemp(prefix=f"stepwise-disk-{system}-"))
    settings = Settings(
        home=home, provider="scripted", max_reply_chars=cap, teams_api_base=api_base
    )
    store = Store.open(settings)
    service = RunService(
        store,
        settings,
        timeout_tick_s=0,
        model_factory=lambda role: PaddedModel(reply_bytes=reply_bytes),
    )
    started = time.perf_counter()
    try:
        run_id = service.start(
            QUESTIONS[system], Design(system=system, approvals=APPROVALS.get(system, {}))
        )
        record = service.wait(run_id, timeout=1800)
    finally:
        service.shutdown()
        store.close()
    return {
        "store": _sqlite_bytes(home, "stepwise.sqlite"),
        "checkpoints": _sqlite_bytes(home, "checkpoints.sqlite"),
        "home": _bytes(home),
        "status": record.status,
        "seconds": time.perf_counter() - started,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", nargs="+", default=["plan_execute"], choices=list(QUESTIONS))
    parser.add_argument("--reply-mb", type=float, default=2.0)
    parser.add_argument("--skip-uncapped", action="store_true", help="only the capped runs")
    args = parser.parse_args()
    reply_bytes = int(args.reply_mb * 1024 * 1024)
    default_cap = Settings.model_fields["max_reply_chars"].default
    api = start_demo_api()
    print(f"Every model reply padded to {reply_bytes:,} bytes; bytes on disk after one run.")
    print(
        f"{'system':<20} {'reply cap':>14} {'store':>14} {'checkpoints':>14} "
        f"{'home total':>14} {'status':>8} {'time':>7}"
    )
    caps = [default_cap] if args.skip_uncapped else [NO_CAP, default_cap]
    for system in args.systems:
        for cap in caps:
            m = measure(system, cap, reply_bytes, api.base_url)
            label = "off" if cap == NO_CAP else f"{cap:,} ch"
            print(
                f"{system:<20} {label:>14} {m['store'] / 1e6:>11.1f} MB "
                f"{m['checkpoints'] / 1e6:>11.1f} MB {m['home'] / 1e6:>11.1f} MB "
                f"{m['status']:>8} {m['seconds']:>6.1f}s",
                flush=True,
            )
    api.server.shutdown()
    print("Target with the cap: under 20 MB per run.")


if __name__ == "__main__":
    main()
