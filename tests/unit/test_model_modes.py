"""What a server accepts, found out and remembered: structured-output fallbacks on any
refusal that names the feature, the schema sent with json_object or stated in the prompt,
prompted tool calling for servers or models without native tool calls, and the modes a
run used recorded on its model calls.

The misbehaviours come from the project's own test server on demand (a refusal with a
chosen status, tools refused or ignored); the same paths on a real llama.cpp server are in
``tests/realmodel``.
"""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from graph.kernel.accounting import model_modes
from graph.kernel.design import Design
from graph.models import tool_prompting
from graph.models.chat import make_chat_model
from graph.models.modes import PROCESS_MODES, ModeBook
from graph.models.scripted import ScriptedChatModel
from graph.models.structured import ask_json, tight_schema
from graph.plan_execute import SYSTEM
from graph.plan_execute.planner import Plan
from graph.service.run_service import RunService
from graph.service.runs import run_question
from graph.settings import Settings
from tests.support_procs.fake_server import LocalOpenAIServer
from tests.unit.conftest import wait_status

build_graph = SYSTEM.build_graph

QUESTION = "What happened to Apple when it launched the iPhone, and how did its stock price change in 2007?"


def settings_for(server_url: str, **extra) -> Settings:
    return Settings(
        openai_base_url=server_url,
        openai_api_key="test-key",
        planner_model="local-planner",
        worker_model="local-worker",
        max_retries=0,
        request_timeout_s=10,
        **extra,
    )


@pytest.fixture(autouse=True)
def forget_learnt_modes():
    PROCESS_MODES.forget()
    yield
    PROCESS_MODES.forget()


def run_on(settings: Settings, design: Design | None = None):
    design = design or Design()
    return run_question(
        QUESTION, design, settings=settings, graph=build_graph(design, settings=settings)
    )


def formats(server) -> list:
    return [(r.get("response_format") or {}).get("type") for r in server.requests]


@pytest.mark.parametrize("status", [400, 422, 500])
def test_a_refusal_of_json_schema_naming_it_falls_back_whatever_its_status(status):
    with LocalOpenAIServer(
        ScriptedChatModel, structured="json_object", refusal_status=status
    ) as server:
        url = server.base_url
        outcome = run_on(settings_for(url))
        sent = formats(server)
    assert outcome.status == "done", outcome.reason
    assert sent[0] == "json_schema" and "json_object" in sent[1:]
    assert sent.count("json_schema") == 1  # learnt at once: never asked again
    assert (
        f"The server refused json_schema (HTTP {status} naming response_format); used "
        "json_object with the schema."
    ) in outcome.state["notices"]
    assert PROCESS_MODES.get(url, "local-planner").structured == "json_object"


def test_a_server_error_that_names_nothing_is_not_taken_for_a_refusal():
    with LocalOpenAIServer(ScriptedChatModel) as server:
        server.inject("http_500")  # the Planner's request
        outcome = run_on(settings_for(server.base_url))
        url = server.base_url
    assert outcome.status == "failed" and "HTTP 500" in outcome.reason
    assert PROCESS_MODES.get(url, "local-planner").structured is None


def test_json_object_sends_the_tight_schema_and_states_the_shape_in_the_prompt():
    with LocalOpenAIServer(ScriptedChatModel, structured="json_object") as server:
        design = Design(enabled_agents=["web_researcher", "synthesizer"])
        outcome = run_on(settings_for(server.base_url, structured_output="json_object"), design)
        planner = server.requests[0]
    assert outcome.status == "done", outcome.reason
    schema = planner["response_format"]["schema"]
    step = schema["properties"]["steps"]["items"]
    assert step["properties"]["agent"]["enum"] == ["web_researcher", "synthesizer"]
    assert step["additionalProperties"] is False and set(step["required"]) == {
        "agent",
        "action",
        "approval",
        "approval_reason",
    }
    prompt = planner["messages"][-1]["content"]
    assert "It must follow this JSON Schema:" in prompt and json.dumps(schema) in prompt


def test_none_puts_the_schema_in_the_prompt_and_sends_no_response_format():
    with LocalOpenAIServer(ScriptedChatModel, structured="none") as server:
        outcome = run_on(settings_for(server.base_url, structured_output="none"))
    assert outcome.status == "done", outcome.reason
    assert set(formats(server)) == {None}
    assert "It must follow this JSON Schema:" in server.requests[0]["messages"][-1]["content"]


def test_json_schema_sends_no_shape_text():
    with LocalOpenAIServer(ScriptedChatModel) as server:
        run_on(settings_for(server.base_url))
        planner = server.requests[0]
    assert planner["response_format"]["type"] == "json_schema"
    assert "JSON Schema" not in planner["messages"][-1]["content"]


def test_learnt_modes_are_kept_in_the_store_so_a_restart_does_not_learn_them_again(store, settings):
    with LocalOpenAIServer(ScriptedChatModel, structured="json_object", tools="ignore") as server:
        served = settings.model_copy(
            update={
                "provider": "openai",
                "openai_base_url": server.base_url,
                "openai_api_key": None,
                "planner_model": "local-planner",
                "worker_model": "local-worker",
                "max_retries": 0,
            }
        )
        first = RunService(store, served, timeout_tick_s=0)
        run_id = first.start(QUESTION, Design())
        wait_status(first, run_id, "done")
        first.shutdown()
        learnt = len(server.requests)
        second = RunService(store, served, timeout_tick_s=0)  # a restarted app
        assert second.modes.get(server.base_url, "local-planner").structured == "json_object"
        assert second.modes.get(server.base_url, "local-worker").tools == "prompted"
        rerun = second.start(QUESTION, Design())
        wait_status(second, rerun, "done")
        second.shutdown()
        again = server.requests[learnt:]
    assert not [r for r in again if (r.get("response_format") or {}).get("type") == "json_schema"]
    assert not [r for r in again if r.get("tools")]  # tools go in the prompt straight away
    assert store.run(rerun).final_answer


def test_a_server_that_refuses_tools_gets_the_tools_in_the_prompt():
    with LocalOpenAIServer(ScriptedChatModel, tools="refuse", refusal_status=500) as server:
        url = server.base_url
        outcome = run_on(settings_for(url))
        tooled = [r for r in server.requests if r.get("tools")]
    assert outcome.status == "done", outcome.reason
    assert "growth_pct 131.10" in outcome.state["final_answer"]  # the SQL tool really ran
    assert len(tooled) == 1  # refused once, then prompted
    learnt = PROCESS_MODES.get(url, "local-worker")
    assert learnt.tools == "prompted"
    assert learnt.tools_note.startswith(
        "The server refused native tool calls (HTTP 500 naming tools)"
    )


def test_a_model_that_answers_in_prose_where_a_tool_is_needed_gets_prompted_tool_calls():
    with LocalOpenAIServer(ScriptedChatModel, tools="ignore") as server:
        url = server.base_url
        outcome = run_on(settings_for(url))
        prompted = [
            r
            for r in server.requests
            if tool_prompting.MARKER in str(r["messages"][-1].get("content"))
        ]
    assert outcome.status == "done", outcome.reason
    assert any(c["id"].startswith("kb:") for c in outcome.state["citations"])  # search ran
    assert prompted and all(r["response_format"]["type"] == "json_schema" for r in prompted)
    assert {"run_sql", "search_knowledge_base"} <= {
        json.loads(json.dumps(o["properties"]["tool"]["enum"][0]))
        for r in prompted
        for o in r["response_format"]["json_schema"]["schema"]["anyOf"]
    }
    learnt = PROCESS_MODES.get(url, "local-worker")
    assert learnt.tools == "prompted" and "answered in prose" in learnt.tools_note


def test_configured_prompted_tool_calls_never_send_tools():
    with LocalOpenAIServer(ScriptedChatModel) as server:
        outcome = run_on(settings_for(server.base_url, tool_calling="prompted"))
    assert outcome.status == "done", outcome.reason
    assert not [r for r in server.requests if r.get("tools")]


def test_the_modes_a_run_used_are_recorded_on_its_model_calls(service, store, settings):
    with LocalOpenAIServer(ScriptedChatModel, structured="json_object", tools="ignore") as server:
        service.settings = settings.model_copy(
            update={
                "provider": "openai",
                "openai_base_url": server.base_url,
                "planner_model": "local-planner",
                "worker_model": "local-worker",
                "max_retries": 0,
            }
        )
        run_id = service.start(QUESTION, Design())
        wait_status(service, run_id, "done")
    modes = model_modes(store.events(run_id))
    assert set(modes["structured"]) == {"json_object"}
    assert "refused json_schema" in modes["structured"]["json_object"]
    assert set(modes["tools"]) == {"prompted"}
    assert "answered in prose" in modes["tools"]["prompted"]


# --------------------------------------------------------------------------- pieces


def test_tight_schema_pins_enums_closes_objects_and_sets_no_string_length():
    schema = tight_schema(Plan, {"agent": ["web_researcher", "synthesizer"]})
    step = schema["properties"]["steps"]["items"]
    assert step["properties"]["agent"] == {
        "type": "string",
        "enum": ["web_researcher", "synthesizer"],
    }
    # llama.cpp turns maxLength into a rule per character; a few hundred crash its server.
    assert "maxLength" not in json.dumps(schema)
    assert schema["properties"]["steps"]["minItems"] == 1
    assert "$defs" not in json.dumps(schema) and "title" not in schema


def test_an_empty_enum_on_a_list_allows_only_the_empty_list():
    from graph.hierarchical_teams.lead_asks import Replan

    schema = tight_schema(Replan, {"keep": [], "id": [], "team": ["search_team"]})
    assert schema["properties"]["keep"]["maxItems"] == 0


def test_ask_json_reads_a_plan_in_the_source_designs_map_shape_too():
    class Reply(ScriptedChatModel):
        def _generate(self, messages, stop=None, run_manager=None, **kw):
            from langchain_core.outputs import ChatGeneration, ChatResult

            text = '{"1": {"agent": "synthesizer", "action": "Answer."}}'
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])

    reply = ask_json(Reply(), "plan", Plan, label="The Planner", repair_prompt=lambda e, r: e)
    assert reply.value.as_map() == {
        "1": {"agent": "synthesizer", "action": "Answer.", "approval": False, "approval_reason": ""}
    }


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "run_sql",
            "description": "Run one SELECT.",
            "parameters": {
                "type": "object",
                "properties": {
                    "sql": {"type": "string", "description": "The query, for example: SELECT 1"}
                },
                "required": ["sql"],
            },
        },
    }
]


def test_a_prompted_conversation_reads_back_as_the_tool_calls_it_was():
    call = AIMessage(
        content="",
        tool_calls=[
            {"name": "run_sql", "args": {"sql": "SELECT 1"}, "id": "c1", "type": "tool_call"}
        ],
    )
    original = [
        SystemMessage("You query."),
        HumanMessage("Find AAPL."),
        call,
        ToolMessage("1 row", tool_call_id="c1", name="run_sql"),
    ]
    prompted = tool_prompting.to_prompted(original, TOOLS)
    assert [type(m).__name__ for m in prompted] == [
        "SystemMessage",
        "HumanMessage",
        "AIMessage",
        "HumanMessage",
    ]
    assert json.loads(prompted[2].content) == {"tool": "run_sql", "args": {"sql": "SELECT 1"}}
    assert prompted[3].content.startswith("Result of run_sql:\n1 row\n\n" + tool_prompting.MARKER)
    assert '{"tool": "run_sql", "args": {"sql": "SELECT 1"}}' in prompted[3].content  # example
    assert tool_prompting.offered_tools(prompted) == ["run_sql"]
    back = tool_prompting.from_prompted(prompted)
    assert back[2].tool_calls[0]["name"] == "run_sql"
    assert isinstance(back[3], ToolMessage) and back[3].content == "1 row"


@pytest.mark.parametrize(
    "text, call, answer",
    [
        ('{"tool": "run_sql", "args": {"sql": "SELECT 1"}}', ("run_sql", {"sql": "SELECT 1"}), ""),
        ('{"tool": "final_answer", "answer": "AAPL rose."}', None, "AAPL rose."),
        ("AAPL rose, I think.", None, "AAPL rose, I think."),
    ],
)
def test_a_prompted_reply_becomes_a_tool_call_or_the_answer(text, call, answer):
    message = tool_prompting.parse_action(text)
    if call:
        assert (message.tool_calls[0]["name"], message.tool_calls[0]["args"]) == call
    else:
        assert not message.tool_calls and message.content == answer


def test_the_action_schema_allows_each_tool_with_its_arguments_or_the_answer():
    schema = tool_prompting.action_schema(TOOLS)
    run_sql, final = schema["anyOf"]
    assert run_sql["properties"]["tool"]["enum"] == ["run_sql"]
    assert run_sql["properties"]["args"]["required"] == ["sql"]
    assert final["properties"]["tool"]["enum"] == ["final_answer"]


def test_a_model_built_for_a_server_learns_into_the_book_it_is_given():
    book = ModeBook()
    model = make_chat_model("planner", settings_for("http://127.0.0.1:9/v1"), modes=book)
    assert model.modes is book and model.server == "http://127.0.0.1:9/v1"
