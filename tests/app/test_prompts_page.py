"""The Prompts page: a live preview, errors named inline, versions kept, diffed, activated."""

from graph.prompts import default_text
from tests.app.support import open_page, texts

PLANNER = "plan_execute/planner"
EDITOR = f"prompts:editor:{PLANNER}"


def _preview(at) -> str:
    """The rendered prompt (the other code blocks are diffs)."""
    return next(c.value for c in at.code if c.language != "diff")


def _preview_changes(at) -> str:
    return next(c.value for c in at.code if c.language == "diff")


def test_editor_starts_with_the_shipped_planner_prompt_and_previews_it_filled_in(home):
    at = open_page("app_pages/prompts.py")
    assert at.text_area(key=EDITOR).value == default_text(PLANNER)
    preview = _preview(at)
    assert "{agent_list}" not in preview
    assert "- data_researcher:" in preview  # the agent list filled in
    assert "Which stock in the database grew the most" in preview  # the sample question


def test_preview_changes_as_the_template_is_edited(home):
    at = open_page("app_pages/prompts.py")
    before = _preview(at)
    at.text_area(key=EDITOR).input(default_text(PLANNER) + "\nAlways answer in haiku.\n").run()
    after = _preview(at)
    assert after != before and "Always answer in haiku." in after
    assert _preview_changes(at).splitlines() == ["+", "+Always answer in haiku."]


def test_unknown_placeholder_is_named_inline_and_cannot_be_saved(home, services):
    store, _ = services
    at = open_page("app_pages/prompts.py")
    at.text_area(key=EDITOR).input(default_text(PLANNER) + "\n{user_qeury}\n").run()
    assert any("{user_qeury}" in e.value and "unknown placeholder" in e.value for e in at.error)
    assert next(b for b in at.button if b.label == "Save version").disabled
    assert store.prompt_versions(PLANNER) == []


def test_missing_required_placeholder_is_named(home):
    at = open_page("app_pages/prompts.py")
    at.text_area(key=EDITOR).input("Plan it.\n{agent_list}\n{replan_section}\n").run()
    assert any("missing placeholder {user_query}" in e.value for e in at.error)


def test_saved_version_is_listed_with_its_time_and_becomes_active(home, services):
    store, _ = services
    at = open_page("app_pages/prompts.py")
    at.text_area(key=EDITOR).input(default_text(PLANNER) + "\nKeep plans short.\n").run()
    at.text_input(key=f"prompts:label:{PLANNER}").input("short plans").run()
    next(b for b in at.button if b.label == "Save version").click().run()
    listed = at.table[0].value
    assert list(listed["Version"]) == ["short plans"]
    assert listed["Saved at"][0].startswith("20")
    assert list(listed["Active"]) == ["active"]
    assert store.active_prompt_texts()[PLANNER].endswith("Keep plans short.\n")
    assert "Saved version “short plans” and made it active." in texts(at)


def test_an_older_version_can_be_made_active_and_reset_goes_back_to_the_default(home, services):
    store, _ = services
    first = store.save_prompt_version(PLANNER, "first", default_text(PLANNER) + "\nOne.\n")
    second = store.save_prompt_version(PLANNER, "second", default_text(PLANNER) + "\nTwo.\n")
    store.set_active_prompt(PLANNER, second.id)
    at = open_page("app_pages/prompts.py")
    assert at.text_area(key=EDITOR).value.endswith("Two.\n")
    next(s for s in at.selectbox if s.label == "Version").set_value(first.id).run()
    next(b for b in at.button if b.label == "Make active").click().run()
    assert store.active_prompts()[PLANNER].id == first.id
    assert at.text_area(key=EDITOR).value.endswith("One.\n")

    next(b for b in at.button if b.label == "Reset to shipped default").click().run()
    assert PLANNER not in store.active_prompts()
    assert at.text_area(key=EDITOR).value == default_text(PLANNER)
    assert "Active: **the shipped default**" in texts(at)


def test_diff_shows_what_the_edit_changed_against_the_default(home):
    at = open_page("app_pages/prompts.py")
    assert "The two texts are identical." in texts(at)
    at.text_area(key=EDITOR).input(default_text(PLANNER) + "Be brief.\n").run()
    diff = [c.value for c in at.code if c.language == "diff"][-1]  # the compare section
    assert "+Be brief." in diff and "--- the shipped default" in diff


def test_preview_for_a_step_of_a_past_run_uses_that_runs_state(home, services):
    from graph.kernel.design import Design

    _, service = services
    question = "How did Tesla's stock do in 2008?"
    run_id = service.start(question, Design())
    service.wait(run_id, timeout=60)
    at = open_page("app_pages/prompts.py")
    assert "Which stock in the database" in _preview(at)  # the sample state
    next(s for s in at.selectbox if s.label == "Filled in for").set_value(run_id).run()
    state = next(s for s in at.selectbox if s.label == "State")
    assert state.options[state.index].startswith("step 1, before planner")
    assert question in _preview(at) and "Which stock in the database" not in _preview(at)

    executor = "plan_execute/executor"
    at.selectbox[0].set_value(executor).run()
    state = next(s for s in at.selectbox if s.label == "State")
    assert "before executor" in state.options[state.index]
    assert "How did Tesla" in _preview(at)
