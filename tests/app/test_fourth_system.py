"""A fourth system, defined in the tests (``tests/fourth``), registered with a line for it and one for its view: the
Design, Run and History pages show it with no change of their own."""

import pytest

from graph.kernel.system import register, systems, unregister
from tests.app.support import button, graph_dots, open_page, texts, wait_status
from tests.fourth import SYSTEM as RELAY
from tests.fourth import VIEW
from ui.views import register_view, unregister_view

QUESTION = VIEW.examples[0]


@pytest.fixture
def relay(home):
    register(RELAY)  # what graph/registry.py does for a shipped system, in one line
    register_view(RELAY.name, VIEW)  # and ui/views.py for its view
    yield RELAY
    unregister_view(RELAY.name)
    unregister(RELAY.name)


def test_the_design_page_offers_the_fourth_system_and_draws_its_graph(relay, services):
    store, _ = services
    at = open_page()
    assert at.radio(key="design:system").options[-1] == RELAY.title  # after the shipped ones
    at.radio(key="design:system").set_value("relay").run()
    assert not at.exception, [e.value for e in at.exception]
    assert store.load_design().system == "relay"
    assert [c.label for c in at.checkbox if c.key.startswith("agent:")] == ["drafter", "checker"]
    dot = graph_dots(at)[0]
    assert "drafter -> checker" in dot and "planner" not in dot
    assert VIEW.graph_legend in texts(at)

    at.checkbox(key="agent:checker").uncheck().run()
    assert store.load_design().enabled_agents == ["drafter"]
    assert "checker" not in graph_dots(at)[0] and "drafter -> close" in graph_dots(at)[0]


def test_the_run_and_history_pages_show_a_run_of_the_fourth_system(relay, services):
    from graph.kernel.design import Design

    store, _ = services
    store.save_design(Design(system="relay"))
    at = open_page("app_pages/run.py")
    assert [b.label for b in at.button][0] == QUESTION  # its example
    button(at, QUESTION).click().run()
    button(at, "Run").click().run()
    run_id = at.query_params["run"]
    wait_status(store, run_id, "done")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert "Relay legs" in [h.value for h in at.subheader]
    legs = at.table[0].value
    assert list(legs.columns[:4]) == ["Leg", "Agent", "Status", "Text"]
    assert list(legs["Agent"]) == ["drafter", "checker"]
    assert "Duration" in legs.columns and "LLM calls" in legs.columns
    shown = texts(at)
    # The offline model played the relay by the relay's own rules (tests/fourth/offline_rules.py),
    # registered with the system: not the "I follow fixed rules and have none" of no rules.
    own = "Checked by the relay: A first draft from the relay's own rules, for: " + QUESTION
    assert own in shown and "2 relay leg(s)" in shown
    assert store.snapshot(run_id)["final_answer"] == own
    assert "offline scripted model" in shown

    history = open_page("app_pages/history.py", run=run_id)
    rows = history.dataframe[0].value.to_dict("records")
    assert rows[0]["Question"] == QUESTION and rows[0]["Status"] == "done"
    assert rows[0]["Counts"] == "Relay legs 2"  # counted and named by the relay
    timeline = next(d.value for d in history.dataframe if "After" in d.value.columns)
    assert "Draft" in timeline.columns and "drafter" in list(timeline["After"])
    # a fork may change the draft: the checker signs off what a person wrote
    before_checker = next(p for p in services[1].timeline(run_id) if p["next"] == ["checker"])
    history.selectbox(key=f"history:fork-point:{run_id}").set_value(
        before_checker["checkpoint_id"]
    ).run()
    history.radio(key="history:fork-change").set_value("draft").run()
    history.text_area(key=f"history:change:draft:{before_checker['checkpoint_id']}").input(
        "A draft written by a person."
    ).run()
    button(history, "Run on as a new run").click().run()
    new_id = history.query_params["run"]
    assert new_id != run_id
    assert (
        wait_status(store, new_id, "done").final_answer
        == "Checked by the relay: A draft written by a person."
    )


SIGN_OFF = "setting:relay:sign_off"


def test_the_design_page_shows_and_saves_the_fourth_systems_own_setting(relay, services):
    store, _ = services
    at = open_page()
    at.radio(key="design:system").set_value("relay").run()
    box = at.text_input(key=SIGN_OFF)
    assert (box.label, box.value) == ("Checker's sign-off", "Checked by the relay")
    assert box.help == "What the checker writes before the draft it signs off."

    box.input("Signed by the teacher").run()
    assert not at.exception, [e.value for e in at.exception]
    assert store.load_design().settings["relay"] == {"sign_off": "Signed by the teacher"}
    again = open_page()  # a new session draws it from the stored design
    assert again.text_input(key=SIGN_OFF).value == "Signed by the teacher"

    again.text_input(key=SIGN_OFF).input("").run()  # the relay's model wants some words
    assert any(
        "relay setting sign_off (Checker's sign-off)" in e.value
        and "at least 1 character" in e.value
        for e in again.error
    )
    assert store.load_design().settings["relay"] == {"sign_off": "Signed by the teacher"}


def test_a_run_of_the_fourth_system_uses_its_setting_and_keeps_it(relay, services):
    from graph.kernel.design import Design
    from tests.fourth.settings_model import RelaySettings

    store, service = services
    design = Design(system="relay", settings={"relay": {"sign_off": "Signed by the teacher"}})
    run_id = service.start(QUESTION, design)
    record = wait_status(store, run_id, "done")
    assert record.final_answer == (
        "Signed by the teacher: A first draft from the relay's own rules, for: " + QUESTION
    )
    kept = Design.model_validate(store.run(run_id).design)  # as the run recorded it
    assert kept.settings_of(RelaySettings).sign_off == "Signed by the teacher"
    assert store.run(run_id).counts == {"steps": 2}


def test_without_the_registry_line_the_system_is_unknown(home):
    assert "relay" not in systems()
    with pytest.raises(ValueError, match="unknown system 'relay'"):
        from graph.kernel.design import Design

        Design(system="relay")
