"""The console for any LangGraph Server, against a real ``langgraph dev`` serving a graph
Stepwise did not define (``tests/server_graphs/ask_and_write.py``: ``ask`` stops on
``interrupt({"question": ...})``, ``write`` notes the answer)."""

from __future__ import annotations

import socket
import time

import pytest

from graph.service.server_answers import answer_form, decisions_answer
from graph.service.server_console import ServerConsole, ServerError, drawing_to_dot, parse_json
from graph.service.server_records import checkpoints_of


@pytest.fixture
def console(foreign_graphs_server):
    console = ServerConsole(foreign_graphs_server.url)
    yield console
    console.close()


@pytest.fixture
def assistant(console):
    return next(a for a in console.assistants() if a.graph_id == "ask_and_write")


def test_lists_the_graphs_a_foreign_server_serves(console):
    graphs = {a.graph_id for a in console.assistants()}
    assert graphs == {
        "ask_and_write",
        "review_send",
        "two_questions",
        "review_edit",
        "inbox_review",
    }


def test_draws_the_servers_graph_with_stepwise_conventions(console, assistant):
    dot = console.graph_dot(assistant.assistant_id, active="ask")
    assert "__start__ -> ask" in dot and "ask -> write" in dot and "write -> __end__" in dot
    assert "label=START" in dot and "label=END" in dot
    # the node the thread waits in is marked by more than colour
    assert "▶ waiting" in dot and "peripheries=2" in dot


def test_a_started_thread_is_listed_as_interrupted_with_its_question(console, assistant):
    stop = console.start(assistant.assistant_id, {"topic": "cats"})
    assert stop.run_status == "success"
    assert stop.state.next == ["ask"]
    [question] = stop.state.interrupts
    assert question.value == {"question": "What should be said about cats?"}
    assert question.node == "ask"
    listed = {t.thread_id: t for t in console.threads("ask_and_write")}
    assert {t.graph_id for t in listed.values()} == {"ask_and_write"}
    assert listed[stop.state.thread_id].interrupted
    assert listed[stop.state.thread_id].status == "interrupted"
    [run] = console.runs(stop.state.thread_id)
    assert run.started_by == "input"


def test_answering_the_interrupt_finishes_with_the_answer_in_state(console, assistant):
    thread_id = console.start(assistant.assistant_id, {"topic": "owls"}).state.thread_id
    stop = console.answer(thread_id, assistant.assistant_id, "they hoot")
    assert stop.run_status == "success" and stop.summary == "The run finished."
    assert stop.state.values == {
        "topic": "owls",
        "answer": "they hoot",
        "note": "Noted: they hoot",
    }
    assert stop.state.interrupts == [] and stop.state.next == []
    assert not {t.thread_id: t for t in console.threads()}[thread_id].interrupted
    assert [r.started_by for r in console.runs(thread_id)] == ["resume", "input"]
    # a second answer to a question already answered is refused, saying why
    with pytest.raises(ServerError, match="not waiting on that question"):
        console.answer(thread_id, assistant.assistant_id, "again")


def test_two_questions_at_once_are_answered_each_on_its_own(console):
    assistant_id = next(
        a.assistant_id for a in console.assistants() if a.graph_id == "two_questions"
    )
    state = console.start(assistant_id, {}).state
    asked = {i.value: i for i in state.interrupts}
    assert set(asked) == {"First name?", "Last name?"}
    first = asked["First name?"]
    stop = console.answer(state.thread_id, assistant_id, "Ada", interrupt_id=first.interrupt_id)
    assert [i.value for i in stop.state.interrupts] == ["Last name?"]
    with pytest.raises(ServerError, match="not waiting on that question"):
        console.answer(state.thread_id, assistant_id, "Ada", interrupt_id=first.interrupt_id)
    last = stop.state.interrupts[0]
    stop = console.answer(state.thread_id, assistant_id, "Byron", interrupt_id=last.interrupt_id)
    assert stop.state.values == {"a": "Ada", "b": "Byron"}
    assert stop.summary == "The run finished."


def test_a_run_still_going_when_the_wait_ends_says_so(console, assistant):
    stop = console.start(assistant.assistant_id, {"topic": "eels"}, wait_s=0)
    if stop.run_status not in ("pending", "running"):
        pytest.skip(f"the server finished the run before the first look ({stop.run_status})")
    assert stop.summary.startswith(f"The run is still {stop.run_status}")


def test_a_thread_paused_at_a_breakpoint_continues_from_there(console, assistant):
    thread_id = console.start(assistant.assistant_id, {"topic": "crows"}).state.thread_id
    # the answer runs up to a breakpoint before `write` (a server-side interrupt_before)
    run = console.client.runs.create(
        thread_id,
        assistant.assistant_id,
        command={"resume": "they caw"},
        interrupt_before=["write"],
    )
    paused = console.follow(thread_id, run["run_id"])
    assert paused.state.next == ["write"] and not paused.state.interrupts
    assert paused.summary == "The run paused before write; continue it below."
    with pytest.raises(ServerError, match="not waiting on that question"):
        console.answer(thread_id, assistant.assistant_id, "x")
    done = console.proceed(thread_id, assistant.assistant_id)
    assert done.state.values["note"] == "Noted: they caw" and done.state.next == []
    with pytest.raises(ServerError, match="not paused at a breakpoint"):
        console.proceed(thread_id, assistant.assistant_id)


def test_history_says_what_each_checkpoint_changed(console, assistant):
    thread_id = console.start(assistant.assistant_id, {"topic": "bees"}).state.thread_id
    console.answer(thread_id, assistant.assistant_id, "they buzz")
    history = console.history(thread_id)
    assert [c.step for c in history] == [-1, 0, 1, 2]
    assert [c.changed for c in history] == [
        {},
        {"topic": "bees"},
        {"answer": "they buzz"},
        {"note": "Noted: they buzz"},
    ]
    assert [c.ran for c in history] == [[], ["__start__"], ["ask"], ["write"]]
    assert [c.interrupts for c in history] == [0, 1, 0, 0]


def test_a_server_that_is_down_is_said_at_once():
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(ServerError, match=f"No server answers at http://127.0.0.1:{port}"):
        ServerConsole(f"http://127.0.0.1:{port}").assistants()
    assert time.monotonic() - started < 3


def test_a_url_that_is_not_a_langgraph_server_is_said(foreign_graphs_server):
    with pytest.raises(ServerError, match="is it the URL of a LangGraph Server"):
        ServerConsole(foreign_graphs_server.url + "/not/here").assistants()


@pytest.mark.parametrize("url", ["localhost:2024", "ftp://example.org", "  "])
def test_a_url_that_is_not_a_url_is_refused_before_any_call(url):
    with pytest.raises(ServerError, match="server URL"):
        ServerConsole(url)


def test_a_slow_server_is_said_within_the_timeout():
    with socket.socket() as sock:  # accepts connections, never answers
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        with pytest.raises(ServerError, match="did not answer within 0.5 s"):
            ServerConsole(url, timeout_s=0.5).assistants()


def test_typed_json_errors_say_where():
    assert parse_json('{"topic": "cats"}') == {"topic": "cats"}
    with pytest.raises(ServerError, match="not JSON: .* line 1, column"):
        parse_json('{"topic": cats}')
    with pytest.raises(ServerError, match="empty"):
        parse_json("  ")


def test_simple_interrupts_get_a_question_and_choices():
    assert answer_form("Go on?").question == "Go on?"
    form = answer_form({"question": "Ship it?", "options": ["yes", "no"]})
    assert (form.question, form.choices, form.simple) == ("Ship it?", ["yes", "no"], True)
    assert not answer_form({"amount": 3}).simple
    assert not answer_form(42).simple


def test_langchain_review_requests_get_approve_and_reject():
    form = answer_form(
        {
            "action_requests": [{"name": "send_email", "args": {"to": "a@b.c"}}],
            "review_configs": [
                {"action_name": "send_email", "allowed_decisions": ["approve", "reject"]}
            ],
        }
    )
    assert form.simple and form.decisions == ["approve", "reject"]
    assert decisions_answer(form, "reject", "not now") == {
        "decisions": [{"type": "reject", "message": "not now"}]
    }


def test_a_drawing_without_nodes_is_refused_and_subgraphs_become_clusters():
    with pytest.raises(ServerError, match="no nodes"):
        drawing_to_dot({"edges": []})
    dot = drawing_to_dot(
        {
            "nodes": [{"id": "__start__"}, {"id": "team:__start__"}, {"id": "team:w"}],
            "edges": [{"source": "__start__", "target": "team:__start__", "conditional": True}],
        }
    )
    assert "cluster_team" in dot and "style=dashed" in dot


def test_history_of_a_state_that_is_not_a_mapping():
    [first, second] = checkpoints_of([{"values": [1]}, {"values": [1, 2]}])
    assert second.changed == {"value": [1, 2]}


def test_agent_inbox_requests_map_to_standard_decisions_in_their_own_shape():
    form = answer_form(
        [
            {
                "action_request": {"action": "post", "args": {"text": "hi"}},
                "config": {
                    "allow_ignore": True,
                    "allow_respond": False,
                    "allow_edit": True,
                    "allow_accept": True,
                },
                "description": "Post it?",
            }
        ]
    )
    assert form.decisions == ["approve", "edit", "reject"]
    assert form.actions == [{"name": "post", "args": {"text": "hi"}, "description": "Post it?"}]
    assert decisions_answer(form, "approve") == [{"type": "accept", "args": None}]
    assert decisions_answer(form, "edit", edited=[{"text": "bye"}]) == [
        {"type": "edit", "args": {"action": "post", "args": {"text": "bye"}}}
    ]
    assert decisions_answer(form, "reject") == [{"type": "ignore", "args": None}]
    with pytest.raises(ServerError, match="does not allow 'respond'"):
        decisions_answer(form, "respond", "no")


def test_a_request_whose_args_are_not_an_object_is_answered_as_json():
    odd = {"action_requests": [{"name": "x", "args": [1, 2]}], "review_configs": []}
    assert not answer_form(odd).simple and answer_form(odd).asked == []
    inbox = {"action_request": {"action": "x", "args": "text"}, "config": {}}
    assert not answer_form(inbox).simple
