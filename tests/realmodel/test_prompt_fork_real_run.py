"""A run forked from the checkpoint before step 3 with another Executor prompt, on the real
llama.cpp server as the active model: the fork sends the server only the calls after that
checkpoint (counted in the server's access log), and its step table marks replayed and
live calls.

The parent is recorded on the offline scripted model: what is tested is the fork's traffic
to the server, and a parent on the 135M model (28 calls) failed at the 600 s call deadline
on the loaded two-core machine before the fork could start (2026-12-02). Its plan has four
steps, so the fork always has a step 3 to go on before.
"""

from __future__ import annotations

import pytest

from graph.models.choice import ModelChoice
from graph.prompts import default_text
from tests.realmodel.conftest import design_for, drive
from tests.support_procs import llama_server
from ui.run_view import ANSWERED, load_run_view
from ui.views import view_of

# plan_execute's first example with every agent: four steps (prices twice, a chart, the
# answer) on the scripted model.
QUESTION = view_of("plan_execute").examples[0]
EXECUTOR = "plan_execute/executor"
MARK = "Be brief: give the reason in one short sentence."

pytestmark = pytest.mark.timeout(3000)


def _requests(llama) -> tuple[int, int]:
    """Chat completion requests the server has had so far, and those it answered (its
    access log)."""
    log = llama.log.read_text(errors="replace")
    # access-log lines only: a refusal's traceback names the route twice more
    return log.count('"POST /v1/chat/completions HTTP/1.1"'), log.count(
        '"POST /v1/chat/completions HTTP/1.1" 200'
    )


def _calls(store, run_id: str) -> list[dict]:
    return [
        e["data"]["llm_call"]
        for e in store.events(run_id, kinds=("custom",))
        if "llm_call" in (e.get("data") or {})
    ]


def test_a_fork_with_another_executor_prompt_asks_the_server_only_for_the_calls_after_its_checkpoint(
    real_service, real_store, llama
):
    design = design_for("plan_execute", max_replans=1, model=ModelChoice())  # scripted
    parent = real_service.start(QUESTION, design)
    original = drive(real_service, parent)
    assert original.status == "done", original.reason
    timeline = real_service.timeline(parent)
    third = next(p for p in timeline if (p["fields"].get("current_step") or 0) >= 3)
    point = timeline[third["index"] - 1]
    sent, answered = _requests(llama)

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
    # Counted at the server: the live calls' requests and nothing for a replayed one
    # (7 on the scripted parent's first two steps). The parent asked no server, so the
    # fork learns what it takes, once: json_schema refused (HTTP 500), and a tool call the
    # model answered in prose asked again with prompted tool calling within the same call.
    # Seen 2026-12-03: 16 live calls, 17 requests answered, 1 refused.
    sent_now, answered_now = _requests(llama)
    assert len(live) <= answered_now - answered <= len(live) + 1
    assert sent_now - sent - (answered_now - answered) <= 1
    assert real_store.run(fork).model_label.startswith(f"{llama_server.MODEL_NAME} @ ")

    rows = {r["Step"]: r[ANSWERED] for r in load_run_view(real_store, fork).panels[0].rows}
    assert rows[1] == "replayed"
    assert "live" in rows[2]  # the Executor's call that ends step 2 is the first live one
    assert all(rows[s] == "live" for s in rows if s >= 3 and rows[s] != "–")
