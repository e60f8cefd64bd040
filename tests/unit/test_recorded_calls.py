"""Model calls recorded with their requests and replies, and answered again from the
recording (graph/models/recorded.py): the basis of replays and forks."""

from __future__ import annotations

import dataclasses

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from graph.kernel.design import Design
from graph.kernel.system import get_system
from graph.models.calls import ModelCallError
from graph.models.recorded import (
    RecordedChatModel,
    Recording,
    recorded_calls,
    request_key,
    request_record,
)
from graph.models.scripted import ScriptedChatModel
from graph.service.runs import run_question

QUESTION = "Which stock in the database grew the most between 2005 and 2009? Chart the prices."


class CountingScripted(ScriptedChatModel):
    """The offline scripted model, counting the calls it answers."""

    calls: int = 0

    def _generate(self, *args, **kwargs):
        self.calls += 1
        return super()._generate(*args, **kwargs)


def _record(settings, design: Design):
    """A run of ``design`` on the offline model, and its events as the store gives them back."""
    events: list[dict] = []
    outcome = run_question(
        QUESTION, design, settings=settings, on_event=lambda e: events.append(_plain(e))
    )
    assert outcome.status == "done", outcome.reason
    return outcome, events


# What a replay has of its own: its times, and the ids its team calls are sent under.
OWN = {"duration_s", "started_at", "ended_at", "request_id"}


def _untimed(rows: list) -> list[dict]:
    """Rows (dataclasses or dicts) without what a replay has of its own."""
    return [{k: v for k, v in _fields(row).items() if k not in OWN} for row in rows]


def _fields(row) -> dict:
    return row if isinstance(row, dict) else dataclasses.asdict(row)


def _plain(event) -> dict:
    return {"seq": event.seq, "kind": event.kind, "data": event.data}


def _replay(settings, design: Design, model: RecordedChatModel):
    graph = get_system(design.system).build_graph(
        design, settings=settings, planner_model=model, worker_model=model
    )
    return run_question(QUESTION, design, settings=settings, graph=graph)


def test_every_model_call_is_recorded_in_the_store_with_its_request_and_reply(service):
    run_id = service.start(QUESTION, Design())
    assert service.wait(run_id, timeout=120).status == "done"
    events = service.store.events(run_id)
    exported = service.store.export_run(run_id)["events"]
    assert recorded_calls(exported) == recorded_calls(events)
    llm_calls = [e["data"]["llm_call"] for e in events if "llm_call" in (e.get("data") or {})]
    calls = recorded_calls(events)
    assert calls and len(calls) == len(llm_calls)
    for call in calls:
        assert call["request"]["messages"], "a request without its messages"
        assert call["reply"]["type"] == "ai"
    # a worker's call offered its tools, named
    assert any(call["request"]["params"].get("tools") for call in calls)
    # a Planner's call asked for its JSON schema
    assert any(call["request"]["params"].get("json_request") for call in calls)


@pytest.mark.parametrize("system", ["plan_execute", "hierarchical_teams"])
def test_a_run_replayed_from_its_recording_ends_the_same_without_the_model(settings, system):
    design = Design(system=system)
    original, events = _record(settings, design)
    recording = Recording(recorded_calls(events), source="the original run")
    fallback = CountingScripted()
    replay = _replay(settings, design, RecordedChatModel(recording=recording, fallback=fallback))
    assert replay.status == "done", replay.reason
    assert fallback.calls == 0, "a replayed call went to the live model"
    assert recording.used == recording.size
    rows = get_system(system).step_rows
    assert _untimed(rows(replay.state)) == _untimed(rows(original.state))
    for field in ("plan", "step_status", "final_answer", "outcome"):
        assert replay.state.get(field) == original.state.get(field), field
    assert _untimed(replay.state.get("subtasks", [])) == _untimed(
        original.state.get("subtasks", [])
    )


def test_a_replayed_run_records_its_calls_as_replayed(settings):
    design = Design()
    _, events = _record(settings, design)
    model = RecordedChatModel(recording=Recording(recorded_calls(events)))
    replayed: list[dict] = []
    graph = get_system(design.system).build_graph(
        design, settings=settings, planner_model=model, worker_model=model
    )
    outcome = run_question(
        QUESTION,
        design,
        settings=settings,
        graph=graph,
        on_event=lambda e: replayed.append(_plain(e)),
    )
    assert outcome.status == "done", outcome.reason
    calls = recorded_calls(replayed)
    assert calls and all(call.get("replayed") is True for call in calls)


def test_a_request_the_recording_does_not_hold_fails_in_words_or_goes_live():
    asked = request_record([HumanMessage("What is 2 + 2?")], {})
    recording = Recording([{"request": asked, "reply": {"type": "ai", "data": {"content": "4"}}}])
    model = RecordedChatModel(recording=recording)
    assert model.invoke([HumanMessage("What is 2 + 2?")]).content == "4"
    with pytest.raises(ModelCallError, match="went another way than the recorded run"):
        model.invoke([HumanMessage("What is 3 + 3?")])
    # a fork's live model answers what the recording does not hold, marked live
    live = RecordedChatModel(recording=Recording([]), fallback=ScriptedChatModel())
    reply = live.invoke([HumanMessage("What is 3 + 3?")])
    assert isinstance(reply, AIMessage)
    assert reply.response_metadata["stepwise"]["replayed"] is False


def test_the_key_of_a_request_ignores_ids_but_not_texts_schemas_or_tools():
    one = request_record([HumanMessage("hi", id="a")], {"tools": [{"name": "sql"}]})
    same = request_record([HumanMessage("hi", id="b")], {"tools": [{"name": "sql"}]})
    assert request_key(one) == request_key(same)
    other_text = request_record([HumanMessage("hello", id="a")], {"tools": [{"name": "sql"}]})
    other_tools = request_record([HumanMessage("hi")], {"tools": [{"name": "chart"}]})
    other_schema = request_record([HumanMessage("hi")], {"json_request": {"name": "Plan"}})
    keys = {request_key(r) for r in (one, other_text, other_tools, other_schema)}
    assert len(keys) == 4


def test_the_service_replays_a_finished_run_with_no_model_and_records_its_parent(service):
    run_id = service.start(QUESTION, Design())
    original = service.wait(run_id, timeout=120)
    assert original.status == "done"
    replay_id = service.replay(run_id)
    replayed = service.wait(replay_id, timeout=120)
    assert replayed.status == "done", replayed.reason
    assert replayed.parent_run == run_id
    assert "replay of run" in replayed.model_label
    calls = recorded_calls(service.store.events(replay_id))
    assert calls and all(call.get("replayed") is True for call in calls)
    assert service.state(replay_id)["final_answer"] == service.state(run_id)["final_answer"]


def test_a_run_without_recorded_calls_cannot_be_replayed_and_says_why(service):
    run_id = service.start(QUESTION, Design())
    assert service.wait(run_id, timeout=120).status == "done"
    exported = service.store.export_run(run_id)
    for event in exported["events"]:  # as a run made before calls were recorded
        call = (event.get("data") or {}).get("llm_call")
        if isinstance(call, dict):
            call.pop("request", None)
            call.pop("reply", None)
    exported["run"]["id"] = "older-run"
    older = service.store.import_run(exported)
    with pytest.raises(ValueError, match="no recorded model calls to replay"):
        service.replay(older)
    with pytest.raises(ValueError, match="No run"):
        service.replay("no-such-run")
