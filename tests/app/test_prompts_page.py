"""The Prompts page: a live preview, errors named inline, versions kept, diffed, activated."""

from graph.prompts import default_text
from tests.app.support import open_page, texts

PLANNER = "plan_execute/planner"
EDITOR = f"prompts:editor:{PLANNER}"


def _preview(at) -> str:
    """The rendered prompt."""
    return next(c.value for c in at.code if c.language != "diff")


def _diff_tables(at) -> list[str]:
    """The side-by-side diffs on the page (HTML tables), in page order."""
    return [m.value for m in at.markdown if 'class="prompt-diff"' in m.value]


def _diff_cells(table: str, side: str) -> list[str]:
    """The lines one side of a side-by-side diff shows, as written."""
    import html
    import re

    return [html.unescape(c) for c in re.findall(rf'class="diff-{side}"[^>]*>(.*?)</td>', table)]


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
    changes = _diff_tables(at)[0]  # the preview's: only the changed lines of the prompt sent
    assert _diff_cells(changes, "new") == ["", "Always answer in haiku."]
    assert _diff_cells(changes, "old") == ["", ""]


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
    diff = _diff_tables(at)[-1]  # the compare section
    assert "Be brief." in _diff_cells(diff, "new") and "Be brief." not in _diff_cells(diff, "old")
    assert "<th>the shipped default</th>" in diff and "<th>the editor</th>" in diff


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
    assert "step 1, before planner" in state.options[state.index]
    assert question in _preview(at) and "Which stock in the database" not in _preview(at)

    executor = "plan_execute/executor"
    at.selectbox[0].set_value(executor).run()
    state = next(s for s in at.selectbox if s.label == "State")
    assert "before executor" in state.options[state.index]
    assert "How did Tesla" in _preview(at)


def test_a_version_saved_without_making_it_active_is_not_called_unsaved(home, services):
    store, _ = services
    at = open_page("app_pages/prompts.py")
    at.text_area(key=EDITOR).input(default_text(PLANNER) + "\nKeep plans short.\n").run()
    assert "Unsaved changes" in texts(at)
    at.text_input(key=f"prompts:label:{PLANNER}").input("short plans").run()
    at.checkbox(key=f"prompts:activate:{PLANNER}").uncheck().run()
    next(b for b in at.button if b.label == "Save version").click().run()
    assert PLANNER not in store.active_prompts()  # saved, not made active
    shown = texts(at)
    assert "Unsaved changes" not in shown
    assert "Saved as version “short plans”, not active" in shown


def _replanned_run(service) -> str:
    from graph.kernel.design import Design

    run_id = service.start("How did Tesla's stock do in 2008?", Design())  # no Tesla prices
    service.wait(run_id, timeout=60)
    return run_id


def test_state_options_are_unique_and_say_the_plan_version_and_step(home, services):
    store, service = services
    run_id = _replanned_run(service)
    assert len(store.snapshot(run_id)["plan_history"]) > 1  # the step was replanned
    at = open_page("app_pages/prompts.py")
    next(s for s in at.selectbox if s.label == "Filled in for").set_value(run_id).run()
    options = next(s for s in at.selectbox if s.label == "State").options
    assert len(options) == len(set(options)) > 4
    before_executor = [o for o in options if "step 1" in o and "before executor" in o]
    assert len(before_executor) > 1  # the case the issue saw: now told apart by plan version
    assert {o.split(", step")[0].split(". ", 1)[1] for o in before_executor} >= {
        "plan v1",
        "plan v2",
    }


def test_only_runs_of_the_system_that_uses_the_prompt_are_offered(home, services):
    from graph.kernel.design import Design

    store, service = services
    mine = _replanned_run(service)
    others = []
    for system in ("supervisor_bus", "hierarchical_teams"):
        others.append(service.start("What caused the dot-com crash?", Design(system=system)))
        service.wait(others[-1], timeout=60)
    at = open_page("app_pages/prompts.py")
    offered = next(s for s in at.selectbox if s.label == "Filled in for").options
    assert len(offered) == 2 and store.run(mine).question in offered[1]  # a sample, my run
    # the guardrail's prompt serves every system: all three runs
    at.selectbox[0].set_value("guardrail/classifier").run()
    assert len(next(s for s in at.selectbox if s.label == "Filled in for").options) == 4


def test_versions_are_compared_side_by_side_with_the_lines_as_written(home, services):
    store, _ = services
    shipped = default_text(PLANNER)
    edited = shipped.replace("Guidelines:\n", "Guidelines:\n- Use at most 3 steps.\n")
    store.save_prompt_version(PLANNER, "three steps", edited)
    at = open_page("app_pages/prompts.py")
    compare_to = [s for s in at.selectbox if s.label == "To"][0]
    compare_to.set_value(next(o for o in compare_to.options if o.startswith("v"))).run()
    table = _diff_tables(at)[-1]
    new, old = _diff_cells(table, "new"), _diff_cells(table, "old")
    assert "- Use at most 3 steps." in new  # the prompt's own dash, with no + before it
    assert len(new) == len(old) == len(edited.splitlines())  # every line, side by side
    assert old[new.index("- Use at most 3 steps.")] == ""  # nothing faces an added line
    assert "+- Use" not in texts(at) and "+- Use" not in table
    assert 'class="diff-added"' in table


def test_the_editor_and_preview_are_large(home, monkeypatch):
    from streamlit.testing.v1 import local_script_runner

    sent = []
    parse = local_script_runner.parse_tree_from_messages

    def keep(messages):
        sent.extend(messages)
        return parse(messages)

    monkeypatch.setattr(local_script_runner, "parse_tree_from_messages", keep)
    at = open_page("app_pages/prompts.py")

    def heights(kind: str, label: str | None = None) -> list[int]:
        return [
            m.delta.new_element.height_config.pixel_height
            for m in sent
            if m.HasField("delta")
            and m.delta.new_element.WhichOneof("type") == kind
            and (label is None or getattr(m.delta.new_element, kind).label == label)
        ]

    # The app opens on the Design page first (its own text areas: a new agent's form).
    editor = heights("text_area", "Template text")
    assert editor and min(editor) >= 600
    assert max(heights("code")) >= 600  # the preview
    sent.clear()
    at.segmented_control(key="prompts:height").set_value(900).run()
    assert heights("text_area")[-1] == 900


# ------------------------------------------------------------------ the offline model, said


def _offline_note(at) -> str:
    """The offline model's note: its headline and what its expander says."""
    if not any("offline scripted model" in i.value for i in at.info):
        return ""
    headline = next(i.value for i in at.info if "offline scripted model" in i.value)
    details = [m.value for e in at.expander if "offline model reads" in e.label for m in e.markdown]
    return "\n".join([headline, *details])


def test_the_offline_model_says_what_it_reads_from_the_prompt_and_how_to_switch(home):
    at = open_page("app_pages/prompts.py")
    note = _offline_note(at)
    assert "Runs use the **offline scripted model**" in note
    assert '`"agent" must be one of: …`' in note  # what the Planner rules read
    assert 'limits such as "use at most 3 steps"' in note  # what they ignore
    assert "OPENAI_BASE_URL" in note and "OPENAI_API_KEY" in note  # how to switch
    at.selectbox[0].set_value("plan_execute/web_researcher").run()
    assert "No edit of this prompt changes what it does." in _offline_note(at)


def test_with_a_real_model_there_is_no_offline_note(home, monkeypatch):
    from graph.settings import get_settings

    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    get_settings.cache_clear()
    at = open_page("app_pages/prompts.py")
    assert _offline_note(at) == ""


def _two_planner_experiment(services, questions=1) -> str:
    """The issue's experiment: the shipped Planner against one saying "use at most 3 steps"."""
    from graph.service.eval_sets import EvalQuestion, EvalSet
    from graph.service.experiment_variants import Variant
    from graph.service.experiments import ExperimentRunner

    store, service = services
    limited = default_text(PLANNER).replace(
        "Guidelines:\n", "Guidelines:\n- Use at most 3 steps.\n"
    )
    version = store.save_prompt_version(PLANNER, "three steps", limited)
    eval_set = EvalSet(
        name="one",
        questions=[
            EvalQuestion(question="Why did IBM sell its PC division to Lenovo?")
            for _ in range(questions)
        ],
    )
    store.save_eval_set(eval_set)
    runner = ExperimentRunner.of(service)
    experiment_id = runner.start(
        "steps",
        eval_set,
        [Variant(name="shipped"), Variant.from_versions(store, "three", [version.id])],
    )
    assert runner.wait(experiment_id, timeout=120).status == "done"
    return experiment_id


def test_the_comparison_says_what_the_offline_model_read_from_the_varied_prompt(home, services):
    _two_planner_experiment(services)
    at = open_page("app_pages/evals.py")
    note = _offline_note(at)
    assert "**planner**: what its rules read" in note
    assert "**executor**" not in note  # the variants do not differ there
    assert "OPENAI_BASE_URL" in note


# ------------------------------------------------------------------ the judge, in the background


def test_judge_every_run_works_in_the_background_with_its_progress(home, services, monkeypatch):
    import json
    import threading

    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    from graph.service.judging import JudgeJobs
    from tests.support_procs.fake_server import LocalOpenAIServer
    from tests.unit.conftest import wait_for

    store, service = services
    experiment_id = _two_planner_experiment(services)
    runs = [r["run_id"] for r in store.experiment_runs(experiment_id)]
    gate = threading.Semaphore(0)
    scores = {
        m: {"score": 3, "reason": "So so."}
        for m in ("plan_quality", "plan_adherence", "execution_efficiency", "logical_consistency")
    }

    class Gated(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "gated"

        def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
            assert gate.acquire(timeout=60)
            return ChatResult(generations=[ChatGeneration(message=AIMessage(json.dumps(scores)))])

    with LocalOpenAIServer(Gated) as server:
        # The judge uses the active model profile (the Model page's).
        service.profiles.add("judge", server.base_url, "stepwise-local")
        service.profiles.activate("judge")
        try:
            at = open_page("app_pages/evals.py")
            at.button(key="evals:judge-all").click().run()  # returns: the judge waits on the gate
            job = store.latest_judge_job(experiment_id)
            assert (job["status"], job["judged"], job["total"]) == ("running", 0, len(runs))
            # the judge's bar (the Review tab shows a progress bar of its own)
            (bar,) = [p for p in at.get("progress") if "runs judged" in p.proto.text]
            assert bar.proto.text == f"0 of {len(runs)} runs judged"
            assert at.button(key="evals:judge-all").disabled  # one job at a time
            gate.release()
            wait_for(lambda: store.latest_judge_job(experiment_id)["judged"] == 1, what="one run")
            at.run()
            # the judge's bar (the Review tab shows a progress bar of its own)
            (bar,) = [p for p in at.get("progress") if "runs judged" in p.proto.text]
            assert bar.proto.text == f"1 of {len(runs)} runs judged"
        finally:
            gate.release(len(runs))
        JudgeJobs.of(service).wait(job["id"])
        at.run()
    assert not [p for p in at.get("progress") if "runs judged" in p.proto.text]
    assert f"Last judged: {len(runs)} of {len(runs)} run(s)." in texts(at)
    means = next(t.value for t in at.table if "Runs judged" in t.value.columns)
    assert sorted(means["Runs judged"]) == [1, 1] and set(means["plan quality"]) == {"3"}
