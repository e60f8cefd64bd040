"""*Fork from here with this prompt* under a playground result: the run goes on from the
tried checkpoint with that column's text, records its parent and the prompt version, replays
the parent's calls before the checkpoint, and the Run page opens on it. The offline scripted
model, a real run service and store under a temporary home."""

from graph.kernel.design import Design
from graph.prompts import default_text
from graph.service.playground import tryable_points
from tests.app.support import button, open_page, texts, try_it, watched

EXECUTOR = "plan_execute/executor"
EDITOR = f"prompts:editor:{EXECUTOR}"
QUESTION = "Which stock in the database grew the most between 2005 and 2009? Chart the prices."
MARK = "Tuned in the playground: one short sentence of reason."


def _calls(store, run_id: str) -> list[dict]:
    return [
        e["data"]["llm_call"]
        for e in store.events(run_id)
        if isinstance(e.get("data"), dict) and isinstance(e["data"].get("llm_call"), dict)
    ]


def _tried(services):
    """The playground on the parent's last Executor checkpoint, the active text beside an
    unsaved edit, tried once."""
    _, service = services
    run_id = service.start(QUESTION, Design())
    assert service.wait(run_id, timeout=60).status == "done"
    point = [p for p in tryable_points(service, run_id) if p["node"] == "executor"][-1]
    at = open_page("app_pages/prompts.py")
    next(s for s in at.selectbox if s.label == "Prompt").set_value(EXECUTOR).run()
    assert at.selectbox(key="playground:run").value == run_id
    at.selectbox(key="playground:point").set_value(point["checkpoint_id"]).run()
    assert at.selectbox(key="playground:point").value == point["checkpoint_id"]
    at.text_area(key=EDITOR).input(MARK + "\n" + at.text_area(key=EDITOR).value).run()
    try_it(at)
    assert not at.exception, [e.value for e in at.exception]
    return at, run_id, point["checkpoint_id"]


def test_forking_the_unsaved_edits_column_starts_a_fork_from_the_checkpoint_and_opens_it_on_the_run_page(
    home, services
):
    store, service = services
    at, run_id, checkpoint = _tried(services)
    forks = [b for b in at.button if b.label == "Fork from here with this prompt"]
    assert [b.key for b in forks] == ["playground:fork:0", "playground:fork:1"]
    forks[1].click().run()  # the unsaved edit's column
    assert not at.exception, [e.value for e in at.exception]
    new_id = watched(at).value
    assert new_id != run_id
    record = service.wait(new_id, timeout=60)
    assert record.status == "done", record.reason
    assert (record.parent_run, record.parent_checkpoint) == (run_id, checkpoint)
    version = store.prompt_version(record.prompt_versions[EXECUTOR])
    assert version.text.startswith(MARK)
    assert record.design["prompts"][EXECUTOR] == version.text
    assert f"a fork of {run_id[:8]}" in texts(at) and f"version {version.id} of" in texts(at)
    parent, forked = _calls(store, run_id), _calls(store, new_id)
    replayed = [c for c in forked if c.get("replayed")]
    assert 0 < len(replayed) < len(parent)
    assert [(c["node"], c.get("reply")) for c in replayed] == [
        (c["node"], c.get("reply")) for c in parent[: len(replayed)]
    ]
    assert all(c.get("replayed") is False for c in forked[len(replayed) :])
    assert len(forked) > len(replayed)


def test_forking_a_saved_versions_column_records_that_version_and_saves_none(home, services):
    store, service = services
    saved = store.save_prompt_version(EXECUTOR, "kept", MARK + "\n" + default_text(EXECUTOR))
    at, run_id, _ = _tried(services)
    at.multiselect(key=f"playground:texts:{EXECUTOR}:True").set_value([f"v{saved.id}"]).run()
    try_it(at)
    button(at, "Fork from here with this prompt").click().run()
    assert not at.exception, [e.value for e in at.exception]
    new_id = watched(at).value
    record = service.wait(new_id, timeout=60)
    assert record.parent_run == run_id
    assert record.prompt_versions[EXECUTOR] == saved.id
    assert [v.id for v in store.prompt_versions(EXECUTOR)] == [saved.id]


def test_a_column_whose_text_cannot_be_a_prompt_is_refused_in_words_and_nothing_starts(
    home, services
):
    store, _ = services
    at, run_id, _ = _tried(services)
    at.text_area(key=EDITOR).input("Decide the next step {nonsense}").run()
    at.multiselect(key=f"playground:texts:{EXECUTOR}:True").set_value(["editor"]).run()
    try_it(at)
    button(at, "Fork from here with this prompt").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("The fork was not started" in e.value and "nonsense" in e.value for e in at.error)
    assert len(store.runs()) == 1
    assert store.prompt_versions(EXECUTOR) == []


def test_a_forks_first_checkpoint_is_forked_again_from_a_playground_result(home, services):
    """Issue 26: the first checkpoint of a fork was offered but refused ("No checkpoint")."""
    store, service = services
    parent = service.start(QUESTION, Design())
    assert service.wait(parent, timeout=60).status == "done"
    point = [p for p in tryable_points(service, parent) if p["node"] == "executor"][-1]
    text = MARK + "\n" + default_text(EXECUTOR)
    first = service.fork_with_prompt(parent, point["checkpoint_id"], EXECUTOR, text=text)
    assert service.wait(first, timeout=60).status == "done"
    opening = tryable_points(service, first)[0]
    assert opening["checkpoint_id"] == service.timeline(first)[0]["checkpoint_id"]

    at = open_page()  # as History's "Try this node with another prompt" opens it
    at.session_state["playground:preset"] = {
        "run_id": first,
        "checkpoint_id": opening["checkpoint_id"],
    }
    at.switch_page("app_pages/prompts.py").run()
    assert next(s for s in at.selectbox if s.label == "Prompt").value == EXECUTOR
    assert at.selectbox(key="playground:run").value == first
    assert at.selectbox(key="playground:point").value == opening["checkpoint_id"]
    try_it(at)
    assert not at.exception, [e.value for e in at.exception]
    button(at, "Fork from here with this prompt").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not [e.value for e in at.error]
    (new_id,) = [r.id for r in store.runs() if r.parent_run == first]
    assert f"Started run {new_id[:8]}: a fork of {first[:8]}" in texts(at)
    record = service.wait(new_id, timeout=60)
    assert record.status == "done", record.reason
    assert record.parent_checkpoint == opening["checkpoint_id"]
    replayed = [c for c in _calls(store, new_id) if c.get("replayed")]
    assert replayed and {c["replayed_from"] for c in replayed} == {f"run {parent}"}
