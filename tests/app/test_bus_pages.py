"""supervisor_bus in the app: chosen on the Design page, watched on the Run page, and the
teaching scenario (shared blackboard vs. bus) shown from the Run page."""

from graph.supervisor_bus.agents import AGENTS as BUS_AGENTS
from tests.app.support import graph_dots, open_page, texts


def test_choosing_the_bus_system_saves_its_design_and_draws_the_supervisor_hub(home, services):
    store, _ = services
    at = open_page()
    at.radio(key="design:system").set_value("supervisor_bus").run()
    assert not at.exception, [e.value for e in at.exception]
    saved = store.load_design()
    assert saved.system == "supervisor_bus"
    assert saved.enabled_agents == list(BUS_AGENTS)
    assert [c.label for c in at.checkbox] == list(BUS_AGENTS)
    dot = graph_dots(at)[0]
    assert "supervisor" in dot and "researcher" in dot and "planner" not in dot
    shown = texts(at)
    assert "a supervisor with a message bus fits" in shown  # coordination by size, 3 agents
    assert "Request timeout, seconds" in [n.label for n in at.number_input]
    assert "Max replans per step" not in [n.label for n in at.number_input]

    at.checkbox(key="agent:reviewer").uncheck().run()
    assert store.load_design().enabled_agents == ["researcher", "writer"]
    assert "2 agents: a direct handoff is enough" in texts(at)
    assert "reviewer" not in graph_dots(at)[0]


def test_the_bus_timeout_is_saved_in_the_bus_settings_and_kept_across_a_switch(home, services):
    from graph.plan_execute.settings_model import PlanSettings
    from graph.supervisor_bus.settings_model import BusSettings

    store, _ = services
    at = open_page()
    at.number_input(key="setting:plan_execute:max_replans").set_value(1).run()
    at.radio(key="design:system").set_value("supervisor_bus").run()
    timeout = at.number_input(key="setting:supervisor_bus:bus_timeout_s")
    assert timeout.label == "Request timeout, seconds" and timeout.min == 1.0
    timeout.set_value(45.0).run()
    saved = store.load_design()
    assert saved.settings_of(BusSettings).bus_timeout_s == 45.0
    assert "requests time out after 45 s" in texts(open_page("app_pages/run.py"))

    at.radio(key="design:system").set_value("plan_execute").run()
    assert at.number_input(key="setting:plan_execute:max_replans").value == 1
    at.radio(key="design:system").set_value("supervisor_bus").run()
    assert at.number_input(key="setting:supervisor_bus:bus_timeout_s").value == 45.0
    assert store.load_design().settings_of(PlanSettings).max_replans == 1


def test_prompts_page_lists_the_bus_prompts_with_a_preview_for_a_bus_design(home, services):
    from graph.kernel.design import Design

    store, _ = services
    store.save_design(Design(system="supervisor_bus"))
    at = open_page("app_pages/prompts.py")
    options = at.selectbox[0].options
    # the bus's own prompts, the guardrail's classifier and the model adapter's two
    # (listed for every system)
    assert options and all(
        "supervisor" in o
        or "researcher" in o
        or "writer" in o
        or "reviewer" in o
        or "request" in o
        or "repair" in o
        or o.startswith(("classifier — Guardrail", "tool_calling — ", "json_shape — "))
        for o in options
    )
    assert not any(o.startswith(("planner", "executor")) for o in options)
    assert any(
        "supervisor" in str(c.value) for c in at.code
    )  # the preview of the supervisor prompt


def _bus_run(at, question: str) -> str:
    at.text_area(key="run:question").input(question).run()
    next(b for b in at.button if b.label == "Run").click().run()
    return at.query_params["run"]


def test_a_bus_run_shows_the_bus_registry_dead_letters_and_decisions(home, services):
    from graph.kernel.design import Design
    from tests.app.support import wait_status

    store, _ = services
    store.save_design(Design(system="supervisor_bus", approvals={"writer": "never"}))
    at = open_page("app_pages/run.py")
    assert [b.label for b in at.button][:3] == [
        "What caused the dot-com crash?",
        "What happened to Apple when it launched the iPhone?",
        "Why did Google go public in 2004?",
    ]
    run_id = _bus_run(at, "What caused the dot-com crash?")
    wait_status(store, run_id, "done")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    shown = texts(at)
    assert "Steps" not in [h.value for h in at.subheader]
    headers = [h.value for h in at.subheader]
    assert "Message bus" in headers  # beside the graph; the others folded below (issue 28)
    folded = [e.label for e in at.expander]
    for part in ("Outstanding requests (0)", "Dead letters (0)", "Supervisor's decisions (4)"):
        assert part in folded
    bus = at.table[0].value
    assert list(bus.columns) == [
        "Id",
        "From",
        "To",
        "Type",
        "Payload",
        "Consumed by",
        "Time to answer",
    ]
    first = bus.iloc[0]
    assert (first["From"], first["To"], first["Type"]) == ("user", "supervisor", "request")
    assert first["Consumed by"] == "supervisor"
    sent = bus[(bus["From"] == "supervisor") & (bus["To"] == "researcher")].iloc[0]
    assert sent["Type"] == "request" and sent["Time to answer"].endswith(" s")
    assert ((bus["From"] == "researcher") & (bus["Type"] == "result")).any()
    assert "no request timed out" in shown
    decisions = next(t.value for t in at.table if "Next" in t.value.columns)
    assert list(decisions["Next"]) == ["researcher", "writer", "reviewer", "FINISH"]
    assert "dot-com" in texts(at)  # the final answer


def test_the_teaching_scenario_shows_the_error_the_lost_write_and_the_bus_losing_nothing(home):
    at = open_page("app_pages/run.py")
    next(b for b in at.button if b.key == "lesson:supervisor_bus:run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("InvalidUpdateError" in e.value for e in at.error)
    shown = texts(at)
    assert "The researcher's findings never reached the answer." in shown
    assert "0 lost" in shown
    board = next(t.value for t in at.table if "Lost" in t.value.columns)
    assert board["Lost"].str.startswith("LOST").any()
    assert (board[board["Agent"] == "researcher"]["Lost"].str.startswith("LOST")).all()


def _card_script():
    import time

    from ui import approvals

    approvals.approval_card(
        {
            "id": "i1",
            "run_id": "r1",
            "kind": "escalation",
            "step": 3,
            "agent": "writer",
            "query": "Write the answer",
            "message_id": "m6-abc",
            "asked_at": time.time(),
            "reason": "writer did not answer request m6-abc within 0.5 s (waited 0.7 s).",
        },
        key="card",
        flash_key="flash",
        design={"system": "supervisor_bus"},
    )


def test_a_bus_escalation_card_says_the_request_timed_out_and_how_to_reassign(home):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_card_script, default_timeout=30).run()
    assert not at.exception, [e.value for e in at.exception]
    shown = texts(at)
    assert "escalation: the request timed out" in shown and "request m6-abc" in shown
    assert "replan cap" not in shown
    assert "reassign" in shown and "dead letter" in shown
    assert [b.label for b in at.button] == [
        "Approve",
        "Approve edited query",
        "Reject",
        "Skip",
        "Retry",
    ]


def test_the_history_page_shows_a_finished_bus_run_with_its_bus_table(home, services):
    from graph.kernel.design import Design
    from tests.app.support import wait_status

    store, service = services
    run_id = service.start(
        "Why did Google go public in 2004?",
        Design(system="supervisor_bus", approvals={"writer": "never"}),
    )
    wait_status(store, run_id, "done")
    at = open_page("app_pages/history.py", run=run_id)
    headers = [h.value for h in at.subheader]
    assert "Message bus" in headers and "Plan history" not in headers
    bus = next(t.value for t in at.table if "Consumed by" in t.value.columns)
    assert (
        (bus["From"] == "supervisor") & (bus["To"] == "writer") & (bus["Type"] == "request")
    ).any()
    assert "3 request(s) to agents" in texts(at)
    assert "first plan" not in texts(at)  # plan_execute's wording has no place here


def test_a_writers_markdown_title_is_not_larger_than_the_pages_headings(home, services):
    from graph.kernel.design import Design
    from tests.app.support import wait_status

    store, _ = services
    store.save_design(Design(system="supervisor_bus", approvals={"writer": "never"}))
    at = open_page("app_pages/run.py")
    run_id = _bus_run(at, "What caused the dot-com crash?")
    wait_status(store, run_id, "done")
    at.run()
    shown = [str(m.value) for m in at.markdown]
    drafts = [m for m in shown if "dot-com" in m.lower() and "#" in m]
    assert drafts, "the writer's Markdown is on the page"
    for text in drafts:
        for line in text.splitlines():
            assert not line.startswith(("# ", "## ", "### ")), line


def test_a_bus_run_with_an_agent_of_your_own_shows_its_request_answer_and_node(home, services):
    from graph.agents.user_agents import UserAgent
    from graph.kernel.design import Design
    from tests.app.support import wait_status

    store, _ = services
    reader = UserAgent(
        name="crash_reader",
        description="Reads the documents about a market crash and reports its causes.",
        tools=("builtin:search_knowledge_base",),
    )
    store.user_agents.add(reader)
    store.save_design(
        Design(
            system="supervisor_bus",
            user_agents=[reader],
            enabled_agents=["researcher", "writer", "crash_reader"],
            approvals={"writer": "never"},
        )
    )
    at = open_page("app_pages/run.py")
    run_id = _bus_run(at, "What caused the dot-com crash?")
    wait_status(store, run_id, "done")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    decisions = next(t.value for t in at.table if "Next" in t.value.columns)
    assert list(decisions["Next"]) == ["crash_reader", "researcher", "writer", "FINISH"]
    bus = at.table[0].value
    asked = bus[(bus["To"] == "crash_reader") & (bus["Type"] == "request")].iloc[0]
    assert asked["Consumed by"] == "crash_reader"
    assert ((bus["From"] == "crash_reader") & (bus["Type"] == "result")).any()
    assert any("crash_reader -> supervisor" in dot for dot in graph_dots(at))
