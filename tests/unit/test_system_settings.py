"""Each system's own settings: a design keeps them by system, checked by the system's model;
a design of the old shape (plan and bus fields at its top) still loads; a bad value is
refused naming the system and the field."""

from __future__ import annotations

import json
import re

import pytest

import graph.registry  # noqa: F401  (hosts the shipped systems)
from graph.kernel.design import Design, DesignError, export_design, import_design
from graph.kernel.system import SystemSettings, systems
from graph.plan_execute.settings_model import PlanSettings
from graph.settings import get_settings
from graph.supervisor_bus.settings_model import BusSettings

# A bus design as the store, a design file or a run's record kept it before systems owned
# their settings: every system's fields at the top, whichever system it was.
OLD_SHAPE = {
    "system": "supervisor_bus",
    "enabled_agents": ["researcher", "writer"],
    "max_replans": 2,
    "recursion_limit": 60,
    "prompts": {},
    "approvals": {},
    "pace_s": 0.0,
    "escalate_at_cap": False,
    "approval_timeout_s": 600.0,
    "approvals_by": "human",
    "model": None,
    "timeout_action": "reject",
    "bus_timeout_s": 12.5,
    "guardrail": False,
    "guardrail_classifier": False,
    "hooks": [],
}


def test_a_design_of_the_old_shape_loads_with_each_field_in_its_systems_settings():
    design = Design.model_validate(OLD_SHAPE)
    assert design.settings == {
        "supervisor_bus": {"bus_timeout_s": 12.5},
        "plan_execute": {"max_replans": 2, "escalate_at_cap": False},
    }
    assert design.settings_of(BusSettings).bus_timeout_s == 12.5
    assert design.settings_of(PlanSettings) == PlanSettings(max_replans=2, escalate_at_cap=False)
    dumped = design.model_dump()
    assert not {"max_replans", "escalate_at_cap", "bus_timeout_s"} & dumped.keys()
    # stored as JSON, and as an exported design file
    assert Design.model_validate_json(json.dumps(OLD_SHAPE)) == design
    assert import_design({"format": "stepwise-design", "version": 1, "design": OLD_SHAPE}) == design


def test_a_setting_given_in_its_new_place_wins_over_an_old_field():
    both = {**OLD_SHAPE, "settings": {"supervisor_bus": {"bus_timeout_s": 40}}}
    assert Design.model_validate(both).settings_of(BusSettings).bus_timeout_s == 40.0


@pytest.mark.parametrize("name", ["plan_execute", "supervisor_bus", "hierarchical_teams"])
def test_each_systems_settings_round_trip_through_the_store_and_a_design_file(name):
    model = systems()[name].settings_model
    design = Design(system=name)
    own = design.settings_of(model)
    assert design.settings == {name: own.model_dump(mode="json")}  # its defaults, filled in
    again = Design.model_validate_json(design.model_dump_json())
    assert again == design and again.settings_of(model) == own
    assert import_design(export_design(design)) == design


def test_a_system_with_no_settings_has_the_empty_model():
    teams = systems()["hierarchical_teams"]
    assert teams.settings_model is SystemSettings
    assert Design(system="hierarchical_teams").settings == {"hierarchical_teams": {}}


def test_defaults_come_from_the_environment_settings(monkeypatch):
    monkeypatch.setenv("STEPWISE_MAX_REPLANS", "5")
    monkeypatch.setenv("STEPWISE_BUS_TIMEOUT", "45")
    get_settings.cache_clear()
    try:
        assert Design().settings_of(PlanSettings).max_replans == 5
        assert Design(system="supervisor_bus").settings_of(BusSettings).bus_timeout_s == 45.0
    finally:
        get_settings.cache_clear()


BAD = [
    (
        {"max_replans": -1},
        "plan_execute setting max_replans (Max replans per step): "
        "Input should be greater than or equal to 0",
    ),
    (
        {"settings": {"supervisor_bus": {"bus_timeout_s": "soon"}}},
        "supervisor_bus setting bus_timeout_s (Request timeout, seconds): "
        "Input should be a valid number",
    ),
    (
        {"settings": {"plan_execute": {"max_replan": 1}}},
        "plan_execute has no setting 'max_replan' (its settings: max_replans, escalate_at_cap).",
    ),
]


@pytest.mark.parametrize("data, words", BAD, ids=["old field", "new place", "misspelt"])
def test_a_bad_setting_is_refused_naming_the_system_and_the_field(data, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        Design.model_validate(data)
    with pytest.raises(DesignError) as refused:
        import_design({"format": "stepwise-design", "design": data})
    assert str(refused.value).startswith(f"settings: {words}")


def test_a_bad_value_put_in_without_validation_is_named_when_read():
    design = Design().model_copy(update={"settings": {"plan_execute": {"max_replans": 99}}})
    with pytest.raises(DesignError, match=r"plan_execute setting max_replans .*less than or equal"):
        design.settings_of(PlanSettings)
