"""The offline model's table of what it reads from each prompt holds: edits it calls
effective change what the scripted model does, edits it calls ignored do not."""

from __future__ import annotations

import json

from langchain_core.messages import HumanMessage

import graph.kernel.guardrail  # noqa: F401  (registers the classifier's prompt)
import graph.registry  # noqa: F401  (the hosted systems declare their prompts)
import graph.service.evals  # noqa: F401  (registers the judge's prompt)
from graph.models.scripted import ScriptedChatModel
from graph.models.scripted.reads import READS, UNDESCRIBED, reading
from graph.plan_execute.prompts import SAMPLE_STATE, executor_prompt, plan_prompt
from graph.prompts import PromptSet, default_text, prompt_names, render

PLANNER, EXECUTOR = "plan_execute/planner", "plan_execute/executor"
QUESTION = (
    "How did Apple's stock do in 2008? What caused the dot-com crash? "
    "Chart Microsoft's monthly prices in 2001."
)


def _reply(prompt: str):
    content = ScriptedChatModel().invoke([HumanMessage(content=prompt)]).content
    return json.loads(content) if content.startswith("{") else content


def _plan(planner_text: str) -> list[dict]:
    state = {**SAMPLE_STATE, "user_query": QUESTION}
    return _reply(plan_prompt(state, PromptSet({PLANNER: planner_text})))["steps"]


def test_every_prompt_of_the_hosted_systems_is_described():
    assert sorted(set(prompt_names()) - set(READS)) == []
    assert reading("fourth/unknown") is UNDESCRIBED


def test_a_step_limit_in_the_planner_prompt_changes_nothing_offline():
    assert 'limits such as "use at most 3 steps"' in reading(PLANNER).ignored
    shipped = default_text(PLANNER)
    limited = shipped.replace("Guidelines:\n", "Guidelines:\n- Use at most 3 steps.\n")
    assert limited != shipped
    assert _plan(limited) == _plan(shipped)
    assert len(_plan(limited)) == 5  # more than the 3 the edit asks for


def test_a_hand_written_agent_list_in_the_planner_prompt_changes_the_plan():
    assert any("fewer agents" in e for e in reading(PLANNER).effective)
    shipped = default_text(PLANNER)
    narrowed = shipped.replace(
        '"agent" must be one of: {agent_names}.',
        '"agent" must be one of: web_researcher, synthesizer.',
    )
    assert narrowed != shipped
    assert {s["agent"] for s in _plan(shipped)} > {"web_researcher", "synthesizer"}
    assert {s["agent"] for s in _plan(narrowed)} == {"web_researcher", "synthesizer"}


def test_the_replan_cap_written_in_the_executor_prompt_changes_its_decision():
    assert any("After 1 replans" in e for e in reading(EXECUTOR).effective)
    state = {
        **SAMPLE_STATE,
        "step_results": {"1": "No usable results: the query returned no rows."},
        "replan_attempts": {"1": 1},
    }
    shipped = default_text(EXECUTOR)
    capped = shipped.replace("After {max_replans} replans", "After 1 replans")
    assert capped != shipped
    before = _reply(executor_prompt(state, PromptSet({EXECUTOR: shipped}), 3))
    after = _reply(executor_prompt(state, PromptSet({EXECUTOR: capped}), 3))
    assert before["replan"] is True and before["goto"] == "planner"
    assert after["replan"] is False and after["goto"] == "synthesizer"


def test_the_executor_ignores_its_guidelines_wording():
    state = {**SAMPLE_STATE, "step_results": {"1": "No usable results: no rows."}}
    shipped = default_text(EXECUTOR)
    reworded = shipped.replace(
        "PRIORITIZE FORWARD PROGRESS: only replan if the current step is completely blocked.",
        "NEVER REPLAN, whatever happens.",
    )
    assert reworded != shipped
    assert _reply(executor_prompt(state, PromptSet({EXECUTOR: reworded}), 3)) == _reply(
        executor_prompt(state, PromptSet({EXECUTOR: shipped}), 3)
    )


def test_the_classifier_reads_only_the_quoted_message():
    name = "guardrail/classifier"
    values = {"message": "How did IBM's stock do in 2008?", "agents": "- data_researcher"}
    shipped = default_text(name)
    unquoted = shipped.replace('"""\n{message}\n"""', "{message}")
    assert unquoted != shipped and any('"""' in e for e in reading(name).effective)
    assert _reply(render(name, shipped, values))["verdict"] == "pass"
    assert _reply(render(name, unquoted, values))["verdict"] == "refuse"


def test_the_synthesizer_reads_its_findings_between_two_headings():
    from graph.plan_execute.prompts import synthesizer_prompt

    name = "plan_execute/synthesizer"
    assert any("Sources you may cite:" in e for e in reading(name).effective)
    state = {**SAMPLE_STATE, "step_results": {"1": "Reading: AAPL grew 50% [sql:1]"}}
    shipped = default_text(name)
    for text, found in (
        (shipped, True),
        (shipped.replace("Sources you may cite:", "Sources:"), False),
    ):
        answer = (
            ScriptedChatModel()
            .invoke([HumanMessage(content=synthesizer_prompt(state, PromptSet({name: text})))])
            .content
        )
        assert ("AAPL grew 50%" in answer) is found
        assert ("No step found usable data" in answer) is not found


def test_a_user_agents_prompt_is_read_offline_only_for_its_tool_lines():
    from langchain_core.messages import SystemMessage
    from langchain_core.tools import StructuredTool

    from graph.agents.user_agent_worker import system_prompt
    from graph.agents.user_agents import UserAgent
    from graph.tools.mcp_servers import READ_ONLY

    found = reading("user_agents/clock")
    assert "tool lines" in found.reads and any("{tools}" in e for e in found.effective)

    def get_current_time(timezone: str) -> str:
        """The current time in an IANA timezone such as 'America/New_York'."""
        return "12:00"

    tool = StructuredTool.from_function(get_current_time, metadata={"policy": READ_ONLY})
    agent = UserAgent(name="clock", description="Tells the current time in a timezone.")
    asked = HumanMessage(content="The time in timezone=Europe/Rome, please.", name="agent_query")

    def calls(text: str) -> list:
        prompt = SystemMessage(content=system_prompt(agent, [tool], text))
        return ScriptedChatModel().bind_tools([tool]).invoke([prompt, asked]).tool_calls

    assert calls("You are {name}, terse and formal.\n{tools}")[0]["name"] == "get_current_time"
    assert calls("You are {name}, terse and formal.") == []  # no tool lines: no call
