"""The Design page's own agents (issue 30.1), through Streamlit's AppTest: *New agent*
creates one (a bad name refused with its reason, nothing saved), it is ticked and drawn (in
plan_execute and in supervisor_bus), and a design whose agent was deleted says so."""

from graph.agents.user_agents import BUILTIN_PREFIX
from graph.kernel.design import Design
from tests.app.support import graph_dots, open_page, texts
from tests.user_agent_support import clock, clock_design

NEW = "user_agent:new"


def _create(at, name: str, description: str = "Searches the documents for facts."):
    at.text_input(key=f"{NEW}:name").set_value(name)
    at.text_area(key=f"{NEW}:description").set_value(description)
    at.multiselect(key=f"{NEW}:tools").set_value([f"{BUILTIN_PREFIX}search_knowledge_base"])
    next(b for b in at.button if b.label == "Create agent").click().run()


def test_a_new_agent_is_created_ticked_and_drawn(home, services):
    store, _ = services
    at = open_page()
    _create(at, "finder")
    assert [a.name for a in store.user_agents.all()] == ["finder"]
    assert "finder" not in graph_dots(at)[0]
    at.checkbox(key="agent:finder").check().run()
    assert "finder" in graph_dots(at)[0]
    assert [a.name for a in store.load_design().user_agents] == ["finder"]


def test_a_bad_or_built_in_name_is_refused_with_its_reason(home, services):
    store, _ = services
    at = open_page()
    _create(at, "Bad Name")
    assert "not a usable agent name" in texts(at)
    _create(at, "synthesizer")
    assert "built-in agent or node" in texts(at)
    assert store.user_agents.all() == []


def test_a_design_whose_agent_was_deleted_says_so(home, services):
    store, _ = services
    store.save_design(clock_design())  # clock ticked, but not (or no longer) defined here
    at = open_page()
    assert "which was deleted: it is no longer ticked" in texts(at)
    assert "clock" not in store.load_design().enabled_agents


def test_on_supervisor_bus_an_agent_is_ticked_drawn_beside_the_workers_and_goes_back_to_the_supervisor(
    home, services
):
    store, _ = services
    store.save_design(Design(system="supervisor_bus"))
    store.user_agents.add(clock())
    at = open_page()
    assert "back to the supervisor" in texts(at)
    assert "clock" not in graph_dots(at)[0]
    at.checkbox(key="agent:clock").check().run()
    dot = graph_dots(at)[0]
    assert "supervisor -> clock" in dot and "clock -> supervisor" in dot
    saved = store.load_design()
    assert (saved.system, [a.name for a in saved.user_agents]) == ("supervisor_bus", ["clock"])
    assert "Unknown agents" not in texts(at)
