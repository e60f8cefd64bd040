"""A system's offline rules come with the system: registering it plays them on the
scripted model, unregistering stops them, and the shipped ones keep their order."""

from langchain_core.messages import HumanMessage

from graph.hierarchical_teams import offline_rules as teams_rules
from graph.kernel.system import register, unregister
from graph.models.scripted import ScriptedChatModel, checks
from graph.models.scripted import rules as scripted_rules
from graph.plan_execute import offline_rules as plan_rules
from graph.supervisor_bus import offline_rules as bus_rules
from tests.fourth import SYSTEM as RELAY
from tests.fourth.offline_rules import draft_request


def _reply(text: str) -> str:
    reply = ScriptedChatModel().invoke([HumanMessage(content=text)]).content
    assert isinstance(reply, str)
    return reply


def test_a_registered_system_is_played_by_its_own_rules_and_no_longer_once_unregistered():
    asked = draft_request("Say hello to the relay.")
    assert "have none for this request" in _reply(asked)
    register(RELAY)
    try:
        assert _reply(asked) == (
            "A first draft from the relay's own rules, for: Say hello to the relay."
        )
        assert scripted_rules.tried()[1] is RELAY.offline_rules  # tried before the shipped
    finally:
        unregister(RELAY.name)
    assert "have none for this request" in _reply(asked)


def test_the_shipped_rules_are_tried_checks_then_teams_bus_plan():
    # plan_execute's rules are the broadest ("Findings" in any prompt): they come last.
    assert scripted_rules.tried() == (checks, teams_rules, bus_rules, plan_rules)
    tools = scripted_rules.tool_rules()
    assert tools["http_get"] is teams_rules.TOOL_RULES["http_get"]
    assert set(plan_rules.TOOL_RULES) <= set(tools)
