"""The Server page against a real ``langgraph dev`` serving a graph Stepwise did not
define: the graph drawn, its threads listed, a thread opened (state, history, runs), its
question answered from the page, and a server that is down said in one sentence."""

from __future__ import annotations

import json
import socket

import pytest

from graph.service.server_console import ServerConsole
from graph.settings import get_settings
from tests.app.support import button, graph_dots, open_page, texts

PAGE = "app_pages/server.py"


def _at(monkeypatch, url: str, graph: str | None = "ask_and_write"):
    """The page opened on ``url`` (as STEPWISE_SERVER_URL), with ``graph`` picked."""
    monkeypatch.setenv("STEPWISE_SERVER_URL", url)
    get_settings.cache_clear()
    at = open_page(PAGE)
    if graph:
        at.selectbox(key="server:assistant").set_value(_assistant_id(url, graph)).run()
    return at


def _assistant_id(url: str, graph: str) -> str:
    return next(a for a in ServerConsole(url).assistants() if a.graph_id == graph).assistant_id


def _waiting_thread(url: str, topic: str, graph: str = "ask_and_write", **input) -> str:
    console = ServerConsole(url)
    return console.start(_assistant_id(url, graph), input or {"topic": topic}).state.thread_id


def test_the_page_draws_the_foreign_graph_and_lists_its_threads(
    home, monkeypatch, foreign_graphs_server
):
    thread_id = _waiting_thread(foreign_graphs_server.url, "moths")
    at = _at(monkeypatch, foreign_graphs_server.url)
    assert at.text_input(key="server:url").value == foreign_graphs_server.url
    assert set(at.selectbox(key="server:assistant").options) == {
        "ask_and_write",
        "review_send",
        "two_questions",
        "review_edit",
        "inbox_review",
    }
    [dot] = graph_dots(at)
    assert "ask -> write" in dot and "▶ waiting" not in dot
    threads = at.dataframe[0].value
    row = threads[threads["Thread"] == thread_id].iloc[0]
    assert row["Status"] == "interrupted" and row["Waits on a person"] == "yes"


def test_opening_a_thread_shows_its_question_and_answering_writes_the_state(
    home, monkeypatch, foreign_graphs_server
):
    thread_id = _waiting_thread(foreign_graphs_server.url, "frogs")
    at = _at(monkeypatch, foreign_graphs_server.url)
    at.selectbox(key="server:thread").set_value(thread_id).run()
    assert not at.exception, [e.value for e in at.exception]
    shown = texts(at)
    assert "What should be said about frogs?" in shown
    assert "**topic**: frogs" in shown
    # the node the thread waits in is marked on the drawing
    assert "▶ waiting" in graph_dots(at)[0]
    history = at.dataframe[1].value
    assert list(history["Step"]) == [-1, 0]
    key = next(t.key for t in at.text_input if t.key.endswith(":text"))
    at.text_input(key=key).set_value("they croak")
    button(at, "Send answer").click().run()
    assert not at.exception, [e.value for e in at.exception]
    shown = texts(at)
    assert "The run finished." in shown
    assert "**answer**: they croak" in shown and "**note**: Noted: they croak" in shown
    assert "What should be said about frogs?" not in shown
    assert list(at.dataframe[2].value["Started by"]) == ["an answer", "an input"]


def test_bad_json_to_start_a_thread_is_said_and_nothing_is_started(
    home, monkeypatch, foreign_graphs_server
):
    at = _at(monkeypatch, foreign_graphs_server.url)
    before = len(at.dataframe[0].value) if at.dataframe else 0
    at.text_area(key="server:input").set_value('{"topic": frogs}')
    button(at, "Start").click().run()
    assert "The input is not JSON" in texts(at)
    assert (len(at.dataframe[0].value) if at.dataframe else 0) == before
    at.text_area(key="server:input").set_value('{"topic": "newts"}')
    button(at, "Start").click().run()
    assert "The run stopped on a question" in texts(at)
    assert "What should be said about newts?" in texts(at)


def test_a_server_that_is_down_is_said_in_one_sentence(home, monkeypatch):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    at = _at(monkeypatch, f"http://127.0.0.1:{port}", graph=None)
    assert [e.value for e in at.error] == [
        f"No server answers at http://127.0.0.1:{port}: is it running (e.g. `langgraph dev`)?"
    ]
    at.text_input(key="server:url").set_value("localhost:2024").run()
    assert "is not a server URL" in at.error[0].value


def test_a_review_request_is_approved_or_rejected_with_buttons(
    home, monkeypatch, foreign_graphs_server
):
    approved = _waiting_thread(foreign_graphs_server.url, "", "review_send", to="ann@example.org")
    rejected = _waiting_thread(foreign_graphs_server.url, "", "review_send", to="bob@example.org")
    at = _at(monkeypatch, foreign_graphs_server.url, "review_send")
    at.selectbox(key="server:thread").set_value(approved).run()
    assert "send_email" in texts(at)
    assert not [t for t in at.text_input if t.label == "Answer"]  # buttons, not a text box
    button(at, "Approve").click().run()
    assert "**sent**: true" in texts(at) and "**decision**: approve" in texts(at)
    at.selectbox(key="server:thread").set_value(rejected).run()
    key = next(t.key for t in at.text_area if t.key.endswith(":message"))
    at.text_area(key=key).set_value("wrong person")
    button(at, "Reject").click().run()
    shown = texts(at)
    assert "**sent**: false" in shown and "**reason**: wrong person" in shown


def _opened(monkeypatch, url: str, graph: str):
    """The page on a new thread of ``graph`` waiting at its review, and that thread."""
    thread_id = _waiting_thread(url, "", graph, email=EMAIL)
    at = _at(monkeypatch, url, graph)
    at.selectbox(key="server:thread").set_value(thread_id).run()
    return at, thread_id


def _state(url: str, thread_id: str) -> dict:
    return ServerConsole(url).client.threads.get_state(thread_id)["values"]


EMAIL = {"to": "ann@example.org", "subject": "Hi", "urgent": False, "cc": ["bo@example.org"]}


@pytest.mark.parametrize("graph", ["review_edit", "inbox_review"])
def test_a_standard_request_is_edited_in_a_form_from_its_args(
    home, monkeypatch, foreign_graphs_server, graph
):
    url = foreign_graphs_server.url
    at, thread_id = _opened(monkeypatch, url, graph)
    labels = [b.label for b in at.button]
    assert {"Approve", "Send edited", "Reject", "Respond"} <= set(labels)
    to = next(t for t in at.text_input if t.key.endswith(":arg:to"))
    assert to.value == "ann@example.org"
    to.set_value("cy@example.org")
    next(c for c in at.checkbox if c.key.endswith(":arg:urgent")).check()
    cc = next(t for t in at.text_area if t.key.endswith(":arg:cc"))
    cc.set_value('["di@example.org"]')
    button(at, "Send edited").click().run()
    values = _state(url, thread_id)
    assert values["decision"] == "edit"
    assert values["sent"] == {
        "to": "cy@example.org",
        "subject": "Hi",
        "urgent": True,
        "cc": ["di@example.org"],
    }


def test_the_args_are_edited_as_json_one_click_away(home, monkeypatch, foreign_graphs_server):
    url = foreign_graphs_server.url
    at, thread_id = _opened(monkeypatch, url, "review_edit")
    next(t for t in at.toggle if t.label == "Edit as JSON").set_value(True).run()
    box = next(t for t in at.text_area if t.label == "Arguments (JSON)")
    assert json.loads(box.value) == EMAIL
    box.set_value("{not json")
    button(at, "Send edited").click().run()
    assert "The arguments is not JSON" in at.error[0].value
    assert _state(url, thread_id).get("decision") is None  # nothing was sent
    box = next(t for t in at.text_area if t.label == "Arguments (JSON)")
    box.set_value('{"to": "ed@example.org"}')
    button(at, "Send edited").click().run()
    assert _state(url, thread_id)["sent"] == {"to": "ed@example.org"}


@pytest.mark.parametrize(
    ("graph", "said"), [("review_edit", "respond"), ("inbox_review", "response")]
)
def test_a_standard_request_is_responded_to_with_text_or_rejected_with_a_message(
    home, monkeypatch, foreign_graphs_server, graph, said
):
    url = foreign_graphs_server.url
    at, thread_id = _opened(monkeypatch, url, graph)
    button(at, "Respond").click().run()  # no text yet: said, nothing sent
    assert "Write the response first" in at.error[0].value
    message = next(t for t in at.text_area if t.key.endswith(":message"))
    message.set_value("She is on leave; write next week.")
    button(at, "Respond").click().run()
    values = _state(url, thread_id)
    assert (values["decision"], values["message"], values["sent"]) == (
        said,
        "She is on leave; write next week.",
        None,
    )
    at, thread_id = _opened(monkeypatch, url, graph)
    button(at, "Reject").click().run()
    values = _state(url, thread_id)
    assert values["decision"] == ("reject" if graph == "review_edit" else "ignore")
    assert values["sent"] is None


def test_a_thread_paused_at_a_breakpoint_continues_from_the_page(
    home, monkeypatch, foreign_graphs_server
):
    thread_id = _waiting_thread(foreign_graphs_server.url, "larks")
    console = ServerConsole(foreign_graphs_server.url)
    assistant_id = _assistant_id(foreign_graphs_server.url, "ask_and_write")
    run = console.client.runs.create(
        thread_id, assistant_id, command={"resume": "they sing"}, interrupt_before=["write"]
    )
    console.follow(thread_id, run["run_id"])
    at = _at(monkeypatch, foreign_graphs_server.url)
    at.selectbox(key="server:thread").set_value(thread_id).run()
    assert "Noted: they sing" not in texts(at)
    button(at, "Continue (write next)").click().run()
    assert "The run finished." in texts(at) and "**note**: Noted: they sing" in texts(at)
    assert not [b for b in at.button if b.label.startswith("Continue")]


def test_the_server_key_is_offered_to_a_typed_address_only_when_ticked(home, monkeypatch):
    """Issue #34: the page sent STEPWISE_SERVER_API_KEY to any URL typed in it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    configured = f"http://127.0.0.1:{port}"
    monkeypatch.setenv("STEPWISE_SERVER_API_KEY", "server-key-for-the-page-1234")
    at = _at(monkeypatch, configured, graph=None)
    assert not at.checkbox, "the configured server gets the key unasked"
    other = "http://127.0.0.1:9"
    at.text_input(key="server:url").set_value(other).run()
    [choice] = at.checkbox
    assert choice.label.startswith("Send the server key") and choice.value is False
    assert configured in choice.help  # says where the key goes unasked
    assert "server-key-for-the-page-1234" not in texts(at)
