"""Each system completes on a slow server at the default settings.

A new user's laptop runs a small model at a few tokens a second. Before issue 34 no
system completed a run there at the default settings: a reply still being written was
cut by the request timeout, sent again to a server still busy with the first copy, and
the run failed at the call deadline. Here the suite's llama.cpp server runs on one thread
(``slow_llama``), and every setting but where the server is keeps its default: timeouts,
deadlines, the stall clock, retries, reply limits (the bus's request timeout aside, see
``DESIGNS``). Each test prints how long each model call took, so a slower machine shows
where the time goes.
"""

from __future__ import annotations

import os
import time

import pytest

from graph.kernel.system import systems
from graph.service.run_service import RunService
from graph.service.store import Store
from graph.settings import Settings, get_settings
from graph.tools.database import open_database
from tests.realmodel.conftest import assert_done, design_for, drive
from tests.support_procs import llama_server
from ui.views import view_of

SYSTEMS = systems()
# The three runs take about 15 minutes on the one-thread server (293, 286 and 377 s on this
# 2-core machine, 2026-12-03): more than the whole suite can take on for them while they
# repeat what test_real_server.py checks on two threads. They run when asked for, by hand:
#   STEPWISE_SLOW_SERVER_RUNS=1 bash scripts/test.sh tests/realmodel/test_slow_server.py
# and are skipped, saying so, in the whole suite (issue 34.6 stays open until they run in it).
pytestmark = [
    pytest.mark.timeout(1500),
    pytest.mark.skipif(
        not os.environ.get("STEPWISE_SLOW_SERVER_RUNS"),
        reason="15 min on the slowed server: STEPWISE_SLOW_SERVER_RUNS=1 runs them",
    ),
]
# Small enough to keep the suite's added time low, as the other real-model tests do:
# two agents, the first example without its chart (no chart agent is on).
DESIGNS = {
    "plan_execute": design_for(
        "plan_execute", enabled_agents=["data_researcher", "synthesizer"], max_replans=1
    ),
    # The one design setting not at its default: a request's answer is due after the bus
    # timeout (30 s), and one call here takes 15-50 s, so at 30 s every request escalated
    # and the run failed "no agent produced an answer" (issue 34: the request's clock
    # should not run while its worker's reply is being written).
    "supervisor_bus": design_for("supervisor_bus", bus_timeout_s=600),
    "hierarchical_teams": design_for("hierarchical_teams"),
}


@pytest.fixture
def slow_service(slow_llama, tmp_path, monkeypatch):
    monkeypatch.setenv("STEPWISE_HOME", str(tmp_path))
    get_settings.cache_clear()
    open_database.cache_clear()
    settings = Settings(
        home=tmp_path,
        provider="openai",
        openai_base_url=slow_llama.base_url,
        planner_model=llama_server.MODEL_NAME,
        worker_model=llama_server.MODEL_NAME,
    )
    store = Store.open(settings)
    service = RunService(store, settings, timeout_tick_s=0)
    yield service
    service.shutdown()
    store.close()
    get_settings.cache_clear()
    open_database.cache_clear()


def call_times(store: Store, run_id: str) -> list[dict]:
    return [
        e["data"]["llm_call"]
        for e in store.events(run_id, kinds=("custom",))
        if isinstance(e["data"], dict) and "llm_call" in e["data"]
    ]


def report(system: str, store: Store, run_id: str, took_s: float) -> str:
    """Each call's node, time, tokens and rate, and the run's whole time."""
    lines = [f"{system} on the one-thread server: {took_s:.0f} s"]
    for call in call_times(store, run_id):
        latency = float(call.get("latency_s") or 0)
        out = call.get("output_tokens") or 0
        rate = f", {out / latency:.1f} tokens/s" if latency and out else ""
        lines.append(f"  {call.get('node') or '?'}: {latency:.1f} s, {out} tokens out{rate}")
    return "\n".join(lines)


@pytest.mark.parametrize("system", list(DESIGNS))
def test_each_system_completes_on_a_one_thread_server_at_the_default_settings(
    slow_service, system, capsys
):
    from graph.tools.demo_api import start_demo_api

    question = view_of(system).examples[0].replace(" Chart the prices.", "")
    api = start_demo_api() if system == "hierarchical_teams" else None
    if api is not None:  # where the teams' tools are, as a deployment sets it
        slow_service.settings = slow_service.settings.model_copy(
            update={"teams_api_base": api.base_url}
        )
    started = time.monotonic()
    try:
        run_id = slow_service.start(question, DESIGNS[system])
        record = drive(slow_service, run_id)
    finally:
        if api is not None:
            api.server.shutdown()
    took = time.monotonic() - started
    with capsys.disabled():
        print("\n" + report(system, slow_service.store, run_id, took), flush=True)
    assert_done(record)
    assert call_times(slow_service.store, run_id), "no model call was recorded"
