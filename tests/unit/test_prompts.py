"""Prompt templates: placeholder validation, rendering, and edits reaching the model."""

import pytest

from graph.kernel.design import Design
from graph.plan_execute import SYSTEM
from graph.plan_execute.prompts import preview_prompt
from graph.prompts import PromptError, PromptSet, default_text, prompt_names, template_errors
from graph.service.runs import run_question

build_graph = SYSTEM.build_graph

PLANNER = "plan_execute/planner"


def test_every_shipped_prompt_is_valid_and_renders_for_the_sample_state():
    names = prompt_names("plan_execute")
    assert len(names) >= 10
    for name in names:
        assert template_errors(name, default_text(name)) == []
        assert preview_prompt(name, default_text(name)).strip()


def test_an_unknown_placeholder_is_rejected_by_name():
    text = default_text(PLANNER).replace("{agent_list}", "{agent_list} {user_qeury}")
    errors = template_errors(PLANNER, text)
    assert len(errors) == 1 and "unknown placeholder {user_qeury}" in errors[0]


def test_a_missing_required_placeholder_is_rejected_by_name():
    text = default_text(PLANNER).replace('"{user_query}"', "the question")
    assert template_errors(PLANNER, text) == [
        f"{PLANNER}: missing placeholder {{user_query}}, which this prompt must use."
    ]


@pytest.mark.parametrize(
    "bad, says",
    [
        ("{agent_list} {replan_section} {user_query} {", "Single '{'"),
        ("{agent_list} {replan_section} {user_query} }", "Single '}'"),
        ("{agent_list} {replan_section} {user_query} {user_query.upper}", "attribute access"),
        ("{agent_list} {replan_section} {user_query} {}", "empty placeholder"),
    ],
)
def test_malformed_templates_are_rejected_with_a_message(bad, says):
    errors = template_errors(PLANNER, bad)
    assert errors and says in errors[0]


def test_a_prompt_set_with_a_bad_override_cannot_be_built():
    with pytest.raises(PromptError, match=r"unknown placeholder \{oops\}"):
        PromptSet({"plan_execute/executor": default_text("plan_execute/executor") + "{oops}"})
    with pytest.raises(PromptError, match="Unknown prompt"):
        PromptSet({"plan_execute/nonexistent": "hi"})


def test_the_preview_shows_the_edited_text_filled_in():
    text = default_text(PLANNER).replace("You are the **Planner**", "You are PLANNER-V2")
    preview = preview_prompt(PLANNER, text)
    assert preview.startswith("You are PLANNER-V2")
    assert "Which stock in the database grew the most" in preview
    assert "{agent_list}" not in preview and "- web_researcher:" in preview


def test_an_edited_planner_prompt_changes_what_the_scripted_model_plans():
    # The scripted model reads the agent enum from the prompt, like a model would.
    text = default_text(PLANNER).replace(
        '"agent" must be one of: {agent_names}',
        '"agent" must be one of: web_researcher, synthesizer',
    )
    design = Design(prompts={PLANNER: text})
    outcome = run_question(
        "How did Apple's stock price change in 2007?", design, graph=build_graph(design)
    )
    assert outcome.status == "done"
    assert [r.agent for r in outcome.rows] == ["web_researcher", "synthesizer"]
    default = run_question("How did Apple's stock price change in 2007?", Design())
    assert [r.agent for r in default.rows] == ["data_researcher", "synthesizer"]


def test_a_design_round_trips_through_its_export():
    from graph.kernel.design import Design, export_design, import_design

    design = Design(
        enabled_agents=["web_researcher", "synthesizer"],
        max_replans=1,
        approvals={"web_researcher": "always"},
        prompts={PLANNER: default_text(PLANNER) + "\nBe brief."},
    )
    assert import_design(export_design(design)) == design


@pytest.mark.parametrize(
    "doc, says",
    [
        ({"format": "other"}, "Not a Stepwise design file"),
        ({"format": "stepwise-design", "design": {"enabled_agents": ["nobody"]}}, "unknown agent"),
        ({"format": "stepwise-design", "design": {"max_replans": -1}}, "max_replans"),
        (
            {"format": "stepwise-design", "design": {"prompts": {PLANNER: "{nope}"}}},
            "unknown placeholder {nope}",
        ),
    ],
)
def test_a_bad_design_file_is_refused_with_the_reason(doc, says):
    from graph.kernel.design import DesignError, import_design

    with pytest.raises(DesignError, match=says):
        import_design(doc)


def test_every_shipped_prompt_renders_as_langchain_s_formatter_fills_it():
    """``render`` fills a checked text with ``str.format``; it must say what LangChain's
    ``PromptTemplate`` says for every prompt of every system, braces and specs included."""
    from langchain_core.prompts import PromptTemplate

    import graph.hierarchical_teams  # noqa: F401  (their prompts registered)
    import graph.supervisor_bus  # noqa: F401
    from graph.prompts import prompt_spec, render

    names = prompt_names()
    assert len(names) >= 20
    for name in names:
        text = default_text(name) + " {{literal}}"
        values = {var: f"<{var} {{braced}}>" for var in prompt_spec(name).allowed}
        template = PromptTemplate.from_template(text)
        expected = template.format(**{k: values.get(k, "") for k in template.input_variables})
        assert render(name, text, values) == expected, name
