"""A fork of a fork: its first checkpoint is the state copied from its parent, not a run's
input, and every checkpoint the node playground offers on it can be forked again (issue
26). The calls before a fork's first checkpoint are its parent's replayed ones: a fork of
it replays them again, naming the run that made them and keeping their first times.

Real parts: the run service with the SQLite checkpointer, the offline scripted model, the
demo API over real HTTP for the teams system.
"""

from __future__ import annotations

import pytest

from graph.kernel.design import Design
from graph.prompts import default_text
from graph.service.playground import target, tryable_points
from tests.unit.test_prompt_forks import _calls, counting
from tests.unit.test_teams_fork import NEVER_ASK, THREE_INTENTS, api, teams
from ui.history_view import forkable, name_fork_origin

__all__ = ["api", "counting", "teams"]  # fixtures

FIRST, SECOND = "FIRST-FORK-4417: tuned once.", "SECOND-FORK-8802: tuned twice."
CASES = {
    "hierarchical_teams": (THREE_INTENTS, NEVER_ASK, "hierarchical_teams/searcher"),
    "plan_execute": (
        "Which stock in the database grew the most between 2005 and 2009? Chart the prices.",
        Design(),
        "plan_execute/executor",
    ),
    "supervisor_bus": (
        "How did Tesla's stock do in 2008?",
        Design(system="supervisor_bus", approvals={"writer": "never"}),
        "supervisor_bus/supervisor",
    ),
}


@pytest.fixture(params=sorted(CASES))
def case(request):
    """The system's question, design and prompt, and a run service that can run it."""
    question, design, prompt = CASES[request.param]
    fixture = "teams" if request.param == "hierarchical_teams" else "counting"
    return request.getfixturevalue(fixture), question, design, prompt


def _done(service, run_id: str) -> str:
    record = service.wait(run_id, timeout=120)
    assert record.status == "done", record.reason
    return run_id


def _fork(service, run_id: str, checkpoint_id: str, prompt: str, mark: str) -> str:
    text = mark + "\n" + default_text(prompt)
    return _done(service, service.fork_with_prompt(run_id, checkpoint_id, prompt, text=text))


def _first_fork(case) -> tuple[str, str]:
    """A finished run, and a fork of it (as the playground makes one) from the first
    checkpoint before a call of the case's prompt that has calls before it: the first
    team's searcher, the Executor's first step, the supervisor's second turn."""
    service, question, design, prompt = case
    parent = _done(service, service.start(question, design))
    index = {p["checkpoint_id"]: p["index"] for p in service.timeline(parent)}
    start = next(
        start
        for p in tryable_points(service, parent)
        if p["prompt"] == prompt
        and index[start := target(service, parent, p["checkpoint_id"]).fork_from] > 1
    )
    return parent, _fork(service, parent, start, prompt, FIRST)


def test_a_forks_first_checkpoint_forks_again_replaying_the_calls_its_parent_replayed(case):
    service = case[0]
    store = service.store
    parent, first = _first_fork(case)
    opening = service.timeline(first)[0]
    offered = tryable_points(service, first)[0]  # the playground offers it (in a team)
    assert target(service, first, offered["checkpoint_id"]).fork_from == opening["checkpoint_id"]

    second = _fork(service, first, opening["checkpoint_id"], offered["prompt"], SECOND)

    record = store.run(second)
    assert (record.parent_run, record.parent_checkpoint) == (first, opening["checkpoint_id"])
    before = [c for c in _calls(store, first) if c["replayed"]]
    calls = _calls(store, second)
    replayed = [c for c in calls if c["replayed"]]
    assert before and [c["request"] for c in replayed] == [c["request"] for c in before]
    assert [c["reply"] for c in replayed] == [c["reply"] for c in before]
    # made by the first run: named so, with the times it took there
    assert {c["replayed_from"] for c in replayed} == {f"run {parent}"}
    made = _calls(store, parent)[: len(replayed)]
    assert [c["recorded_latency_s"] for c in replayed] == [c["latency_s"] for c in made]
    live = calls[len(replayed) :]
    assert live and all(c["replayed"] is False for c in live)
    assert live[0]["node"] == offered["node"].split(":")[-1]
    assert SECOND in str(live[0]["request"]["messages"])
    assert FIRST not in str(live[0]["request"]["messages"])


def test_every_checkpoint_the_playground_offers_on_a_fork_can_be_forked(case):
    service, _, _, _ = case
    _, first = _first_fork(case)
    starts: dict[str, str] = {}  # where each offered point's fork starts, and its prompt
    for point in tryable_points(service, first):
        starts.setdefault(target(service, first, point["checkpoint_id"]).fork_from, point["prompt"])
    assert len(starts) > 1
    for checkpoint_id, prompt in starts.items():
        forked = _fork(service, first, checkpoint_id, prompt, SECOND)
        assert service.store.run(forked).parent_checkpoint == checkpoint_id


def test_the_history_page_offers_a_forks_first_checkpoint_and_never_a_runs_input(case):
    service, _, _, _ = case
    parent, first = _first_fork(case)
    parent_points = forkable(service.timeline(parent))
    assert parent_points and service.timeline(parent)[0] not in parent_points
    timeline = name_fork_origin(service.timeline(first), parent)
    points = forkable(timeline)
    assert points[0] == timeline[0] and points[0]["node"] == f"fork of {parent[:8]}"
    with pytest.raises(ValueError, match="this one is the run's input"):
        service.fork(parent, service.timeline(parent)[0]["checkpoint_id"])
