"""Every hosted system completes its runs on a real model server.

A real llama.cpp server (llama-cpp-python) runs a real small model (SmolLM2-135M): it
refuses ``json_schema`` with HTTP 500, takes ``json_object`` with a schema, and answers
tool calls in prose. On ``auto`` Stepwise must find that out, fall back, remember it, and
still finish each run ``done``: a run that fails is a failed test. The answers of a 135M
model are weak; the runs are not.

supervisor_bus and hierarchical_teams complete on the one-thread server at the default
settings, in the browser (``tests/e2e/test_slow_server_in_browser.py``), which checks what
their runs here checked; plan_execute runs here with its guardrail classifier on.
"""

from __future__ import annotations

import httpx
import pytest
from langchain_core.messages import HumanMessage

from graph.kernel.accounting import model_modes
from graph.kernel.system import systems
from graph.models.modes import ModeBook
from graph.models.server import ServerChatModel
from graph.models.structured import ask_json
from graph.plan_execute.executor import ExecutorDecision
from graph.service.evals import judge_run
from tests.realmodel.conftest import assert_done, design_for, drive
from ui.views import view_of

SYSTEMS = systems()
# a run on the 135M model takes minutes: more than the suite's default test timeout
pytestmark = pytest.mark.timeout(1500)


def _sent(requests: list) -> list[dict]:
    import json

    return [json.loads(r.content) for r in requests if r.url.path.endswith("/chat/completions")]


def test_auto_falls_back_through_the_real_500_refusal_of_json_schema_and_remembers_it(
    llama, real_settings, real_store
):
    requests: list[httpx.Request] = []

    def model(book: ModeBook) -> ServerChatModel:
        return ServerChatModel(
            model=real_settings.planner_model,
            base_url=llama.base_url,
            api_key="not-needed",
            max_retries=0,
            max_tokens=200,
            modes=book,
            http_client=httpx.Client(event_hooks={"request": [requests.append]}, timeout=120),
        )

    prompt = (
        'Decide the next step. "goto" must be one of: data_researcher, planner, end.\n'
        'Reply with JSON: {"replan": false, "goto": "data_researcher", '
        '"reason": "Step 1 has not run yet.", "query": "Find AAPL prices in 2007."}'
    )
    enums = {"goto": ["data_researcher", "planner", "end"]}
    first = ask_json(
        model(ModeBook(real_store)),
        prompt,
        ExecutorDecision,
        label="The Executor",
        repair_prompt=lambda e, r: prompt,
        enums=enums,
    )
    assert first.value.goto in enums["goto"]
    assert (
        "The server refused json_schema (HTTP 500 naming response_format); used json_object "
        "with the schema."
    ) in first.notices
    sent = _sent(requests)
    assert [s["response_format"]["type"] for s in sent] == ["json_schema", "json_object"]
    assert sent[1]["response_format"]["schema"]["properties"]["goto"]["enum"] == enums["goto"]

    # A restarted process reads what was learnt from the store and never asks json_schema.
    requests.clear()
    again = ask_json(
        model(ModeBook(real_store)),
        prompt,
        ExecutorDecision,
        label="The Executor",
        repair_prompt=lambda e, r: prompt,
        enums=enums,
    )
    assert not [n for n in again.notices if "refused" in n]
    assert {s["response_format"]["type"] for s in _sent(requests)} == {"json_object"}


def _assert_completed(record, store, run_id: str) -> None:
    assert_done(record)
    modes = model_modes(store.events(run_id))
    assert set(modes["structured"]) == {"json_object"}, modes  # json_schema was refused
    assert "refused json_schema (HTTP 500" in modes["structured"]["json_object"]
    if modes["tools"]:  # the model answers a tool call in prose: tools go in the prompt
        assert set(modes["tools"]) == {"prompted"}, modes
        assert "prose" in modes["tools"]["prompted"]


def test_plan_execute_completes_on_the_real_model_with_the_guardrail_classifier_on(
    real_service, real_store
):
    system = SYSTEMS["plan_execute"]
    # Two agents, one of them calling a tool: the whole design took 16 of CI's minutes
    design = design_for(
        "plan_execute",
        enabled_agents=["data_researcher", "synthesizer"],
        max_replans=1,
        guardrail=True,
        guardrail_classifier=True,
    )
    # the first example without its chart: no chart agent is on, and the guardrail's own
    # rules refuse a request for one before the model is asked
    question = view_of(system.name).examples[0].replace(" Chart the prices.", "")
    assert question != view_of(system.name).examples[0]
    run_id = real_service.start(question, design)
    record = drive(real_service, run_id)
    _assert_completed(record, real_store, run_id)
    snapshot = real_store.snapshot(run_id)
    first_turn = snapshot["conversation"]["turns"][0]
    classifier = [c for c in first_turn["checks"] if c["check"] == "model classifier"]
    assert classifier and classifier[0]["detail"], first_turn  # the model itself was asked
    if first_turn["status"] != "refused":
        assert snapshot["plan"] and snapshot["rows"], snapshot
        assert set(model_modes(real_store.events(run_id))["tools"]) == {"prompted"}

    # The GPA judge scores the run with the same real model.
    scores = judge_run(
        real_store, run_id, model=real_service.model("planner"), settings=real_service.settings
    )
    assert set(scores) == {
        "plan_quality",
        "plan_adherence",
        "execution_efficiency",
        "logical_consistency",
    }
    assert all(1 <= s["score"] <= 5 for s in scores.values())
    assert real_store.judgement(run_id)["scores"] == scores


def test_the_model_page_check_reports_what_the_real_server_supports(llama, real_settings):
    from graph.models.probe import check_server

    report = check_server(real_settings, modes=ModeBook())
    assert report.reachable and real_settings.planner_model in report.models
    assert report.json_schema is False and "HTTP 500" in report.json_schema_detail
    assert report.json_object_schema is True
    assert report.tools == "prompted"
    assert report.round_trip_s > 0
    words = report.summary()
    assert "json_schema: refused" in words and "tool calling: prompted" in words


def test_a_real_reply_is_read_by_the_prompted_tool_protocol(llama, real_settings):
    from graph.tools.knowledge import default_knowledge_base, search_tool

    book = ModeBook()
    model = ServerChatModel(
        model=real_settings.worker_model,
        base_url=llama.base_url,
        api_key="not-needed",
        max_retries=0,
        max_tokens=200,
        modes=book,
    )
    tool = search_tool(default_knowledge_base())
    reply = model.bind_tools([tool]).invoke(
        [HumanMessage("Search the documents for the dot-com crash.")]
    )
    assert reply.tool_calls and reply.tool_calls[0]["name"] == "search_knowledge_base"
    assert isinstance(reply.tool_calls[0]["args"].get("query"), str)
    assert book.get(model.server, model.model_name).tools == "prompted"
