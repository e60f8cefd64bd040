"""A run's outcome says what happened (issue #14, item 8).

An empty final answer never ends ``done`` as though an answer was written, in any of the
three systems; a hierarchical_teams run whose every subtask failed ends ``failed``
saying so, and one where only some failed names them. Real parts: the run service's
worker threads, SQLite store and checkpoints, the scripted model with its prose replies
blanked, and the demo API on loopback.
"""

from __future__ import annotations

import json

import pytest
from langchain_core.outputs import ChatResult

from graph.kernel.design import Design
from graph.models.scripted import ScriptedChatModel
from graph.service.run_service import RunService
from graph.tools.demo_api import start_demo_api
from tests.support import RewritingModel

QUESTIONS = {
    "plan_execute": "Which stock in the database grew the most between 2005 and 2009?",
    "supervisor_bus": "What caused the dot-com crash?",
    "hierarchical_teams": "Find reliable news sites about semiconductor tariffs",
}
TWO_INTENTS = (
    "Check that the API is healthy and find reliable news sites about semiconductor tariffs"
)


class BlankProseModel(ScriptedChatModel):
    """The scripted model, answering every prose reply with whitespace (JSON decisions and
    tool calls kept): a model that returns an empty final answer."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        result = super()._generate(messages, stop, run_manager, **kwargs)
        message = result.generations[0].message
        text = message.content if isinstance(message.content, str) else ""
        if not message.tool_calls and not text.lstrip().startswith("{"):
            message.content = " \n\t "
        return result


@pytest.fixture
def api():
    server = start_demo_api()
    yield server
    server.server.shutdown()


@pytest.fixture
def run(store, settings, api):
    """Run one question through a fresh run service with ``model``; the finished record."""
    services: list[RunService] = []

    def go(system: str, question: str, model_for) -> object:
        service = RunService(
            store,
            settings.model_copy(update={"teams_api_base": api.base_url}),
            timeout_tick_s=0,
            model_factory=model_for,
        )
        services.append(service)
        approvals = {
            "supervisor_bus": {"writer": "never"},
            "hierarchical_teams": {"health_checker": "never", "site_requester": "never"},
        }.get(system, {})
        # No human here: steps that found nothing at their cap are skipped, not escalated.
        design = Design(system=system, approvals=approvals, escalate_at_cap=False)
        return service.wait(service.start(question, design), timeout=60)

    yield go
    for service in services:
        service.shutdown()


def test_plan_execute_with_an_empty_synthesizer_answer_fails_saying_so(run):
    record = run("plan_execute", QUESTIONS["plan_execute"], lambda role: BlankProseModel())
    assert (record.status, record.reason) == (
        "failed",
        "The synthesizer returned an empty answer.",
    )
    assert not (record.final_answer or "").strip()


def test_supervisor_bus_with_no_answer_from_any_agent_fails_saying_so(run):
    record = run("supervisor_bus", QUESTIONS["supervisor_bus"], lambda role: BlankProseModel())
    assert record.status == "failed"
    assert record.reason == (
        "The supervisor finished, but no agent produced an answer "
        "(neither the writer nor the researcher returned a result)."
    )


def test_hierarchical_teams_with_an_empty_answer_from_its_only_team_fails_saying_so(run):
    record = run(
        "hierarchical_teams", QUESTIONS["hierarchical_teams"], lambda role: BlankProseModel()
    )
    assert record.status == "failed"
    assert record.reason.startswith("Every subtask failed, so there is no answer: s1 (search_team)")
    assert "said nothing" in record.reason


def _give_up(teams: tuple[str, ...]):
    """A worker model whose team supervisors for ``teams`` answer FINISH at once."""

    def rewrite(prompt, reply, n):
        if any(prompt.startswith(f"You supervise {team}") for team in teams):
            return json.dumps({"next_worker": "FINISH", "task": "", "reason": "giving up"})
        return None

    return rewrite


def test_hierarchical_teams_whose_every_subtask_failed_ends_failed_naming_them(run):
    worker = RewritingModel(rewrite=_give_up(("search_team", "request_team")))
    record = run(
        "hierarchical_teams",
        TWO_INTENTS,
        lambda role: worker if role == "worker" else ScriptedChatModel(),
    )
    assert record.status == "failed"
    assert record.reason == (
        "Every subtask failed, so there is no answer: "
        "s1 (request_team): no worker reported (giving up); "
        "s2 (search_team): no worker reported (giving up)."
    )


def test_hierarchical_teams_with_some_subtasks_failed_ends_done_naming_the_failed_ones(run):
    worker = RewritingModel(rewrite=_give_up(("search_team",)))
    record = run(
        "hierarchical_teams",
        TWO_INTENTS,
        lambda role: worker if role == "worker" else ScriptedChatModel(),
    )
    assert record.status == "done"
    assert record.reason == (
        "Finished: every subtask has ended; 1 of 2 subtasks failed: "
        "s2 (search_team): no worker reported (giving up)."
    )
    assert "s1 · request_team · done" in record.final_answer


def test_a_blank_writer_result_on_the_bus_is_named_as_the_missing_answer():
    from graph.supervisor_bus.state import Message
    from graph.supervisor_bus.supervisor import missing_answer

    found = Message(
        id="m1", from_="researcher", to="supervisor", type="result", payload={"text": "x"}
    )
    blank = Message(id="m2", from_="writer", to="supervisor", type="result", payload={"text": "  "})
    assert missing_answer([found]) == ""
    assert missing_answer([found, blank]) == (
        "The supervisor finished, but the writer returned an empty answer."
    )
