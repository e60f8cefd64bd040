"""A user agent's own prompt on the Prompts page and the Design page (issue 30.1), through
Streamlit's AppTest: the library's agent "clock" has its prompt in the Prompt list, previewed
with its tool line from the stored listing (no server started), saved as a version and made
active, and reset to its definition's prompt; the parts of the page that fill a system's
prompt from a run's state say why they do not apply. The Design page's Edit form no longer
edits the prompt: it says where it is versioned, opens it there, and says what comes after
the agent."""

from graph.agents.user_agents import DEFAULT_PROMPT, prompt_name
from graph.tools.mcp_servers import McpToolInfo
from tests.app.support import button, open_page, texts
from tests.user_agent_support import clock, time_server

CLOCK = prompt_name("clock")
EDITOR = f"prompts:editor:{CLOCK}"
TOOL_LINE = "- get_current_time (read-only): a tool of the MCP server “time”."
AFTER_IT = (
    "After it: back to the Executor (plan_execute) or the supervisor (supervisor_bus), "
    "which decides what comes next."
)


def _define_clock(store) -> None:
    store.mcp_servers.add(time_server())
    listed = McpToolInfo("get_current_time", "Now.", {}, {"readOnlyHint": True})
    store.mcp_servers.remember_tools("time", [listed])
    store.user_agents.add(clock())


def _open_clock_prompt():
    at = open_page("app_pages/prompts.py")
    chooser = next(s for s in at.selectbox if s.label == "Prompt")
    assert "Your agent · clock" in chooser.options
    chooser.set_value(CLOCK).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _preview(at) -> str:
    return next(c.value for c in at.code if c.language != "diff")


def test_the_agents_prompt_is_chosen_previewed_saved_made_active_and_reset(home, services):
    store, _ = services
    _define_clock(store)
    at = _open_clock_prompt()
    assert at.text_area(key=EDITOR).value == DEFAULT_PROMPT  # its definition's prompt
    preview = _preview(at)
    assert preview.startswith("You are clock, an agent of a team. Tells the current time")
    assert TOOL_LINE in preview
    said = texts(at)
    assert "Active: **the prompt of its definition**" in said
    assert "not from a run's state" in said and "cannot be tried here" in said
    assert AFTER_IT in said
    assert not [s for s in at.selectbox if s.label in ("Filled in for", "Run", "Checkpoint")]

    first = "You are {name}. Answer in one sentence.\n{tools}"
    at.text_area(key=EDITOR).input(first).run()
    at.text_input(key=f"prompts:label:{CLOCK}").input("one sentence").run()
    at.checkbox(key=f"prompts:activate:{CLOCK}").uncheck().run()
    button(at, "Save version").click().run()
    assert [v.label for v in store.prompt_versions(CLOCK)] == ["one sentence"]
    assert CLOCK not in store.active_prompt_texts()  # saved, not active

    (version,) = store.prompt_versions(CLOCK)
    next(s for s in at.selectbox if s.label == "Version").set_value(version.id).run()
    button(at, "Make active").click().run()
    assert store.active_prompt_texts()[CLOCK] == first
    assert "Runs now use version “one sentence”." in texts(at)
    assert _preview(at) == f"You are clock. Answer in one sentence.\n{TOOL_LINE}"

    at.text_area(key=EDITOR).input("You are {nmae}.").run()
    assert any("unknown placeholder {nmae}" in e.value for e in at.error)
    assert button(at, "Save version").disabled

    button(at, "Reset to its definition's prompt").click().run()
    assert CLOCK not in store.active_prompt_texts()
    assert at.text_area(key=EDITOR).value == DEFAULT_PROMPT
    assert not at.exception


def test_the_edit_form_opens_the_prompt_on_the_prompts_page_and_says_what_comes_after(
    home, services
):
    store, _ = services
    _define_clock(store)
    at = open_page()  # the Design page
    said = texts(at)
    assert "Its prompt is versioned on the Prompts page (“Your agent · clock”)" in said
    assert said.count(AFTER_IT) == 2  # in the New agent form and in clock's Edit form
    keys = [t.key for t in at.text_area]
    assert "user_agent:new:prompt" in keys  # a new agent's first prompt
    assert "user_agent:clock:prompt" not in keys  # its later ones are versions

    at.text_area(key="user_agent:clock:description").set_value(
        "Tells the current time in any timezone."
    )
    button(at, "Save agent").click().run()
    assert store.user_agents.get("clock").prompt == DEFAULT_PROMPT  # kept, not emptied

    button(at, "Open its prompt on the Prompts page").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["prompts:chosen"] == CLOCK
    chooser = next(s for s in at.selectbox if s.label == "Prompt")
    assert chooser.value == CLOCK
    assert at.text_area(key=EDITOR).value == DEFAULT_PROMPT


def test_deleting_an_agent_keeps_its_prompts_versions_and_makes_none_active(home, services):
    store, _ = services
    _define_clock(store)
    version = store.save_prompt_version(CLOCK, "mine", "You are {name}.")
    store.set_active_prompt(CLOCK, version.id)
    at = open_page()
    button(at, "Delete clock").click().run()
    assert store.user_agents.get("clock") is None
    assert [v.label for v in store.prompt_versions(CLOCK)] == ["mine"]
    assert CLOCK not in store.active_prompt_texts()
    assert "Its prompt's saved versions are kept, none active" in texts(at)


def test_a_design_file_carries_the_agents_active_prompt_and_its_import_makes_it_active(
    home, services
):
    import json

    from tests.user_agent_support import clock_design
    from ui.design_io import design_file, import_design_file

    store, _ = services
    _define_clock(store)
    version = store.save_prompt_version(CLOCK, "mine", "You are {name}, briefly.")
    store.set_active_prompt(CLOCK, version.id)
    exported = design_file(store, clock_design())
    assert json.loads(exported)["design"]["prompts"][CLOCK] == "You are {name}, briefly."

    store.set_active_prompt(CLOCK, None)
    _, said = import_design_file(store, exported.encode())
    assert store.active_prompt_texts()[CLOCK] == "You are {name}, briefly."
    assert "clock (version “imported" in said
