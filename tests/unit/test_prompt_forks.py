"""A fork with another prompt, from a node (graph/service/prompt_forks.py): the calls before
the checkpoint are the parent's, replayed from its recording; only later calls reach the
model, and the run says which were which."""

from __future__ import annotations

import pytest

from graph.kernel.design import Design
from graph.models.scripted import ScriptedChatModel
from graph.prompts import PromptError, default_text
from graph.service.run_service import RunService
from ui.run_view import ANSWERED, load_run_view, usage_summary
from ui.trace_builder import build_trace

QUESTION = "Which stock in the database grew the most between 2005 and 2009? Chart the prices."
EXECUTOR = "plan_execute/executor"
MARK = "Tuned for the fork: say why in one short sentence."


class Counter:
    live = 0


class CountingScripted(ScriptedChatModel):
    """The offline scripted model, counting every call it answers (all roles share it)."""

    def _generate(self, *args, **kwargs):
        Counter.live += 1
        return super()._generate(*args, **kwargs)


@pytest.fixture
def counting(store, settings):
    Counter.live = 0
    svc = RunService(
        store,
        settings,
        timeout_tick_s=0,
        processes=0,
        model_factory=lambda role: CountingScripted(),
    )
    yield svc
    svc.shutdown()


def _calls(store, run_id: str) -> list[dict]:
    return [
        e["data"]["llm_call"]
        for e in store.events(run_id, kinds=("custom",))
        if "llm_call" in (e.get("data") or {})
    ]


def _before_step(service, run_id: str, step: int) -> dict:
    """The last checkpoint before the run first reaches ``step``."""
    timeline = service.timeline(run_id)
    first = next(p for p in timeline if (p["fields"].get("current_step") or 0) >= step)
    return timeline[first["index"] - 1]


def _parent(service) -> str:
    run_id = service.start(QUESTION, Design())
    assert service.wait(run_id, timeout=120).status == "done"
    return run_id


def test_a_fork_with_another_executor_prompt_replays_the_calls_before_step_3_and_makes_only_the_later_ones(
    counting, store
):
    parent = _parent(counting)
    point = _before_step(counting, parent, 3)
    assert point["next"] == ["executor"] and point["fields"]["current_step"] == 2
    text = MARK + "\n" + default_text(EXECUTOR)
    Counter.live = 0

    fork = counting.fork_with_prompt(parent, point["checkpoint_id"], EXECUTOR, text=text)
    record = counting.wait(fork, timeout=120)
    assert record.status == "done", record.reason

    parent_calls, fork_calls = _calls(store, parent), _calls(store, fork)
    # Before the checkpoint: the parent's calls up to the Executor's that ends step 2.
    events = [
        e for e in store.events(parent, kinds=("custom",)) if "llm_call" in (e.get("data") or {})
    ]
    at = next(
        i
        for i, e in enumerate(events)
        if e["step"] == 2 and e["data"]["llm_call"]["node"] == "executor"
    )
    replayed = [c for c in fork_calls if c.get("replayed") is True]
    live = [c for c in fork_calls if c.get("replayed") is False]
    assert len(replayed) + len(live) == len(fork_calls), "a fork call says neither"
    assert [c["request"] for c in replayed] == [c["request"] for c in parent_calls[:at]]
    assert [c["reply"] for c in replayed] == [c["reply"] for c in parent_calls[:at]]
    assert fork_calls[: len(replayed)] == replayed, "a replayed call after a live one"
    # Only the later calls reached the model: counted at the model.
    assert live and Counter.live == len(live)
    assert len(live) == len(parent_calls) - at  # the scripted model goes the same way
    # The first live call is the Executor's, with the new prompt.
    assert live[0]["node"] == "executor"
    assert MARK in str(live[0]["request"]["messages"])
    assert MARK not in str([c["request"] for c in replayed])

    # The fork records its parent, checkpoint and the prompt version it used.
    assert record.parent_run == parent
    assert record.parent_checkpoint == point["checkpoint_id"]
    version = store.prompt_version(record.prompt_versions[EXECUTOR])
    assert version is not None and version.text == text
    assert record.design["prompts"][EXECUTOR] == text
    assert record.design["model"]["fork_of"] == parent

    # The step table and the trace say which calls were replayed and which live.
    view = load_run_view(store, fork)
    rows = {r["Step"]: r[ANSWERED] for r in view.panels[0].rows}
    assert rows == {1: "replayed", 2: "2 replayed, 1 live", 3: "live", 4: "live"}
    assert f"{len(replayed)} replayed from the recording" in usage_summary(view.total, None)
    titles = [i.title for i in build_trace(store.events(fork)).items if i.kind == "model"]
    assert sum("· replayed" in t for t in titles) == len(replayed)
    assert sum("· live" in t for t in titles) == len(live)
    # an ordinary run's table has no such column
    assert ANSWERED not in load_run_view(store, parent).panels[0].rows[0]


def test_the_calls_before_a_checkpoint_end_with_the_update_of_the_node_that_produced_it(
    counting, store
):
    parent = _parent(counting)
    point = _before_step(counting, parent, 3)
    fork = counting.fork_with_prompt(
        parent, point["checkpoint_id"], EXECUTOR, text=MARK + "\n" + default_text(EXECUTOR)
    )
    counting.wait(fork, timeout=120)
    copied = [e for e in store.events(fork) if e["kind"] == "update" and not e["namespace"]]
    ran_before = [e["node"] for e in store.events(parent, kinds=("update",)) if not e["namespace"]]
    # planner, executor, data_researcher, executor, data_researcher: then the fork's own
    assert [e["node"] for e in copied][:5] == ran_before[:5]
    assert [e["node"] for e in copied][5] == "executor"


def test_a_typed_prompt_is_saved_once_as_a_version_and_a_saved_version_can_be_chosen(
    counting, store
):
    parent = _parent(counting)
    point = _before_step(counting, parent, 3)
    text = MARK + "\n" + default_text(EXECUTOR)
    first = counting.fork_with_prompt(
        parent, point["checkpoint_id"], EXECUTOR, text=text, label="shorter reasons"
    )
    counting.wait(first, timeout=120)
    second = counting.fork_with_prompt(parent, point["checkpoint_id"], EXECUTOR, text=text)
    counting.wait(second, timeout=120)
    versions = store.prompt_versions(EXECUTOR)
    assert [v.label for v in versions] == ["shorter reasons"]
    saved = versions[0]
    third = counting.fork_with_prompt(parent, point["checkpoint_id"], EXECUTOR, version_id=saved.id)
    counting.wait(third, timeout=120)
    for run_id in (first, second, third):
        assert store.run(run_id).prompt_versions[EXECUTOR] == saved.id


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"prompt_name": "plan_execute/synthesizer", "text": "x"}, "choose one of"),
        ({"prompt_name": EXECUTOR, "text": "   "}, "is empty"),
        ({"prompt_name": EXECUTOR, "text": "Decide {nonsense}"}, "unknown placeholder"),
        ({"prompt_name": EXECUTOR, "version_id": 999}, "No prompt version 999"),
    ],
)
def test_a_fork_that_cannot_be_made_says_why_and_leaves_nothing_behind(
    counting, store, kwargs, words
):
    parent = _parent(counting)
    point = _before_step(counting, parent, 3)
    runs = len(store.runs())
    with pytest.raises((ValueError, PromptError), match=words):
        counting.fork_with_prompt(parent, point["checkpoint_id"], **kwargs)
    assert len(store.runs()) == runs
    assert store.prompt_versions(EXECUTOR) == []


def test_a_version_of_another_prompt_or_a_checkpoint_of_another_run_is_refused(counting, store):
    parent = _parent(counting)
    point = _before_step(counting, parent, 3)
    planner = store.save_prompt_version(
        "plan_execute/planner", "other", default_text("plan_execute/planner")
    )
    with pytest.raises(ValueError, match="is a version of plan_execute/planner"):
        counting.fork_with_prompt(parent, point["checkpoint_id"], EXECUTOR, version_id=planner.id)
    runs = len(store.runs())
    with pytest.raises(ValueError, match="No checkpoint"):
        counting.fork_with_prompt(parent, "not-a-checkpoint", EXECUTOR, text=default_text(EXECUTOR))
    assert len(store.runs()) == runs
    assert store.prompt_versions(EXECUTOR) == []


def test_the_copied_calls_and_tool_runs_take_no_time_in_the_fork_and_keep_the_parents(
    counting, store
):
    parent = _parent(counting)
    point = _before_step(counting, parent, 3)
    fork = counting.fork_with_prompt(
        parent, point["checkpoint_id"], EXECUTOR, text=MARK + "\n" + default_text(EXECUTOR)
    )
    counting.wait(fork, timeout=120)
    custom = [e["data"] for e in store.events(fork, kinds=("custom",))]
    replayed = [d["llm_call"] for d in custom if (d.get("llm_call") or {}).get("replayed")]
    assert replayed and all(c["latency_s"] == 0.0 for c in replayed)
    assert all(c["replayed_from"] == f"run {parent}" for c in replayed)
    parents = [c["latency_s"] for c in _calls(store, parent)[: len(replayed)]]
    assert [c["recorded_latency_s"] for c in replayed] == parents
    tools = [d["tool_call"] for d in custom if "recorded_latency_s" in (d.get("tool_call") or {})]
    assert tools and all(t["latency_s"] == 0.0 for t in tools)


def test_the_forks_listed_are_the_newest_forks_however_many_plain_runs_are_newer(store):
    """The Evals page's fork list reads forks, not the newest runs filtered: a fork made
    before the last ``limit`` runs is still listed, and a plain run or a fork made without
    another prompt never is."""
    from graph.models.choice import ModelChoice
    from graph.service.fork_compare import forks_with_parents
    from graph.service.prompt_forks import prompt_forks

    def made(run_id: str, design: Design, parent: str | None = None) -> None:
        store.create_run(run_id, f"question of {run_id}", design, "offline", parent_run=parent)

    made("parent", Design())
    made("fork-1", Design(model=ModelChoice(fork_of="parent")), parent="parent")
    made("replay", Design(), parent="parent")  # a plain fork or replay: no other prompt
    made("fork-2", Design(model=ModelChoice(fork_of="parent")), parent="parent")
    for n in range(3):
        made(f"plain-{n}", Design())

    assert [r.id for r in prompt_forks(store, limit=2)] == ["fork-2"]
    assert [r.id for r in prompt_forks(store, limit=3)] == ["fork-2", "fork-1"]
    assert [r.id for r in forks_with_parents(store)] == ["fork-2", "fork-1"]
    assert [r.id for r in store.runs(forks=True)] == ["fork-2", "replay", "fork-1"]
