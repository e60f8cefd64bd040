"""A run made on the real llama.cpp server, forked from the checkpoint before step 3 with
another Executor prompt: the fork sends the server only the calls after that checkpoint
(counted in the server's access log), and its step table marks replayed and live calls."""

from __future__ import annotations

import pytest

from graph.kernel.system import get_system
from graph.prompts import default_text
from tests.realmodel.conftest import design_for, drive
from ui.run_view import ANSWERED, load_run_view

# The run bench/model_compat.py completes on this server: the plan_execute example with
# every agent (find the prices, chart them, sum up), which plans three steps or more.
QUESTION = get_system("plan_execute").examples[0]
EXECUTOR = "plan_execute/executor"
MARK = "Be brief: give the reason in one short sentence."

pytestmark = pytest.mark.timeout(3000)


def _requests(llama) -> int:
    """Chat completions the server has answered so far (its access log)."""
    return llama.log.read_text(errors="replace").count("POST /v1/chat/completions")


def _calls(store, run_id: str) -> list[dict]:
    return [
        e["data"]["llm_call"]
        for e in store.events(run_id, kinds=("custom",))
        if "llm_call" in (e.get("data") or {})
    ]


def test_a_fork_with_another_executor_prompt_asks_the_server_only_for_the_calls_after_its_checkpoint(
    real_service, real_store, llama
):
    design = design_for("plan_execute", max_replans=1)
    parent = real_service.start(QUESTION, design)
    original = drive(real_service, parent)
    assert original.status == "done", original.reason
    timeline = real_service.timeline(parent)
    third = next((p for p in timeline if (p["fields"].get("current_step") or 0) >= 3), None)
    assert third is not None, (
        f"the run's plan on the real model had fewer than 3 steps: {real_store.snapshot(parent)['plan']}"
    )
    point = timeline[third["index"] - 1]
    before = _requests(llama)

    fork = real_service.fork_with_prompt(
        parent, point["checkpoint_id"], EXECUTOR, text=MARK + "\n" + default_text(EXECUTOR)
    )
    forked = drive(real_service, fork)
    assert forked.status in ("done", "failed"), forked.reason  # a weak model may go astray

    calls = _calls(real_store, fork)
    replayed = [c for c in calls if c.get("replayed") is True]
    live = [c for c in calls if c.get("replayed") is False]
    assert len(replayed) + len(live) == len(calls)
    assert replayed and live
    # The calls before the checkpoint: the parent's, answered from its recording.
    parent_calls = _calls(real_store, parent)
    assert [c["request"] for c in replayed] == [c["request"] for c in parent_calls[: len(replayed)]]
    assert MARK in str(live[0]["request"]["messages"])
    # Counted at the server: one request per live call, none for a replayed one.
    assert _requests(llama) - before == len(live)

    rows = {r["Step"]: r[ANSWERED] for r in load_run_view(real_store, fork).panels[0].rows}
    assert rows[1] == "replayed"
    assert "live" in rows[2]  # the Executor's call that ends step 2 is the first live one
    assert all(rows[s] == "live" for s in rows if s >= 3 and rows[s] != "–")
