"""Chaos case of issue 34 on hostile servers: the Model page's *Test connection* and the
Server page's console against servers that echo the key they were sent, send 100 MB,
drip a byte a second or answer in malformed shapes. Called by ``bench/chaos.py``.

- **Model page**: the fake OpenAI server (``tests/support_procs/fake_server.py``) with its
  model list or its chat answers misbehaving, checked by ``ConnectionCheck`` as the page
  starts it (its whole-check bound, 15 s). Uncaught: no report once the check's bound is
  past, or a report whose words are raw exception text; keys: the canary key (the
  model key) in the report's words.
- **Server page**: a hostile "LangGraph Server" (``tests/support_procs/hostile_langgraph``)
  under every call the console makes, the key sent (ticked on the page). Uncaught: an
  exception other than the console's sentence (``ServerError``), or raw text in it; keys:
  the canary in a message or in anything the console returns.
"""

from __future__ import annotations

import resource
import time
from pathlib import Path

from bench.chaos_tally import CANARY, Tally, is_raw, show, tally
from graph.models.modes import ModeBook
from graph.service.connection_checks import DEFAULT_BOUND_S, ConnectionCheck
from graph.service.server_console import ServerConsole, ServerError
from graph.settings import Settings
from tests.support_procs.fake_server import EchoChatModel, LocalOpenAIServer
from tests.support_procs.hostile_langgraph import SHAPES, HostileLangGraph
from tests.unit.test_bounded_server_calls import CONSOLE_CALLS

LIST_FAULTS = (
    "echo_auth",
    "drip:1",
    "huge:100",
    "never_answer",
    "half_body",
    "body_not_json",
    "body_html",
    "body_empty",
    "body_invalid_utf8",
    "body_deep_nesting",
)
CHAT_FAULTS = ("echo_auth", "drip:1", "huge:100", "never_answer", "body_html", "body_no_choices")
SERVER_MODES = ["echo", "drip:1", "huge:100"] + [f"json:{s}" for s in SHAPES.values()]
NAMES_WITH_KEYS = (
    f'[{{"assistant_id": "a", "graph_id": "Bearer {CANARY}", "name": "x-api-key: {CANARY}"}}]'
)


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _check_once(found: Tally, label: str, server: LocalOpenAIServer) -> float:
    settings = Settings(
        provider="openai",
        openai_base_url=server.base_url,
        openai_api_key=CANARY,
        max_retries=0,
    )
    started = time.monotonic()
    check = ConnectionCheck("bench", settings, ModeBook())
    report = check.wait(timeout=DEFAULT_BOUND_S + 5)
    took = time.monotonic() - started
    found.tried += 1
    if report is None:
        found.uncaught += 1
        found.note(f"model page / {label}: no report after {took:.0f} s")
        return took
    words = report.summary()
    found.uncaught += is_raw(words)
    found.keys += CANARY in words
    if is_raw(words) or CANARY in words:
        found.note(f"model page / {label}: {words[:150]}")
    return took


def _model_page(found: Tally) -> tuple[float, float]:
    slowest, rss = 0.0, _rss_mb()
    for fault in LIST_FAULTS:
        with LocalOpenAIServer(EchoChatModel) as server:
            server.list_fault = fault
            slowest = max(slowest, _check_once(found, f"model list {fault}", server))
    for fault in CHAT_FAULTS:
        with LocalOpenAIServer(EchoChatModel) as server:
            server.inject(*[fault] * 4)
            slowest = max(slowest, _check_once(found, f"replies {fault}", server))
    with LocalOpenAIServer(EchoChatModel, model_name=f"model-of Bearer {CANARY}") as server:
        slowest = max(slowest, _check_once(found, "key in a model id", server))
    return slowest, _rss_mb() - rss


def _server_page(found: Tally) -> float:
    slowest = 0.0
    settings = Settings(server_api_key=CANARY)
    for mode in SERVER_MODES + [f"json:{NAMES_WITH_KEYS}"]:
        with HostileLangGraph(mode) as server:
            console = ServerConsole(server.url, settings=settings, send_key=True)
            for name, call in CONSOLE_CALLS.items():
                found.tried += 1
                started = time.monotonic()
                try:
                    shown = repr(call(console))
                except ServerError as exc:
                    shown = str(exc)
                    found.uncaught += is_raw(shown)
                except Exception as exc:  # what the bench looks for
                    shown = f"{type(exc).__name__}: {exc}"
                    found.uncaught += 1
                    found.note(f"server page / {mode[:30]} / {name}: {shown[:120]}")
                slowest = max(slowest, time.monotonic() - started)
                if CANARY in shown:
                    found.keys += 1
                    found.note(f"server page / {mode[:30]} / {name}: key shown: {shown[:120]}")
            console.close()
    return slowest


def hostile_servers(work: Path) -> None:
    found = tally("hostile servers")
    slowest_check, rss = _model_page(found)
    slowest_call = _server_page(found)
    found.note(
        f"slowest Test connection {slowest_check:.1f} s (bound {DEFAULT_BOUND_S:g} s), slowest "
        f"Server page call {slowest_call:.1f} s (timeout 10 s); peak RSS grew {rss:.0f} MB"
    )
    show(found)
