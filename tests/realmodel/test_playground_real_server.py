"""The node playground on the real llama.cpp server: the Planner of a recorded run asked
with two prompt texts × 3 samples makes exactly 6 requests, counted in the server's own
access log, and nothing else of the run executes."""

from __future__ import annotations

import pytest
from langchain_core.callbacks import BaseCallbackHandler

from graph.models.choice import ModelChoice
from graph.models.probe import check_server
from graph.prompts import default_text
from graph.service.model_profiles import ENVIRONMENT, OFFLINE
from graph.service.playground import PromptTry, try_node
from tests.realmodel.conftest import design_for, drive

QUESTION = "How did Tesla's stock do in 2008?"

pytestmark = pytest.mark.timeout(2400)


class Seen(BaseCallbackHandler):
    """What the playground starts: model calls, tools, chains (a node would be one)."""

    def __init__(self):
        self.models, self.tools, self.chains = 0, 0, []

    def on_chat_model_start(self, *args, **kwargs):
        self.models += 1

    def on_tool_start(self, *args, **kwargs):
        self.tools += 1

    def on_chain_start(self, serialized, inputs, **kwargs):
        self.chains.append(kwargs.get("name"))


def _requests(llama) -> int:
    """Chat completion requests the server has received so far: its access log's lines
    (a refused request's traceback names the route too, without the quote and protocol)."""
    return llama.log.read_text(errors="replace").count('"POST /v1/chat/completions HTTP/')


def test_two_planner_prompts_times_three_samples_make_exactly_six_requests_and_run_nothing_else(
    real_service, real_store, llama
):
    # The run is recorded on the offline model (it asks the server nothing): the server's
    # log then holds only what the playground sends.
    design = design_for(
        "plan_execute",
        enabled_agents=["data_researcher", "synthesizer"],
        model=ModelChoice(profile=OFFLINE),
    )
    run_id = real_service.start(QUESTION, design)
    assert drive(real_service, run_id).status == "done"
    history = [c["checkpoint_id"] for c in real_service.timeline(run_id)]
    events = len(real_store.events(run_id))
    before_planner = next(
        c["checkpoint_id"] for c in real_service.timeline(run_id) if c["next"] == ["planner"]
    )
    planner = default_text("plan_execute/planner")
    prompts = [
        PromptTry("shipped", planner),
        PromptTry("short plans", planner + "\nUse at most two steps.\n"),
    ]
    real = real_service.profiles.get(ENVIRONMENT)
    # Test connection, as on the Model page: what the server refuses (this one refuses
    # json_schema with HTTP 500) is learnt once per server and model, not per playground.
    check_server(real_service.profiles.settings_of(real), real_service.modes)
    asked, seen = _requests(llama), Seen()

    trial = try_node(
        real_service, run_id, before_planner, prompts, [real], samples=3, callbacks=[seen]
    )

    assert _requests(llama) - asked == 6
    assert seen.models == 6 and seen.tools == 0
    assert not {"planner", "executor", "data_researcher", "synthesizer"} & set(seen.chains)
    assert trial.node == "planner" and len(trial.samples) == 6
    assert [(s.prompt, s.number) for s in trial.samples] == [
        (p.label, n) for p in prompts for n in (1, 2, 3)
    ]
    for sample in trial.samples:
        assert sample.raw, sample.problem
        assert sample.ok or sample.problem.startswith("The Planner reply is not usable")
        assert sample.latency_s is not None and sample.latency_s > 0
        assert not sample.note  # a real model's reply makes no claim about the rules
    assert trial.notes == []
    assert any(s.ok for s in trial.samples), [s.problem for s in trial.samples]
    assert [c["checkpoint_id"] for c in real_service.timeline(run_id)] == history
    assert len(real_store.events(run_id)) == events
