"""The Design page: agents on and off, the graph redrawn, warnings, the design kept."""

import json

from graph.kernel.design import Design, export_design, import_design
from graph.plan_execute.agents import AGENTS
from graph.plan_execute.settings_model import PlanSettings
from graph.prompts import default_text
from tests.app.support import graph_dots, open_page, texts

MAX_REPLANS, ESCALATE = "setting:plan_execute:max_replans", "setting:plan_execute:escalate_at_cap"


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
    at.number_input(key=MAX_REPLANS).set_value(1).run()
    saved = store.load_design()
    assert "chart_generator" not in saved.enabled_agents
    assert saved.settings_of(PlanSettings).max_replans == 1

    again = open_page()  # a browser reload is a new session
    assert again.checkbox(key="agent:chart_generator").value is False
    assert again.number_input(key=MAX_REPLANS).value == 1
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


def test_approval_policies_default_to_always_for_side_effects_and_are_saved(home, services):
    store, _ = services
    at = open_page()
    assert at.selectbox(key="approval:report_writer").value == "always"
    assert at.selectbox(key="approval:web_researcher").value == "planner"
    assert at.toggle(key=ESCALATE).value is True
    assert at.number_input(key="approval_timeout_s").value == 600

    at.selectbox(key="approval:web_researcher").set_value("always").run()
    at.selectbox(key="approval:report_writer").set_value("never").run()
    at.toggle(key=ESCALATE).set_value(False).run()
    at.number_input(key="approval_timeout_s").set_value(30).run()
    at.radio(key="timeout_action:plan_execute").set_value("skip").run()
    saved = store.load_design()
    assert saved.approvals == {"web_researcher": "always", "report_writer": "never"}
    escalates = saved.settings_of(PlanSettings).escalate_at_cap
    assert (escalates, saved.approval_timeout_s, saved.timeout_action) == (
        False,
        30,
        "skip",
    )
    again = open_page()
    assert again.selectbox(key="approval:report_writer").value == "never"
    assert again.radio(key="timeout_action:plan_execute").value == "skip"


def _export(at, downloads) -> dict:
    (button,) = [b for b in at.get("download_button") if b.label == "Export design JSON"]
    return json.loads(downloads(button))


def test_the_exported_design_holds_agents_settings_and_active_prompts(home, services, downloads):
    store, _ = services
    version = store.save_prompt_version(
        "plan_execute/planner", "short", default_text("plan_execute/planner") + "\nBe brief.\n"
    )
    store.set_active_prompt("plan_execute/planner", version.id)
    at = open_page()
    at.checkbox(key="agent:chart_generator").uncheck().run()
    at.selectbox(key="approval:data_researcher").set_value("always").run()
    exported = _export(at, downloads)
    assert exported["format"] == "stepwise-design"
    design = exported["design"]
    assert "chart_generator" not in design["enabled_agents"]
    assert design["approvals"] == {"data_researcher": "always"}
    assert design["prompts"]["plan_execute/planner"].endswith("Be brief.\n")
    assert import_design(exported).enabled_agents == design["enabled_agents"]


def test_importing_a_design_file_makes_it_the_saved_design_and_redraws(home, services):
    store, _ = services
    planner = default_text("plan_execute/planner") + "\nImported rule.\n"
    document = export_design(
        Design(
            enabled_agents=["web_researcher", "synthesizer"],
            max_replans=1,
            approvals={"synthesizer": "always"},
            timeout_action="skip",
            prompts={"plan_execute/planner": planner},
        )
    )
    at = open_page()
    at.file_uploader(key="design:import").upload(
        "team.json", json.dumps(document).encode(), "application/json"
    )
    at.run()
    assert any("Imported team.json: it is now the saved design" in s.value for s in at.success)
    saved = store.load_design()
    assert saved.enabled_agents == ["web_researcher", "synthesizer"]
    assert saved.approvals == {"synthesizer": "always"} and saved.timeout_action == "skip"
    assert store.active_prompt_texts()["plan_execute/planner"] == planner
    assert at.checkbox(key="agent:data_researcher").value is False
    assert at.number_input(key=MAX_REPLANS).value == 1
    assert at.selectbox(key="approval:synthesizer").value == "always"
    assert "data_researcher" not in graph_dots(at)[0]


def test_a_bad_design_file_is_refused_with_the_reason_and_nothing_changes(home, services):
    store, _ = services
    at = open_page()
    before = store.load_design()
    bad = {"format": "stepwise-design", "design": {"enabled_agents": ["cortex_researcher"]}}
    at.file_uploader(key="design:import").upload("bad.json", json.dumps(bad).encode())
    at.run()
    (error,) = at.error
    assert error.value.startswith(
        "bad.json was not imported: design.enabled_agents: unknown agent(s): cortex_researcher"
    )
    assert store.load_design() == before

    at.file_uploader(key="design:import").clear().upload("notes.json", b"{not json")
    at.run()
    assert any(
        "notes.json was not imported: The file is not JSON text" in e.value for e in at.error
    )
    other = {"format": "something-else"}
    at.file_uploader(key="design:import").clear().upload("other.json", json.dumps(other).encode())
    at.run()
    assert any("Not a Stepwise design file" in e.value for e in at.error)
    assert not at.exception


def test_an_agent_unticked_stays_unticked_after_switching_system_and_back(home, services):
    """Issue #28: switching to another system and back re-ticked every agent, and the Run
    page then used an agent the user had turned off."""
    store, _ = services
    at = open_page()
    at.checkbox(key="agent:report_writer").uncheck().run()
    assert "report_writer" not in store.load_design().enabled_agents
    at.radio(key="design:system").set_value("supervisor_bus").run()
    assert store.load_design().system == "supervisor_bus"
    at.radio(key="design:system").set_value("plan_execute").run()
    assert not at.exception, [e.value for e in at.exception]
    saved = store.load_design()
    assert saved.system == "plan_execute" and "report_writer" not in saved.enabled_agents
    assert not at.checkbox(key="agent:report_writer").value
    assert at.checkbox(key="agent:data_researcher").value


def test_the_size_advice_says_how_the_chosen_system_stands_to_it(home, services):
    """Issue #28: Hierarchical teams showed "4 agents: a supervisor with a message bus
    fits…" as if about another system, with nothing on the teams themselves."""
    at = open_page()
    at.radio(key="design:system").set_value("hierarchical_teams").run()
    at.checkbox(key="agent:site_requester").uncheck().run()
    advice = next(i.value for i in at.info if "Coordination by size" in i.value)
    assert "3 agents: a supervisor with a message bus fits" in advice
    assert "The teams here add a layer of team supervisors" in advice
    at.radio(key="design:system").set_value("supervisor_bus").run()
    advice = next(i.value for i in at.info if "Coordination by size" in i.value)
    assert advice.rstrip().endswith("This system is that pattern.")
