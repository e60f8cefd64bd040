"""Per-step accounting: calls, tokens, latency and cost, with unknown prices kept unknown."""

import pytest

from graph.kernel.accounting import Usage, call_cost, format_cost, usage_by_step
from graph.kernel.design import Design
from graph.models.scripted import ScriptedChatModel
from graph.plan_execute import SYSTEM
from graph.service.run_records import event_record
from graph.service.runs import run_question
from graph.settings import Settings
from tests.support_procs.fake_server import LocalOpenAIServer

build_graph = SYSTEM.build_graph

CALL = {"model": "m", "input_tokens": 1_000, "output_tokens": 500, "latency_s": 0.5}


def test_cost_is_tokens_times_the_price_per_million():
    assert call_cost(CALL, {"m": (2.0, 8.0)}) == pytest.approx(0.002 + 0.004)
    assert call_cost(CALL, {}) is None


def test_one_unpriced_call_makes_the_total_cost_unknown_not_zero():
    usage = Usage()
    usage.add(CALL, {"m": (1.0, 1.0)})
    usage.add({**CALL, "model": "mystery"}, {"m": (1.0, 1.0)})
    assert usage.cost is None and usage.unpriced == {"mystery"}
    assert usage.as_dict()["cost_usd"] is None and format_cost(usage.cost) == "unknown"
    assert usage.as_dict()["llm_calls"] == 2 and usage.as_dict()["input_tokens"] == 2_000


def test_configured_prices_add_to_the_known_ones():
    settings = Settings(prices={"my-model": (0.5, 1.5)})
    assert settings.prices["my-model"] == (0.5, 1.5)
    assert settings.prices["offline scripted model"] == (0.0, 0.0)


def run_records(question, settings=None):
    records = []
    design = Design()
    graph = build_graph(design, settings=settings)
    outcome = run_question(
        question,
        design,
        settings=settings,
        graph=graph,
        on_event=lambda e: records.append(event_record(e, "plan_execute")),
    )
    return outcome, records


def test_every_model_call_of_a_run_is_counted_per_step():
    outcome, records = run_records(
        "What happened to Apple when it launched the iPhone, and how "
        "did its stock price change in 2007?"
    )
    per_step, total = usage_by_step(records, Settings().prices)
    ai_messages = [m for m in outcome.state["messages"] if m.type == "ai"]
    assert total.calls == len(ai_messages)  # planner, executor and every sub-agent turn
    assert total.input_tokens == sum(m.usage_metadata["input_tokens"] for m in ai_messages)
    assert set(per_step) == {0, 1, 2, 3}  # 0: the first plan, before step 1 starts
    assert per_step[1].calls == 4  # executor + researcher (tool call, answer) + executor
    assert total.cost == 0.0  # the scripted model is free, and priced as such


def test_tokens_reported_by_an_openai_server_are_the_ones_counted():
    with LocalOpenAIServer(ScriptedChatModel, model_name="served-model") as server:
        settings = Settings(
            openai_base_url=server.base_url,
            openai_api_key="k",
            planner_model="served-model",
            worker_model="served-model",
            max_retries=0,
        )
        outcome, records = run_records("What caused the dot-com crash?", settings)
    _, total = usage_by_step(records, settings.prices)
    assert outcome.status == "done"
    assert total.calls == len(server.requests)
    assert total.cost is None and total.unpriced == {"served-model"}
    _, priced = usage_by_step(records, {"served-model": (1.0, 2.0)})
    assert priced.cost == pytest.approx((priced.input_tokens + 2 * priced.output_tokens) / 1e6)


def _named(records: list[dict], what: str) -> list[dict]:
    return [r["data"][what] for r in records if isinstance(r["data"], dict) and what in r["data"]]


def test_each_call_names_the_reply_it_made_and_each_tool_run_is_timed():
    """The Run page's trace puts a latency on every model reply and tool result: each
    llm_call names the id the state keeps its reply under, each tool_call the id of the
    call it answered."""
    outcome, records = run_records(
        "Which stock in the database grew the most between 2005 and 2009? Chart the prices."
    )
    replies = [m.id for m in outcome.state["messages"] if m.type == "ai"]
    assert [c["message_id"] for c in _named(records, "llm_call")] == replies
    results = [m.tool_call_id for m in outcome.state["messages"] if m.type == "tool"]
    timings = _named(records, "tool_call")
    assert [t["tool_call_id"] for t in timings] == results
    assert [t["name"] for t in timings] == [
        m.name for m in outcome.state["messages"] if m.type == "tool"
    ]
    assert all(t["latency_s"] >= 0 and "failed" not in t for t in timings)


def test_a_served_models_replies_are_named_by_the_ids_the_state_keeps():
    with LocalOpenAIServer(ScriptedChatModel, model_name="served-model") as server:
        settings = Settings(
            openai_base_url=server.base_url,
            openai_api_key="k",
            planner_model="served-model",
            worker_model="served-model",
            max_retries=0,
        )
        outcome, records = run_records("What caused the dot-com crash?", settings)
    kept = {m.id for m in outcome.state["messages"] if m.type == "ai"}
    named = [c["message_id"] for c in _named(records, "llm_call")]
    assert named and set(named) == kept
