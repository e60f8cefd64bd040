"""Whole runs through the real ``ChatOpenAI`` client, over HTTP, to a local server.

The server answers with the scripted model, so runs are deterministic, and it can
imitate servers with json_schema, only json_object, or no structured output, and
faults: malformed JSON, prose, slowness, errors, a server that is down.
"""

from __future__ import annotations

import socket

import pytest
from pydantic import SecretStr

from graph.kernel.design import Design
from graph.models.modes import PROCESS_MODES
from graph.models.scripted import ScriptedChatModel
from graph.plan_execute import SYSTEM
from graph.service.runs import run_question
from graph.settings import Settings
from tests.support_procs.fake_server import LocalOpenAIServer

build_graph = SYSTEM.build_graph

QUESTION = "What happened to Apple when it launched the iPhone, and how did its stock price change in 2007?"


def settings_for(server_url: str, **extra) -> Settings:
    return Settings(
        openai_base_url=server_url,
        openai_api_key="test-key",
        planner_model="local-planner",
        worker_model="local-worker",
        max_retries=extra.pop("max_retries", 0),
        request_timeout_s=extra.pop("request_timeout_s", 10),
        **extra,
    )


def run_on(settings: Settings, question: str = QUESTION):
    design = Design()
    graph = build_graph(design, settings=settings)
    return run_question(question, design, settings=settings, graph=graph)


@pytest.fixture(autouse=True)
def forget_learnt_modes():
    PROCESS_MODES.forget()
    yield
    PROCESS_MODES.forget()


@pytest.mark.parametrize("capability", ["json_schema", "json_object", "none"])
def test_a_full_run_works_on_servers_with_each_kind_of_structured_output(capability):
    with LocalOpenAIServer(ScriptedChatModel, structured=capability) as server:
        outcome = run_on(settings_for(server.base_url))
        formats = [(r.get("response_format") or {}).get("type") for r in server.requests]
    assert outcome.status == "done", outcome.reason
    assert "growth_pct 131.10" in outcome.state["final_answer"]  # AAPL over 2007
    assert any(c["id"].startswith("kb:") for c in outcome.state["citations"])
    accepted = {"json_schema": "json_schema", "json_object": "json_object", "none": None}[
        capability
    ]
    assert accepted in formats  # the strongest format the server takes was used
    if capability != "json_schema":
        assert any(
            n.startswith("The server refused json_schema (HTTP 400 naming response_format)")
            for n in outcome.state["notices"]
        )


def test_the_mode_learnt_for_a_server_is_reused_without_new_refusals():
    with LocalOpenAIServer(ScriptedChatModel, structured="json_object") as server:
        run_on(settings_for(server.base_url))
        first = len(server.requests)
        outcome = run_on(settings_for(server.base_url))
        second_run = server.requests[first:]
    assert outcome.status == "done"
    assert not any(
        (r.get("response_format") or {}).get("type") == "json_schema" for r in second_run
    )


def test_an_explicit_mode_is_used_as_configured():
    with LocalOpenAIServer(ScriptedChatModel, structured="json_schema") as server:
        outcome = run_on(settings_for(server.base_url, structured_output="none"))
        formats = {(r.get("response_format") or {}).get("type") for r in server.requests}
    assert outcome.status == "done"
    assert formats == {None}


def test_tools_are_called_over_http_with_each_agent_given_only_its_own():
    with LocalOpenAIServer(ScriptedChatModel) as server:
        outcome = run_on(settings_for(server.base_url))
        tool_sets = {
            tuple(sorted(t["function"]["name"] for t in r["tools"]))
            for r in server.requests
            if r.get("tools")
        }
    assert outcome.status == "done"
    assert tool_sets == {("search_knowledge_base",), ("run_sql",)}


def test_malformed_plan_json_from_the_server_is_repaired():
    with LocalOpenAIServer(ScriptedChatModel) as server:
        server.inject("malformed_json")  # the first request is the Planner's
        outcome = run_on(settings_for(server.base_url))
    assert outcome.status == "done", outcome.reason
    assert any("not valid JSON" in n for n in outcome.state["notices"])


def test_prose_twice_instead_of_a_plan_fails_with_a_reason():
    with LocalOpenAIServer(ScriptedChatModel) as server:
        server.inject("prose", "prose")
        outcome = run_on(settings_for(server.base_url))
    assert outcome.status == "failed"
    assert outcome.reason.startswith("The Planner could not produce a usable plan")


def test_a_transient_server_error_is_retried_by_the_client():
    with LocalOpenAIServer(ScriptedChatModel) as server:
        server.inject("http_500")
        outcome = run_on(settings_for(server.base_url, max_retries=2))
    assert outcome.status == "done", outcome.reason


def test_a_server_that_keeps_failing_ends_the_run_with_the_status_in_words():
    with LocalOpenAIServer(ScriptedChatModel) as server:
        server.inject(*["http_500"] * 3)
        outcome = run_on(settings_for(server.base_url, max_retries=1))
    assert outcome.status == "failed"
    assert "answered HTTP 500 after 2 attempt(s)" in outcome.reason


def test_a_server_that_is_down_fails_the_run_readably():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    outcome = run_on(settings_for(f"http://127.0.0.1:{port}/v1"))
    assert outcome.status == "failed"
    assert outcome.reason == (
        f"Could not reach the model server at http://127.0.0.1:{port}/v1 "
        "after 1 attempt(s): is it running?"
    )


def test_a_slow_server_times_out_readably():
    with LocalOpenAIServer(ScriptedChatModel) as server:
        server.inject("slow:3")
        outcome = run_on(settings_for(server.base_url, request_timeout_s=0.5))
    assert outcome.status == "failed"
    assert "did not answer within 0.5 s" in outcome.reason


def test_the_api_key_is_sent_to_the_server_but_never_kept_in_the_run():
    with LocalOpenAIServer(ScriptedChatModel) as server:
        settings = settings_for(server.base_url).model_copy(
            update={"openai_api_key": SecretStr("sk-test-SECRET")}
        )
        outcome = run_on(settings)
    assert outcome.status == "done"
    assert "sk-test-SECRET" not in repr(outcome.state)
    assert "sk-test-SECRET" not in repr(settings.public_dict())


def test_the_guardrail_classifier_on_a_dead_server_refuses_the_message_saying_why(settings):
    """The classifier fails closed: a message nobody could check does not pass."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dead = settings_for(f"http://127.0.0.1:{port}/v1", home=settings.home)
    design = Design(guardrail=True, guardrail_classifier=True)
    outcome = run_question(
        QUESTION, design, settings=dead, graph=build_graph(design, settings=dead)
    )
    turn = outcome.state["turns"][outcome.state["active_turn"]]
    assert turn["status"] == "refused"
    assert turn["reason"] == (
        "The classifier could not check it: Could not reach the model "
        f"server at http://127.0.0.1:{port}/v1 after 1 attempt(s): is it "
        "running?"
    )
    assert "plan_execute" not in outcome.state["agent_memory"]  # nothing ran on it


def test_a_classifier_prompt_with_an_unknown_placeholder_is_refused_naming_it():
    from graph.kernel.guardrail import PromptSet  # registers guardrail/classifier
    from graph.prompts import PromptError

    with pytest.raises(PromptError, match="verdict_hint"):
        PromptSet({"guardrail/classifier": "Check {message} with {verdict_hint}."})
