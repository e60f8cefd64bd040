"""The History page's "Fork from here with this prompt": from a checkpoint, another Executor
prompt typed or chosen; the fork opens, replays the calls before the checkpoint and says
so in its step table. A text that cannot be a prompt is refused in words."""

from graph.kernel.design import Design
from graph.prompts import default_text
from tests.app.support import button, open_page, texts
from ui.run_view import ANSWERED

QUESTION = "Which stock in the database grew the most between 2005 and 2009? Chart the prices."
EXECUTOR = "plan_execute/executor"
MARK = "Tuned in the browser: one short sentence of reason."


def _parent(services) -> str:
    _, service = services
    run_id = service.start(QUESTION, Design())
    assert service.wait(run_id, timeout=60).status == "done"
    return run_id


def _before_step_3(service, run_id: str) -> str:
    timeline = service.timeline(run_id)
    first = next(p for p in timeline if (p["fields"].get("current_step") or 0) >= 3)
    return timeline[first["index"] - 1]["checkpoint_id"]


def _form(services):
    store, service = services
    run_id = _parent(services)
    at = open_page("app_pages/history.py", run=run_id)
    at.selectbox(key=f"history:fork-point:{run_id}").set_value(
        _before_step_3(service, run_id)
    ).run()
    at.selectbox(key=f"history:prompt-fork:prompt:{run_id}").set_value(EXECUTOR).run()
    return at, run_id


def test_a_typed_executor_prompt_forks_from_the_checkpoint_and_the_step_table_says_replayed_or_live(
    home, services
):
    store, service = services
    at, run_id = _form(services)
    at.text_area(key=f"history:prompt-fork:text:{run_id}:{EXECUTOR}").set_value(
        MARK + "\n" + default_text(EXECUTOR)
    ).run()
    button(at, "Fork from here with this prompt").click().run()
    assert not at.exception, [e.value for e in at.exception]
    new_id = next(m.value.split("`")[1] for m in at.markdown if m.value.startswith("Run `"))
    assert new_id != run_id
    record = service.wait(new_id, timeout=60)
    assert record.status == "done", record.reason
    assert record.parent_run == run_id
    version = store.prompt_version(record.prompt_versions[EXECUTOR])
    assert version.text.startswith(MARK)
    assert f"a fork of {run_id[:8]} with version {version.id}" in texts(at)
    at.run()  # redrawn once the fork has ended
    steps = next(t.value for t in at.table if ANSWERED in t.value.columns)
    assert dict(zip(steps["Step"], steps[ANSWERED])) == {
        1: "replayed",
        2: "2 replayed, 1 live",
        3: "live",
        4: "live",
    }


def test_a_typed_text_that_cannot_be_a_prompt_is_refused_and_nothing_is_started(home, services):
    store, _ = services
    at, run_id = _form(services)
    at.text_area(key=f"history:prompt-fork:text:{run_id}:{EXECUTOR}").set_value(
        "Decide the next step {nonsense}"
    ).run()
    button(at, "Fork from here with this prompt").click().run()
    assert any("unknown placeholder {nonsense}" in e.value for e in at.error)
    assert len(store.runs()) == 1
    assert store.prompt_versions(EXECUTOR) == []


def test_the_evals_page_compares_a_fork_with_its_parent(home, services):
    store, service = services
    at = open_page("app_pages/evals.py")
    assert "No fork with another prompt yet" in texts(at)
    run_id = _parent(services)
    fork = service.fork_with_prompt(
        run_id,
        _before_step_3(service, run_id),
        EXECUTOR,
        text=MARK + "\n" + default_text(EXECUTOR),
        label="one-sentence reasons",
    )
    assert service.wait(fork, timeout=60).status == "done"
    at = open_page("app_pages/evals.py")
    assert at.selectbox(key="evals:fork").value == fork
    prompts, figures = at.table[0].value, at.table[1].value
    assert list(prompts["Prompt"]) == [EXECUTOR]
    version = store.run(fork).prompt_versions[EXECUTOR]
    assert list(prompts["Fork"]) == [f"version {version}: one-sentence reasons"]
    by_figure = {row["Figure"]: (row["Parent"], row["Fork"]) for _, row in figures.iterrows()}
    calls = [
        e["data"]["llm_call"]
        for e in store.events(fork, kinds=("custom",))
        if "llm_call" in (e.get("data") or {})
    ]
    replayed = sum(1 for c in calls if c["replayed"])
    assert by_figure["of which replayed"] == ("0", str(replayed))
    assert by_figure["of which live"] == ("0", str(len(calls) - replayed))
    assert by_figure["Status"] == ("done", "done")
    assert "**parent** · status **done**" in texts(at)
    assert "**fork** · status **done**" in texts(at)
