"""The Design page's guardrail switches and hooks editor (docs/systems/conversations.md), and the guardrail's
classifier prompt on the Prompts page."""

import json

import pytest

from graph.kernel.design import Design, DesignError, export_design
from graph.kernel.hooks import HookRule
from tests.app.support import graph_dots, open_page, texts
from ui.design_io import import_design_file


def _add_hook(at, event: str, node: str, target: str, resume: bool = False):
    at.selectbox(key="design:hook-event").set_value(event).run()
    if event != "before_run":
        at.selectbox(key="design:hook-node").set_value(node).run()
    at.text_input(key="design:hook-target").input(target).run()
    at.toggle(key="design:hook-resume").set_value(resume).run()
    at.button(key="design:hook-add").click().run()
    return at


def test_the_guardrail_switch_is_saved_with_the_design_and_drawn_in_the_graph(home, services):
    store, _ = services
    at = open_page()
    assert at.toggle(key="design:guardrail").value is False
    assert at.toggle(key="design:guardrail-classifier").disabled
    assert "guardrail" not in graph_dots(at)[0]

    at.toggle(key="design:guardrail").set_value(True).run()
    assert store.load_design().guardrail is True
    dot = graph_dots(at)[0]
    assert 'guardrail [label=guardrail fillcolor="#e0f2f1"' in dot
    assert "__start__ -> guardrail [style=dashed]" in dot  # START routes each message
    assert "__start__ -> planner [style=dashed]" in dot
    assert "guardrail -> planner [style=dashed]" in dot
    assert not at.toggle(key="design:guardrail-classifier").disabled
    assert "the offline scripted model this classifier is rule-based" in texts(at)

    at.toggle(key="design:guardrail-classifier").set_value(True).run()
    assert store.load_design().guardrail_classifier is True
    again = open_page()  # a reload: a new session reads the saved design
    assert again.toggle(key="design:guardrail").value is True
    assert again.toggle(key="design:guardrail-classifier").value is True


def test_a_hook_with_an_invalid_target_shows_the_engines_error_and_is_not_saved(home, services):
    store, _ = services
    at = _add_hook(open_page(), "after", "planner", "nowhere")
    errors = [e.value for e in at.error]
    assert any(
        "A hook cannot go to 'nowhere': no such node or agent" in e
        and "executor" in e
        and "agents: plan_execute" in e
        for e in errors
    ), errors
    assert (store.load_design() or Design()).hooks == []
    assert at.text_input(key="design:hook-target").value == "nowhere"  # the input is kept

    _add_hook(at, "after", "planner", "executor", resume=True)
    assert any("resume must name an agent" in e.value for e in at.error)
    assert (store.load_design() or Design()).hooks == []


def test_a_valid_hook_is_saved_listed_and_removable(home, services):
    store, _ = services
    at = _add_hook(open_page(), "after", "executor", "planner")
    assert store.load_design().hooks == [HookRule(event="after", node="executor", target="planner")]
    assert "Hook added: after:executor->planner." in [s.value for s in at.success]
    table = at.table[-1].value
    assert list(table["Target"]) == ["planner"] and list(table["Node"]) == ["executor"]

    at.button(key="design:hook-remove-button").click().run()
    assert (store.load_design() or Design()).hooks == []


def test_the_guardrail_cannot_go_off_while_a_hook_needs_it(home, services):
    store, _ = services
    at = open_page()
    at.toggle(key="design:guardrail").set_value(True).run()
    _add_hook(at, "after", "planner", "guardrail")
    assert store.load_design().hooks[0].target == "guardrail"
    at.toggle(key="design:guardrail").set_value(False).run()
    assert store.load_design().guardrail is True
    assert at.toggle(key="design:guardrail").value is True  # the switch shows what is saved
    assert any(
        "The guardrail was not switched off" in e.value and "'guardrail'" in e.value
        for e in at.error
    )


def test_a_fallback_hook_does_not_draw_langgraphs_internal_error_handler(home, services):
    store, _ = services
    store.save_design(Design(hooks=[HookRule(event="fallback", target="synthesizer")]))
    at = open_page()
    dot = graph_dots(at)[0]
    assert "synthesizer" in dot and "__default_error_handler__" not in dot


def test_the_injection_patterns_file_is_shown_with_its_path(home):
    at = open_page()
    shown = texts(at)
    assert "prompts/guardrail/injection_patterns.txt" in shown
    assert "ignore (all |any |the )?(previous|prior|above|earlier)" in shown


def test_importing_a_design_whose_hook_names_no_node_is_refused_with_the_reason(home, services):
    store, _ = services
    data = export_design(Design(hooks=[HookRule(event="after", node="planner", target="nowhere")]))
    with pytest.raises(DesignError, match="no such node or agent"):
        import_design_file(store, json.dumps(data).encode())
    assert store.load_design() is None


def test_the_guardrail_classifier_prompt_is_listed_previewed_and_saved_like_the_others(
    home, services
):
    store, _ = services
    at = open_page("app_pages/prompts.py")
    prompt = at.selectbox[0]
    assert any(o.startswith("classifier — Guardrail: the model classifier") for o in prompt.options)
    prompt.set_value("guardrail/classifier").run()
    editor = at.text_area(key="prompts:editor:guardrail/classifier")
    assert editor.value.startswith("You are the guardrail")
    preview = [c.value for c in at.code if "The agents that are switched on:" in c.value]
    assert preview and "- web_researcher: " in preview[0]
    assert "How did IBM's stock do in 2008?" in preview[0]  # the sample message
    assert "{message}" not in preview[0]

    editor.input(
        editor.value.replace("You are the guardrail", "You are the strict guardrail")
    ).run()
    next(b for b in at.button if b.label == "Save version").click().run()
    assert store.active_prompts()["guardrail/classifier"].text.startswith(
        "You are the strict guardrail"
    )
    assert store.active_prompt_texts()["guardrail/classifier"].startswith("You are the strict")
