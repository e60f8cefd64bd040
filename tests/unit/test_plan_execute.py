"""The plan_execute system: the source design's routing rules, its known faults, every agent subset."""

from __future__ import annotations

import itertools
import json

import pytest

from graph.kernel.design import Design
from graph.models.scripted import ScriptedChatModel
from graph.plan_execute import SYSTEM
from graph.plan_execute.agents import AGENT_NAMES, plannable
from graph.plan_execute.executor import executor_node
from graph.plan_execute.planner import Plan, check_plan
from graph.service.runs import run_question
from tests.support import RewritingModel, edit_json, is_executor, is_planner

build_graph, step_rows = SYSTEM.build_graph, SYSTEM.step_rows

EXAMPLE = "Which stock in the database grew the most between 2005 and 2009? Chart the prices."
TESLA = "How did Tesla's stock do in 2008?"


def run(question=EXAMPLE, design=None, planner=None, worker=None, events=None):
    design = design or Design()
    graph = build_graph(design, planner_model=planner, worker_model=worker)
    return run_question(
        question, design, graph=graph, on_event=events.append if events is not None else None
    )


def top_nodes(events):
    return [e.node for e in events if e.kind == "update" and not e.namespace]


# --------------------------------------------------------------------- the happy path


def test_example_question_plans_runs_charts_and_cites_the_data():
    events = []
    outcome = run(events=events)
    assert outcome.status == "done", outcome.reason
    state = outcome.state
    assert [r.agent for r in outcome.rows] == [
        "data_researcher",
        "data_researcher",
        "chart_generator",
        "synthesizer",
    ]
    assert all(r.status == "done" for r in outcome.rows)
    assert top_nodes(events) == [
        "planner",
        "executor",
        "data_researcher",
        "executor",
        "data_researcher",
        "executor",
        "chart_generator",
        "chart_summarizer",
        "executor",
        "synthesizer",
    ]
    # The growth query's top row is AAPL: 38.45 (2005-01) -> 210.73 (2009-12) in the bundled data.
    assert "AAPL" in state["final_answer"] and "448.1" in state["final_answer"]
    assert {c["id"] for c in state["citations"]} == {"sql:1", "sql:2"}
    spec = state["chart_spec"]
    assert spec["mark"]["type"] == "line" and len(spec["data"]["values"]) == 300
    assert "AAPL" in state["chart_caption"] and "210.73" in state["chart_caption"]


def test_sub_agent_messages_are_tagged_with_their_step_and_agent():
    state = run().state
    sql_calls = [
        m
        for m in state["messages"]
        if getattr(m, "tool_calls", None) and m.tool_calls[0]["name"] == "run_sql"
    ]
    assert [m.response_metadata["step"] for m in sql_calls] == [1, 2]
    assert {m.response_metadata["agent"] for m in sql_calls} == {"data_researcher"}


# --------------------------------------------------------------------- routing rules


def test_planner_starts_at_step_one_with_every_step_pending():
    events = []
    run(events=events)
    first = next(e for e in events if e.kind == "update" and e.node == "planner")
    assert first.data["current_step"] == 1
    assert set(first.data["step_status"].values()) == {"pending"}
    assert first.data["plan_history"][0]["reason"] == "initial plan"


def test_executor_sends_a_step_that_has_not_run_to_its_planned_agent():
    state = {
        "plan": {
            "1": {"agent": "web_researcher", "action": "Search the documents for: iPhone."},
            "2": {"agent": "synthesizer", "action": "Answer."},
        },
        "current_step": 1,
        "user_query": "iPhone?",
        "messages": [],
        "enabled_agents": list(AGENT_NAMES),
        "step_results": {},
    }
    graph_deps = _deps()
    command = executor_node(state, graph_deps)
    assert command.goto == "web_researcher"
    assert command.update["current_step"] == 1
    assert command.update["step_status"] == {"1": "running"}
    assert "iPhone" in command.update["agent_query"]


def test_executor_moves_to_the_next_step_when_the_current_one_has_a_useful_result():
    state = {
        "plan": {
            "1": {"agent": "web_researcher", "action": "Search: iPhone."},
            "2": {"agent": "synthesizer", "action": "Answer."},
        },
        "current_step": 1,
        "user_query": "iPhone?",
        "messages": [],
        "enabled_agents": list(AGENT_NAMES),
        "step_results": {"1": "Findings: Apple launches the iPhone [kb:apple-iphone-2007]"},
    }
    command = executor_node(state, _deps())
    assert command.goto == "synthesizer"
    assert command.update["current_step"] == 2
    assert command.update["step_status"] == {"1": "done", "2": "running"}


def test_a_step_without_usable_data_is_replanned_then_rerun_with_the_revised_query():
    events = []
    outcome = run(TESLA, events=events)
    assert outcome.status == "done", outcome.reason
    assert top_nodes(events)[:6] == [
        "planner",
        "executor",
        "data_researcher",
        "executor",
        "planner",
        "executor",
    ]
    assert outcome.state["replan_attempts"] == {"1": 1}
    history = outcome.state["plan_history"]
    assert len(history) == 2 and "no usable data" in history[1]["reason"]
    assert history[1]["plan"]["1"]["agent"] == "web_researcher"
    assert outcome.rows[0].replans == 1 and outcome.rows[0].agent == "web_researcher"


def test_after_a_replan_the_agent_gets_a_query_from_the_revised_step_not_the_stale_one():
    # A fault of the source design: the executor's handshake dispatched with the previous agent_query.
    events = []
    run(TESLA, events=events)
    handshake = [e for e in events if e.kind == "update" and e.node == "executor"][2]
    assert handshake.data["replan_flag"] is False
    assert handshake.data["agent_query"].startswith("Search the documents for: How did Tesla")
    first_query = [e for e in events if e.kind == "update" and e.node == "executor"][0]
    assert handshake.data["agent_query"] != first_query.data["agent_query"]


def test_the_handshake_runs_the_revised_step_without_asking_the_executor_model():
    model = RewritingModel(rewrite=lambda prompt, reply, n: None)
    model.calls.clear()
    run(TESLA, planner=model)
    executor_calls = [p for p in model.calls if is_executor(p)]
    # Calls: step 1 not run; step 1 failed -> replan; (handshake: no call); step 1 done -> next.
    assert len(executor_calls) == 3


def test_replans_stop_at_max_replans_and_the_step_is_skipped():
    def always_replan(prompt, reply, n):
        if is_executor(prompt) and "Result of current step ..: (not run yet)" not in prompt:
            return edit_json(reply, replan=True, goto="planner", reason="never good enough")
        return None

    model = RewritingModel(rewrite=always_replan)
    design = Design(max_replans=2, escalate_at_cap=False)
    outcome = run("What caused the dot-com crash?", design, planner=model)
    assert outcome.status == "done", outcome.reason
    first = outcome.rows[0]
    assert first.replans == 2 and first.status == "skipped"
    assert len(outcome.state["plan_history"]) == 3  # the initial plan and two revisions
    assert any("the cap" in n for n in outcome.state["notices"])
    assert outcome.state["final_answer"]


def test_chart_generator_runs_chart_summarizer_as_a_fixed_chain():
    events = []
    run(events=events)
    nodes = top_nodes(events)
    assert nodes[nodes.index("chart_generator") + 1] == "chart_summarizer"
    assert nodes[nodes.index("chart_summarizer") + 1] == "executor"


def test_without_the_summarizer_the_chart_goes_back_to_the_executor():
    events = []
    design = Design(enabled_agents=["data_researcher", "chart_generator", "synthesizer"])
    outcome = run(design=design, events=events)
    nodes = top_nodes(events)
    assert "chart_summarizer" not in nodes
    assert nodes[nodes.index("chart_generator") + 1] == "executor"
    assert outcome.state["chart_spec"] and not outcome.state.get("chart_caption")


def test_synthesizer_ends_the_run():
    events = []
    outcome = run(events=events)
    assert top_nodes(events)[-1] == "synthesizer"
    assert outcome.state["outcome"] == "done" and outcome.state["final_answer"]


def test_without_a_synthesizer_the_run_ends_after_the_last_step_without_an_answer():
    outcome = run(design=Design(enabled_agents=["data_researcher"]))
    assert outcome.status == "done"
    assert "No final answer" in outcome.reason
    assert not outcome.state.get("final_answer")
    assert [(r.agent, r.status) for r in outcome.rows] == [("data_researcher", "done")] * 2


# --------------------------------------------------------------------- the source design's faults


@pytest.mark.parametrize("bad_goto", ["cortex_researcher", "chart_generator", "FINISH"])
def test_a_goto_to_an_unknown_or_disabled_agent_is_repaired_not_silently_ended(bad_goto):
    def wrong_goto(prompt, reply, n):
        if is_executor(prompt) and "(not run yet)" in prompt:
            return edit_json(reply, goto=bad_goto)
        return None

    design = Design(enabled_agents=["web_researcher", "data_researcher", "synthesizer"])
    outcome = run(
        "What caused the dot-com crash?", design, planner=RewritingModel(rewrite=wrong_goto)
    )
    assert outcome.status == "done", outcome.reason
    assert any(repr(bad_goto) in n and "following the plan" in n for n in outcome.state["notices"])
    assert outcome.state["final_answer"]


def test_a_route_langgraph_cannot_follow_is_reported_not_silent():
    # The guard for LangGraph's quiet ending: a graph that stops with no outcome fails loudly.
    from langgraph.graph import START, StateGraph
    from langgraph.types import Command

    from graph.plan_execute.state import State

    builder = StateGraph(State)
    builder.add_node("planner", lambda s: Command(goto="nowhere"))
    builder.add_edge(START, "planner")
    outcome = run_question("anything", Design(), graph=builder.compile())
    assert outcome.status == "failed"
    assert "could not follow" in outcome.reason


def test_invalid_plan_json_gets_one_repair_with_the_error_fed_back():
    def broken_once(prompt, reply, n):
        return '{"1": {"agent": ' if is_planner(prompt) and n == 1 else None

    model = RewritingModel(rewrite=broken_once)
    model.calls.clear()
    outcome = run("What caused the dot-com crash?", planner=model)
    assert outcome.status == "done", outcome.reason
    assert any("not valid JSON" in n for n in outcome.state["notices"])
    planner_msgs = [m for m in outcome.state["messages"] if m.name == "planner"]
    assert planner_msgs[0].content == '{"1": {"agent": ' and json.loads(planner_msgs[1].content)


def test_plan_json_unusable_twice_fails_the_run_with_a_readable_reason():
    model = RewritingModel(
        rewrite=lambda p, r, n: "Sure! Here is the plan." if is_planner(p) else None
    )
    outcome = run("What caused the dot-com crash?", planner=model)
    assert outcome.status == "failed"
    assert outcome.reason.startswith("The Planner could not produce a usable plan")
    assert "not valid JSON" in outcome.reason and "Traceback" not in outcome.reason
    # What the model said is kept for the user to read.
    assert [m.content for m in outcome.state["messages"] if m.name == "planner"] == [
        "Sure! Here is the plan."
    ] * 2


def test_a_plan_missing_fields_is_repaired_with_the_missing_field_named():
    seen = []

    def no_action(prompt, reply, n):
        if is_planner(prompt):
            seen.append(prompt)
            if len(seen) == 1:
                return json.dumps({"1": {"agent": "web_researcher"}})
        return None

    model = RewritingModel(rewrite=no_action)
    outcome = run("What caused the dot-com crash?", planner=model)
    assert outcome.status == "done", outcome.reason
    assert any("steps[1].action: Field required" in n for n in outcome.state["notices"])
    assert len(seen) == 2 and outcome.state["plan"]["1"]["action"]


def test_a_plan_with_an_agent_in_another_case_and_a_repeated_step_runs_repaired():
    """A small model's slips with one reading cost no repair round and not the run."""

    def slipping(prompt, reply, n):
        if not is_planner(prompt):
            return None
        steps = json.loads(reply)["steps"]
        first = {**steps[0], "agent": steps[0]["agent"].title()}
        return json.dumps({"steps": [first, dict(first), *steps[1:]]})

    model = RewritingModel(rewrite=slipping)
    model.calls.clear()
    outcome = run("What caused the dot-com crash?", planner=model)
    assert outcome.status == "done", outcome.reason
    assert [s["agent"] for s in outcome.state["plan"].values()] == [
        "web_researcher",
        "synthesizer",
    ]
    notices = outcome.state["notices"]
    assert "The Planner's step 1 named agent 'Web_Researcher': read as web_researcher." in notices
    assert "The Planner's step 2 repeats step 1 (same agent and action): it was dropped." in notices
    assert len([c for c in model.calls if is_planner(c)]) == 1


def test_repair_message_names_the_disabled_agent_the_plan_used():
    from graph.models.structured import ask_json
    from graph.plan_execute.prompts import repair_prompt
    from graph.prompts import PromptSet

    class Sequence(ScriptedChatModel):
        replies: list[str]

        def _generate(self, messages, stop=None, run_manager=None, **kw):
            from langchain_core.messages import AIMessage
            from langchain_core.outputs import ChatGeneration, ChatResult

            self.replies.append(messages[-1].content)
            text = (
                '{"1": {"agent": "chart_generator", "action": "chart"}}'
                if len(self.replies) == 1
                else '{"1": {"agent": "synthesizer", "action": "a"}}'
            )
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])

    model = Sequence(replies=[])
    reply = ask_json(
        model,
        "plan please",
        Plan,
        label="The Planner",
        repair_prompt=repair_prompt(PromptSet(), "{}"),
        check=lambda p: check_plan(p, ["web_researcher", "synthesizer"]),
    )
    assert reply.repaired
    assert "'chart_generator', which is not available" in model.replies[1]
    assert "use only: web_researcher, synthesizer" in model.replies[1]


@pytest.mark.parametrize(
    "plan, problem",
    [
        ({}, "no steps"),
        (
            {
                "1": {"agent": "synthesizer", "action": "a"},
                "3": {"agent": "synthesizer", "action": "b"},
            },
            "step keys must be",
        ),
        ({"1": {"agent": "chart_summarizer", "action": "a"}}, "not available"),
        ({"1": {"agent": "cortex_researcher", "action": "a"}}, "not available"),
    ],
)
def test_check_plan_rejects_bad_plans_with_a_reason(plan, problem):
    with pytest.raises(ValueError, match=problem):
        check_plan(Plan.model_validate(plan), list(AGENT_NAMES))


def test_a_plan_with_no_steps_twice_fails_readably():
    model = RewritingModel(rewrite=lambda p, r, n: "{}" if is_planner(p) else None)
    outcome = run("What caused the dot-com crash?", planner=model)
    assert outcome.status == "failed" and "no steps" in outcome.reason


def test_recursion_limit_ends_the_run_with_a_reason_and_keeps_partial_results(tmp_path):
    from graph.kernel.checkpoints import open_checkpointer
    from graph.plan_execute import SYSTEM

    saver = open_checkpointer(tmp_path / "cp.sqlite", SYSTEM.shape.state_types)
    design = Design(recursion_limit=5)  # 15 node runs: fewer than eight steps need
    graph = build_graph(design, checkpointer=saver)
    years = range(2001, 2009)
    question = " ".join(f"What was the highest price of AAPL in {y}?" for y in years)
    outcome = run_question(question, design, graph=graph)
    assert outcome.status == "failed"
    assert "recursion limit (5 steps: 15 node runs)" in outcome.reason
    assert outcome.state["plan"] and outcome.state["datasets"]  # kept from the checkpoints
    assert step_rows(outcome.state)[0].status == "done"


def test_executor_unusable_twice_fails_the_run_readably():
    model = RewritingModel(rewrite=lambda p, r, n: "goto web" if is_executor(p) else None)
    outcome = run("What caused the dot-com crash?", planner=model)
    assert outcome.status == "failed"
    assert outcome.reason.startswith("The Executor could not decide the next step")
    assert outcome.rows[0].status == "pending"


# --------------------------------------------------------------------- every subset


SUBSETS = [
    list(c) for n in range(len(AGENT_NAMES) + 1) for c in itertools.combinations(AGENT_NAMES, n)
]


@pytest.mark.parametrize("agents", SUBSETS, ids=lambda a: "+".join(a) or "none")
def test_every_subset_of_agents_compiles_and_runs_offline(agents):
    # No human here: a step that finds nothing at its replan cap is skipped, not escalated.
    design = Design(
        enabled_agents=agents, approvals={a: "never" for a in agents}, escalate_at_cap=False
    )
    graph = build_graph(design)
    drawn = set(graph.get_graph().nodes) - {"__start__", "__end__"}
    assert drawn == {"planner", "executor", "human", *agents}
    events = []
    outcome = run_question(EXAMPLE, design, graph=graph, on_event=events.append)
    ran = set(top_nodes(events))
    assert ran <= {"planner", "executor", *agents}
    if plannable(agents):
        assert outcome.status == "done", outcome.reason
        assert {r.agent for r in outcome.rows} <= set(plannable(agents))
        assert ("synthesizer" in agents) == bool(outcome.state.get("final_answer"))
        results = outcome.state.get("step_results") or {}
        for key, status in (outcome.state.get("step_status") or {}).items():
            if (results.get(key) or "").startswith("No usable results"):
                assert status == "skipped", (key, status)  # found nothing: never "done"
    else:
        # Nothing can be planned: the Planner fails readably instead of inventing agents.
        assert outcome.status == "failed" and "No agent can be planned" in outcome.reason


def _deps():
    from graph.plan_execute.deps import Deps
    from graph.prompts import PromptSet
    from graph.settings import get_settings
    from graph.tools.database import open_database
    from graph.tools.knowledge import default_knowledge_base

    return Deps(
        settings=get_settings(),
        planner_model=ScriptedChatModel(),
        worker_model=ScriptedChatModel(),
        prompts=PromptSet(),
        knowledge=default_knowledge_base(),
        database=open_database(),
        enabled=list(AGENT_NAMES),
        max_replans=3,
        nodes=frozenset({"planner", "executor", *AGENT_NAMES}),
    )


def test_an_answer_about_a_company_the_data_does_not_hold_says_so():
    """#15: "How did Tesla's stock do in 2008?" ended done listing Lehman findings and never
    said Tesla is not in the data. The SQL tool says what an empty result means, and the
    finding survives the replan that replaced the step."""
    from graph.tools.database import open_database, sql_tool

    reply = sql_tool(open_database(), 10).invoke(
        {"sql": "SELECT date, price FROM stocks WHERE symbol = 'TSLA'"}
    )
    assert "holds no prices for TSLA: it has only MSFT, AMZN, IBM, GOOG, AAPL" in reply
    design = Design(approvals={"report_writer": "never"})
    outcome = run_question("How did Tesla's stock do in 2008?", design)
    assert outcome.status == "done"
    assert len(outcome.state["plan_history"]) > 1  # the data step was replanned away
    assert (
        "Not in the data: The database holds no prices for TESLA" in (outcome.state["final_answer"])
    )
