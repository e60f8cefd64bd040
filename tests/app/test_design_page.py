"""The Design page: agents on and off, the graph redrawn, warnings, the design kept."""

from graph.plan_execute.agents import AGENTS
from tests.app.support import graph_dots, open_page, texts


def test_every_agent_has_a_checkbox_with_its_catalog_description(home):
    at = open_page()
    assert [c.label for c in at.checkbox] == list(AGENTS)
    assert all(c.value for c in at.checkbox)
    shown = texts(at)
    for spec in AGENTS.values():
        assert spec.description in shown


def test_unticking_an_agent_removes_its_node_from_the_drawn_graph(home):
    at = open_page()
    assert "web_researcher" in graph_dots(at)[0]
    at.checkbox(key="agent:web_researcher").uncheck().run()
    dot = graph_dots(at)[0]
    assert "web_researcher" not in dot
    assert "data_researcher" in dot


def test_design_is_saved_and_found_again_by_a_new_session(home, services):
    store, _ = services
    at = open_page()
    at.checkbox(key="agent:chart_generator").uncheck().run()
    at.number_input(key="max_replans").set_value(1).run()
    saved = store.load_design()
    assert "chart_generator" not in saved.enabled_agents and saved.max_replans == 1

    again = open_page()  # a browser reload is a new session
    assert again.checkbox(key="agent:chart_generator").value is False
    assert again.number_input(key="max_replans").value == 1
    assert "chart_generator" not in graph_dots(again)[0]


def test_a_design_without_synthesizer_warns_but_still_draws(home):
    at = open_page()
    at.checkbox(key="agent:synthesizer").uncheck().run()
    assert any("No synthesizer" in w.value for w in at.warning)
    assert "synthesizer" not in graph_dots(at)[0]
    assert "executor" in graph_dots(at)[0]


def test_model_in_use_is_the_offline_scripted_model_and_the_store_is_named(home):
    at = open_page()
    sidebar = [m.value for m in at.sidebar.markdown]
    assert "**offline scripted model**" in sidebar
    assert any("stepwise.sqlite" in m for m in sidebar)
    assert "**offline scripted model**" in [m.value for m in at.main.markdown]
