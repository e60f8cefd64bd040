"""What a run keeps of one model reply is capped, and the run says so (issue #14, item 6).

A model whose every reply is 2 MB: the run still ends, every reply in its final state is
at most the cap, and its event log records each cut as a note of the model call (the Run
page lists those notes among the run's notices). Real parts: the run service, SQLite
store and LangGraph checkpoints, the scripted model padded to 2 MB.
"""

from __future__ import annotations

import json

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.outputs import ChatResult

from graph.kernel.design import Design
from graph.models.capped import capped, cut_text
from graph.models.chat import model_label
from graph.models.scripted import ScriptedChatModel
from graph.service.run_service import RunService
from graph.settings import Settings

TWO_MB = 2 * 1024 * 1024
QUESTION = "Which stock in the database grew the most between 2005 and 2009? Chart the prices."


class TwoMegabyteModel(ScriptedChatModel):
    """The scripted model, every reply padded to 2 MB: prose with more prose, JSON with
    trailing blank lines (as a rambling small model does), tool calls with prose."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        result = super()._generate(messages, stop, run_manager, **kwargs)
        message = result.generations[0].message
        text = message.content if isinstance(message.content, str) else ""
        filler = "\n" if text.lstrip().startswith("{") else "All work and no play. "
        message.content = text + filler * (TWO_MB // len(filler))
        return result


def test_a_run_with_2_mb_replies_keeps_at_most_the_cap_per_reply_and_says_it_cut(store, settings):
    cap = settings.max_reply_chars
    assert cap == 65_536  # the default
    service = RunService(
        store, settings, timeout_tick_s=0, model_factory=lambda role: TwoMegabyteModel()
    )
    try:
        run_id = service.start(QUESTION, Design(max_replans=2, recursion_limit=60))
        record = service.wait(run_id, timeout=120)
        state = service.checkpointer.get_tuple({"configurable": {"thread_id": run_id}})
    finally:
        service.shutdown()
    assert record.status == "done", record.reason
    assert record.final_answer and "AAPL" in record.final_answer
    values = state.checkpoint["channel_values"]
    replies = [m for m in values["messages"] if isinstance(m, AIMessage)]
    assert len(replies) >= 5
    assert max(len(str(m.content)) for m in replies) <= cap
    assert all("Cut by Stepwise" in str(m.content) for m in replies)
    assert len(values["final_answer"]) <= cap
    # A step's result is one reply, or two for a chart step (the chart agent's and its caption).
    assert all(len(str(v)) <= 2 * cap + 20 for v in values["step_results"].values())
    # Said in the run: each cut is a note of its model call in the event log.
    calls = [
        e["data"]["llm_call"]
        for e in store.events(run_id)
        if isinstance(e.get("data"), dict) and "llm_call" in e["data"]
    ]
    noted = [
        c for c in calls if any("was cut to its first 65,536" in n for n in c.get("notes", []))
    ]
    assert calls and len(noted) == len(calls)


def test_the_cap_is_a_setting_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("STEPWISE_MAX_REPLY_CHARS", "4096")
    assert Settings().max_reply_chars == 4096


def test_a_cut_text_is_the_cap_long_and_says_how_much_was_kept():
    text = cut_text("x" * 100_000, 2048)
    assert len(text) == 2048
    assert text.endswith("characters.]") and "of 100,000 characters" in text
    assert cut_text("short", 2048) == "short"


class HugeToolCallModel(ScriptedChatModel):
    """Asks for a tool with 200,000 characters of arguments."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        result = super()._generate(messages, stop, run_manager, **kwargs)
        result.generations[0].message = AIMessage(
            content="",
            tool_calls=[{"name": "write_draft", "args": {"text": "y" * 200_000}, "id": "c1"}],
        )
        return result


def test_a_tool_call_whose_arguments_pass_the_cap_is_not_run_and_is_noted():
    model = capped(HugeToolCallModel(), 4096)
    reply = model.invoke([HumanMessage(content="go")])
    assert reply.tool_calls == []
    (invalid,) = reply.invalid_tool_calls
    assert invalid["name"] == "write_draft" and "not run" in invalid["error"]
    assert len(json.dumps(invalid["args"])) < 4096
    (note,) = reply.response_metadata["stepwise"]["notes"]
    assert "write_draft" in note and "was not run" in note


def test_the_capped_model_keeps_its_label_and_tools_and_is_wrapped_once():
    model = capped(ScriptedChatModel(), 4096)
    assert model_label(model) == "offline scripted model"
    assert capped(model, 4096) is model
    bound = model.bind_tools([{"type": "function", "function": {"name": "f", "parameters": {}}}])
    assert bound.kwargs["tools"][0]["function"]["name"] == "f"
