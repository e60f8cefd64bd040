"""The node playground (graph/service/playground.py) on offline runs: real engine, the
offline scripted model, real SQLite files under a temporary STEPWISE_HOME."""

from __future__ import annotations

import pytest
from langchain_core.callbacks import BaseCallbackHandler

from graph.kernel.design import Design
from graph.prompts import default_text
from graph.service.model_profiles import OFFLINE
from graph.service.playground import PlaygroundError, PromptTry, target, try_node, tryable_points
from graph.service.playground_calls import PlaygroundCall

QUESTION = "Which stock in the database grew the most between 2005 and 2009? Chart the prices."


class Counting(BaseCallbackHandler):
    """Counts what the playground starts: chat model calls, tools, chains (a node)."""

    def __init__(self):
        self.models, self.tools, self.chains = 0, 0, []

    def on_chat_model_start(self, *args, **kwargs):
        self.models += 1

    def on_tool_start(self, *args, **kwargs):
        self.tools += 1

    def on_chain_start(self, serialized, inputs, **kwargs):
        self.chains.append(kwargs.get("name") or (serialized or {}).get("name"))


@pytest.fixture
def finished(service):
    run_id = service.start(QUESTION, Design(system="plan_execute", max_replans=2))
    assert service.wait(run_id, timeout=60).status == "done"
    return run_id


def _before(service, run_id: str, node: str) -> str:
    timeline = service.timeline(run_id)
    return next(c["checkpoint_id"] for c in timeline if c["next"] == [node])


def _offline(service):
    return [service.profiles.get(OFFLINE)]


def test_the_planner_is_asked_once_per_prompt_and_sample_and_nothing_else_runs(
    service, store, finished
):
    checkpoint = _before(service, finished, "planner")
    history = [c["checkpoint_id"] for c in service.timeline(finished)]
    events = len(store.events(finished))
    counting = Counting()
    planner = default_text("plan_execute/planner")
    trial = try_node(
        service,
        finished,
        checkpoint,
        [PromptTry("saved", planner), PromptTry("edit", planner + "\nBe brief.")],
        _offline(service),
        samples=3,
        callbacks=[counting],
    )
    assert trial.node == "planner" and trial.prompt_name == "plan_execute/planner"
    assert counting.models == 6
    assert counting.tools == 0
    assert not {"planner", "executor", "data_researcher", "synthesizer"} & set(counting.chains)
    assert len(trial.samples) == 6 and all(s.ok for s in trial.samples)
    first = trial.samples[0]
    assert [r["agent"] for r in first.rows][-1] == "synthesizer"
    assert first.tokens and first.latency_s is not None and first.raw.startswith("{")
    # the run is untouched: the same checkpoints, the same events
    assert [c["checkpoint_id"] for c in service.timeline(finished)] == history
    assert len(store.events(finished)) == events


def test_offline_results_repeat_and_say_the_edit_changes_nothing_the_rules_read(service, finished):
    checkpoint = _before(service, finished, "planner")
    planner = default_text("plan_execute/planner")
    prompts = [PromptTry("saved", planner), PromptTry("edit", planner + "\nUse at most 2 steps.")]
    one = try_node(service, finished, checkpoint, prompts, _offline(service), samples=2)
    two = try_node(service, finished, checkpoint, prompts, _offline(service), samples=2)
    assert [(s.raw, s.value) for s in one.samples] == [(s.raw, s.value) for s in two.samples]
    assert len({s.raw for s in one.samples}) == 1
    words = " ".join(one.notes)
    assert "does not read this prompt's wording" in words
    assert "edit got the same reply as saved" in words
    assert "same reply every time" in words
    assert all("offline scripted model" in s.note for s in one.samples)


def test_an_edit_the_rules_read_changes_the_offline_reply_and_is_not_called_the_same(
    service, finished
):
    checkpoint = _before(service, finished, "planner")
    planner = default_text("plan_execute/planner")
    narrowed = planner.replace("{agent_names}", "synthesizer")
    assert narrowed != planner
    trial = try_node(
        service,
        finished,
        checkpoint,
        [PromptTry("saved", planner), PromptTry("narrowed", narrowed)],
        _offline(service),
    )
    saved, edit = trial.samples
    assert saved.raw != edit.raw
    assert not any("narrowed got the same reply" in n for n in trial.notes)


def test_the_executor_decision_is_shown_as_its_agent_and_reason(service, finished):
    checkpoint = _before(service, finished, "executor")
    trial = try_node(
        service,
        finished,
        checkpoint,
        [PromptTry("saved", default_text("plan_execute/executor"))],
        _offline(service),
    )
    (sample,) = trial.samples
    assert trial.node == "executor"
    assert sample.ok and sample.rows == []
    assert sample.fields["goto"] and "reason" in sample.fields


def test_a_prompt_with_an_unknown_placeholder_is_a_sentence_and_asks_nothing(service, finished):
    counting = Counting()
    trial = try_node(
        service,
        finished,
        _before(service, finished, "planner"),
        [PromptTry("broken", "Plan {nonsense} for {user_query}")],
        _offline(service),
        callbacks=[counting],
    )
    (sample,) = trial.samples
    assert not sample.ok and "nonsense" in sample.problem
    assert counting.models == 0


def test_bad_choices_are_refused_in_words(service, finished):
    last = service.timeline(finished)[-1]["checkpoint_id"]
    with pytest.raises(PlaygroundError, match="after the run's last step"):
        target(service, finished, last)
    with pytest.raises(PlaygroundError, match="no run 'nope'"):
        target(service, "nope", last)
    with pytest.raises(PlaygroundError, match="has no checkpoint"):
        target(service, finished, "1f0-not-a-checkpoint")
    synthesizer = _before(service, finished, "synthesizer")
    with pytest.raises(PlaygroundError, match="next node here is synthesizer"):
        target(service, finished, synthesizer)
    planner = _before(service, finished, "planner")
    text = [PromptTry("saved", default_text("plan_execute/planner"))]
    with pytest.raises(PlaygroundError, match="1 to 10"):
        try_node(service, finished, planner, text, _offline(service), samples=11)
    with pytest.raises(PlaygroundError, match="one to 4 prompt"):
        try_node(service, finished, planner, text * 5, _offline(service))
    with pytest.raises(PlaygroundError, match="at least one model profile"):
        try_node(service, finished, planner, text, [])


@pytest.mark.parametrize(
    ("system", "node", "prompt"),
    [
        ("supervisor_bus", "supervisor", "supervisor_bus/supervisor"),
        ("hierarchical_teams", "lead_supervisor", "hierarchical_teams/plan"),
    ],
)
def test_the_other_systems_supervisors_can_be_tried(service, system, node, prompt):
    run_id = service.start("How did Tesla's stock do in 2008?", Design(system=system))
    assert service.wait(run_id, timeout=60).status in ("done", "failed", "waiting")
    checkpoint = _before(service, run_id, node)
    trial = try_node(
        service, run_id, checkpoint, [PromptTry("saved", default_text(prompt))], _offline(service)
    )
    (sample,) = trial.samples
    assert trial.node == node
    assert sample.ok, sample.problem
    assert sample.rows or sample.fields


def test_the_tryable_checkpoints_are_those_before_a_model_calling_node(service, finished):
    points = tryable_points(service, finished)
    nodes = [p["node"] for p in points]
    assert nodes[0] == "planner" and "executor" in nodes
    assert set(nodes) <= {"planner", "executor"}
    assert {p["prompt"] for p in points} == {"plan_execute/planner", "plan_execute/executor"}
    timeline = service.timeline(finished)
    before = {c["checkpoint_id"]: c["next"] for c in timeline}
    assert all(before[p["checkpoint_id"]] == [p["node"]] for p in points)
    assert len(points) < len([c for c in timeline if c["next"]])  # workers left out


def test_a_playground_call_in_the_background_ends_with_its_trial_or_says_why(service, finished):
    planner = _before(service, finished, "planner")
    text = [PromptTry("saved", default_text("plan_execute/planner"))]
    call = PlaygroundCall(service, finished, planner, text, _offline(service), samples=2)
    trial = call.wait(60)
    assert not call.running and call.problem == ""
    assert trial is not None and len(trial.samples) == 2 and (call.done, call.total) == (2, 2)
    assert all(s.ok for s in trial.samples)
    refused = PlaygroundCall(service, finished, planner, text, _offline(service), samples=11)
    assert refused.wait(60) is None and not refused.running
    assert "The number of samples is 1 to 10, not 11." in refused.problem
