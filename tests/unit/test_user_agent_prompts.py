"""A user agent's own prompt is a versioned prompt like every other (issue 30.1): the prompt
family ``user_agents/<name>`` is known, validated and accepted in a run's prompt set, its
default is the definition's prompt, the store's active version goes into a run's design, and
a real offline run sends the agent's worker that version (plan_execute and supervisor_bus).
"""

from __future__ import annotations

import sqlite3

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.sqlite import SqliteSaver

from graph.agents.user_agents import DEFAULT_PROMPT, UserAgent, define, prompt_name
from graph.kernel.design import Design
from graph.plan_execute import SYSTEM as PLAN_EXECUTE
from graph.prompts import PromptError, PromptSet, default_text, prompt_spec, template_errors
from graph.service.store import Store
from graph.settings import Settings
from graph.supervisor_bus import SYSTEM as SUPERVISOR_BUS

CLOCK = prompt_name("clock")
MARKER = "You are {name} and you answer in exactly one short sentence."
QUESTION = "Find the archived minutes of the board meeting."


def archivist() -> UserAgent:
    return UserAgent(
        name="archivist",
        description="Finds the archived minutes of a board meeting.",
        prompt="You are {name}, the archivist. {description}\n{tools}",
    )


def test_a_user_agents_prompt_is_a_known_prompt_with_its_placeholders():
    spec = prompt_spec(CLOCK)
    assert spec.allowed == {"name", "description", "tools"} and not spec.required
    assert template_errors(CLOCK, "You are {name}. {description}\n{tools}") == []
    assert template_errors(CLOCK, "No placeholder at all.") == []  # none is required
    with pytest.raises(PromptError, match="No prompt named"):
        prompt_spec("user_agents/clock/extra")
    with pytest.raises(PromptError, match="No prompt named"):
        prompt_spec("user_agents/")


def test_a_bad_placeholder_in_a_user_agents_prompt_is_refused_naming_it():
    (error,) = template_errors(CLOCK, "You are {nmae}.")
    assert "unknown placeholder {nmae}" in error and "{description}, {name}, {tools}" in error
    with pytest.raises(PromptError, match=r"\{user_query\}"):
        PromptSet({CLOCK: "Answer {user_query}."})


def test_a_prompt_set_takes_a_user_agents_text_and_gives_it_back():
    prompts = PromptSet({CLOCK: MARKER})
    assert prompts.given(CLOCK) == MARKER
    assert prompts.given(prompt_name("someone_else")) is None  # its definition's applies
    assert PromptSet().given(CLOCK) is None
    Design(prompts={CLOCK: MARKER})  # a design carrying it validates


def test_its_default_is_the_definitions_prompt():
    define([UserAgent(name="teller", description="Tells stories well.", prompt="Tell {name}.")])
    assert default_text(prompt_name("teller")) == "Tell {name}."
    assert default_text(prompt_name("never_defined_here")) == DEFAULT_PROMPT


@pytest.fixture
def store_settings(tmp_path, database_url) -> Settings:
    return Settings(home=tmp_path, provider="scripted", database_url=database_url)


def test_the_active_version_of_a_user_agents_prompt_goes_into_a_runs_design(store_settings):
    store = Store.open(store_settings)
    version = store.save_prompt_version(CLOCK, "", MARKER)
    assert store.active_prompt_texts() == {}
    store.set_active_prompt(CLOCK, version.id)
    assert store.active_prompt_texts() == {CLOCK: MARKER}
    assert PromptSet(Design(prompts=store.active_prompt_texts()).prompts).given(CLOCK) == MARKER
    with pytest.raises(PromptError, match=r"\{nmae\}"):
        store.save_prompt_version(CLOCK, "", "You are {nmae}.")
    store.set_active_prompt(CLOCK, None)
    assert store.active_prompt_texts() == {}


class SystemPromptRecorder(BaseChatModel):
    """A worker model that keeps the system prompt of each call made for a user agent (its
    query is named ``agent_query``) and answers in one sentence."""

    seen: list[str] = []

    @property
    def _llm_type(self) -> str:
        return "system-prompt-recording-test-model"

    def bind_tools(self, tools, **kwargs):  # type: ignore[override]
        return self.bind()

    def _generate(self, messages: list[BaseMessage], stop=None, run_manager=None, **kw):
        if any(m.name == "agent_query" for m in messages):
            self.seen.extend(str(m.content) for m in messages if isinstance(m, SystemMessage))
        reply = AIMessage(content="FINAL ANSWER: The minutes are in the archive.")
        return ChatResult(generations=[ChatGeneration(message=reply)])


@pytest.mark.parametrize("system", [PLAN_EXECUTE, SUPERVISOR_BUS], ids=lambda s: s.name)
@pytest.mark.parametrize("active", [True, False], ids=["active version", "definition"])
def test_a_run_sends_the_agents_worker_the_designs_active_text_else_its_definitions(
    system, active, settings, tmp_path
):
    agent = archivist()
    design = Design(
        system=system.name,
        user_agents=[agent],
        enabled_agents=["archivist", "synthesizer"] if system is PLAN_EXECUTE else ["archivist"],
        prompts={prompt_name("archivist"): MARKER} if active else {},
    )
    recorder = SystemPromptRecorder(seen=[])
    connection = sqlite3.connect(tmp_path / "checkpoints.sqlite", check_same_thread=False)
    try:
        graph = system.build_graph(
            design, settings=settings, checkpointer=SqliteSaver(connection), worker_model=recorder
        )
        config = {"configurable": {"thread_id": "t"}}
        graph.invoke(system.initial_state(QUESTION, design), config)
    finally:
        connection.close()
    assert recorder.seen, "the archivist was not given a step"
    expected = (
        "You are archivist and you answer in exactly one short sentence."
        if active
        else "You are archivist, the archivist. Finds the archived minutes of a board "
        "meeting.\n- (no tools)"
    )
    assert recorder.seen[0] == expected
