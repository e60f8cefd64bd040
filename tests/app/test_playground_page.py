"""The node playground on the Prompts page, and its button on the History page: the
offline scripted model, a real run service and store under a temporary home."""

import time

import pytest

from graph.kernel.design import Design
from graph.models.scripted import ScriptedChatModel
from tests.app.support import button, open_page, texts, try_it
from tests.support_procs.fake_server import LocalOpenAIServer

PLANNER = "plan_execute/planner"
EDITOR = f"prompts:editor:{PLANNER}"
QUESTION = "Which stock in the database grew the most between 2005 and 2009?"


def _finished_run(services) -> str:
    _, service = services
    run_id = service.start(QUESTION, Design())
    assert service.wait(run_id, timeout=60).status == "done"
    return run_id


def test_the_playground_shows_the_unsaved_edit_beside_the_active_text_and_says_the_offline_model_ignores_it(
    home, services
):
    store, _ = services
    run_id = _finished_run(services)
    events = len(store.events(run_id))
    at = open_page("app_pages/prompts.py")
    at.text_area(key=EDITOR).input(at.text_area(key=EDITOR).value + "\nBe brief.\n").run()
    assert at.selectbox(key="playground:run").value == run_id
    assert at.selectbox(key="playground:point").value  # the checkpoint before the Planner
    assert at.multiselect(key=f"playground:texts:{PLANNER}:True").value == ["active", "editor"]
    at.number_input(key="playground:samples").set_value(2).run()
    try_it(at)
    assert not at.exception, [e.value for e in at.exception]
    page = texts(at)
    assert "the active text" in page and "the unsaved edit" in page
    assert "does not read this prompt's wording" in page
    assert "the unsaved edit got the same reply as the active text" in page
    plans = [d.value for d in at.dataframe if "agent" in getattr(d.value, "columns", [])]
    assert len(plans) == 4  # 2 texts × 2 samples, each a plan table
    assert list(plans[0]["agent"])[-1] == "synthesizer"
    assert len(store.events(run_id)) == events  # nothing written to the run


def test_a_prompt_text_that_cannot_be_filled_in_is_said_in_words(home, services):
    _finished_run(services)
    at = open_page("app_pages/prompts.py")
    at.text_area(key=EDITOR).input(
        "Plan {nonsense}.\n{agent_list}\n{replan_section}\n{user_query}\n"
    ).run()
    at.multiselect(key=f"playground:texts:{PLANNER}:True").set_value(["editor"]).run()
    try_it(at)
    assert not at.exception
    assert any("nonsense" in e.value for e in at.error)


def test_try_this_node_on_history_opens_the_playground_at_that_checkpoint(home, services):
    _, service = services
    run_id = _finished_run(services)
    executor = next(p for p in service.timeline(run_id) if p["next"] == ["executor"])
    at = open_page("app_pages/history.py", run=run_id)
    at.selectbox(key=f"history:diff:{run_id}").set_value(executor["index"]).run()
    button(at, "Try executor with another prompt").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="playground:point").value == executor["checkpoint_id"]
    assert next(s for s in at.selectbox if s.label == "Prompt").value == "plan_execute/executor"


def test_try_a_node_on_the_run_page_opens_the_playground_before_the_planner(home, services):
    _, service = services
    run_id = _finished_run(services)
    planner = next(p for p in service.timeline(run_id) if p["next"] == ["planner"])
    at = open_page("app_pages/run.py", run=run_id)
    button(at, "Try a node of this run with another prompt").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="playground:run").value == run_id
    assert at.selectbox(key="playground:point").value == planner["checkpoint_id"]
    assert next(s for s in at.selectbox if s.label == "Prompt").value == PLANNER


def test_a_checkpoint_before_a_node_without_a_model_call_greys_the_button_and_says_why(
    home, services
):
    _, service = services
    run_id = _finished_run(services)
    worker = next(p for p in service.timeline(run_id) if p["next"] == ["synthesizer"])
    at = open_page("app_pages/history.py", run=run_id)
    at.selectbox(key=f"history:diff:{run_id}").set_value(worker["index"]).run()
    found = button(at, "Try synthesizer with another prompt")
    assert found.disabled
    assert "does not ask a model for a plan or a routing decision" in found.help


@pytest.fixture
def server():
    with LocalOpenAIServer(ScriptedChatModel, model_name="served-model") as running:
        yield running


def test_a_model_that_does_not_answer_never_holds_the_page_and_can_be_cancelled(
    home, services, server
):
    """Issue 26: the calls ran inside the page's script, which a slow model held (no
    progress, no Cancel) and a rerun or another page cut short."""
    _, service = services
    _finished_run(services)
    service.profiles.add("slow", server.base_url, "served-model")
    server.inject("never_answer")
    at = open_page("app_pages/prompts.py")
    at.multiselect(key="playground:profiles").set_value(["slow"]).run()
    at.number_input(key="playground:samples").set_value(3).run()
    button(at, "Try it").click().run()  # returns while the model is still asked
    assert not at.exception, [e.value for e in at.exception]
    (bar,) = at.get("progress")
    assert bar.proto.text.startswith("Asking the model: 0 of 3 calls done…")
    at.switch_page("app_pages/history.py").run()  # another page, then back: still going
    at.switch_page("app_pages/prompts.py").run()
    call = at.session_state["playground:call"]
    for _ in range(600):  # the request reaches the server from the call's own thread
        if server.requests:
            break
        time.sleep(0.05)
    assert call.running and len(server.requests) == 1
    assert button(at, "Try it").disabled  # one Try it at a time
    button(at, "Cancel").click().run()
    for _ in range(600):
        if "playground:call" not in at.session_state:
            break
        time.sleep(0.05)
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert "Cancelled before the model answered." in [e.value for e in at.error]
    assert "Cancelled after 1 of 3 calls; the last was cut short; 2 not asked." in texts(at)
    assert len(server.requests) == 1  # no sample asked after the Cancel
    assert not button(at, "Try it").disabled
