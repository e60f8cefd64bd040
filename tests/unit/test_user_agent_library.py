"""The agents defined on the Design page, in the store (issue 30.1): added, edited, deleted;
a design that ticks a deleted one says so and unticks it; an imported design's agents join
the library. Real SQLite store."""

from __future__ import annotations

import pytest

from graph.kernel.design import Design
from graph.service.repositories.user_agents import UserAgentError
from graph.service.user_agent_designs import keep_imported_agents, with_library
from tests.user_agent_support import clock, clock_design


def test_an_agent_is_added_edited_and_deleted_and_its_name_is_checked(store):
    store.user_agents.add(clock())
    with pytest.raises(UserAgentError, match="already an agent named “clock”"):
        store.user_agents.add(clock())
    edited = clock().model_copy(update={"description": "Tells the time anywhere, now."})
    store.user_agents.update(edited)
    assert store.user_agents.get("clock") == edited
    store.user_agents.delete("clock")
    assert store.user_agents.all() == []
    with pytest.raises(UserAgentError, match="no agent named “clock” to edit"):
        store.user_agents.update(edited)


def test_a_design_using_a_deleted_agent_says_so_and_no_longer_ticks_it(store):
    store.user_agents.add(clock())
    design = clock_design()
    store.user_agents.delete("clock")
    fresh, notes = with_library(design, store.user_agents.all())
    assert notes == [
        "This design used the agent “clock”, which was deleted: it is no longer ticked "
        "(define it again with New agent to use it)."
    ]
    assert fresh.enabled_agents == ["web_researcher", "synthesizer"]
    assert fresh.user_agents == []


def test_a_design_takes_the_librarys_edited_definition_of_the_agents_it_ticks(store):
    edited = clock().model_copy(update={"description": "Tells the time anywhere, now."})
    store.user_agents.add(edited)
    fresh, notes = with_library(clock_design(), store.user_agents.all())
    assert notes == [] and fresh.user_agents == [edited]
    unticked, _ = with_library(fresh, store.user_agents.all(), ticked=["synthesizer"])
    assert unticked.user_agents == [] and unticked.enabled_agents == ["synthesizer"]


def test_a_system_that_takes_no_user_agents_keeps_none(store):
    store.user_agents.add(clock())
    fresh, _ = with_library(Design(system="supervisor_bus"), store.user_agents.all())
    assert fresh.user_agents == []


def test_an_imported_designs_agents_join_the_library_and_a_clash_keeps_yours(store):
    assert keep_imported_agents(clock_design(), store.user_agents) == [
        "The agent “clock” was added to your agents."
    ]
    other = clock().model_copy(update={"description": "Something else entirely, really."})
    design = clock_design().model_copy(update={"user_agents": [other]})
    assert "yours was kept" in keep_imported_agents(design, store.user_agents)[0]
    assert store.user_agents.get("clock") == clock()


def test_an_exported_design_file_with_its_agent_passes_the_import_checks(store, settings):
    from graph.kernel.design import export_design
    from graph.service.import_checks import check_design_file

    design, notes = check_design_file(export_design(clock_design()), settings)
    assert design.user_agents == clock_design().user_agents and notes == []
    assert "clock" in design.enabled_agents
