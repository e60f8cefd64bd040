"""Experiments decide their own approvals, in a real browser (issue 16's first "done
when"): on a design whose data_researcher always asks, an experiment started with the
default finishes with no run waiting; with *Ask a human* it shows its waiting runs, the
inbox groups them under the experiment, one bulk action decides them, and the
experiment is then done with its figures updated."""

from __future__ import annotations

import re
import time
from pathlib import Path

from playwright.sync_api import expect

from graph.kernel.design import Design
from graph.service.eval_sets import Check, EvalQuestion, EvalSet
from graph.service.store import Store
from graph.settings import Settings

TWO = EvalSet(
    name="asking",
    questions=[
        EvalQuestion(
            question="How did Tesla's stock do in 2008?",
            checks=[Check(kind="uses_agents", value=["data_researcher"])],
        ),
        EvalQuestion(question="Why did IBM sell its PC division to Lenovo?"),
    ],
)


def _prepared(home: Path) -> Store:
    store = Store.open(Settings(home=home))
    store.save_eval_set(TWO)
    store.save_design(Design(approvals={"data_researcher": "always"}))
    return store


def _statuses(store: Store, experiment_id: str) -> list[str]:
    return [r["status"] for r in store.experiment_runs(experiment_id)]


def _start(page) -> None:
    page.get_by_role("tab", name="Run an experiment").click()
    page.get_by_role("button", name="Start the experiment").click()
    expect(page.get_by_role("tab", name="Compare variants")).to_have_attribute(
        "aria-selected", "true"
    )


def test_an_experiment_decides_by_default_and_waits_for_a_person_when_asked(
    page, fresh_app_url, tmp_path
):
    store = _prepared(tmp_path)
    page.goto(fresh_app_url + "/evals")
    page.get_by_role("tab", name="Run an experiment").click()
    expect(page.get_by_text("none of the 4 runs waits for a person")).to_be_visible()
    expect(page.get_by_role("radio", name="Decide automatically", exact=False)).to_be_checked()
    _start(page)
    expect(page.get_by_text("Status: done")).to_be_visible(timeout=120_000)
    (auto,) = store.experiments()
    assert _statuses(store, auto.id) == ["done"] * 4  # nobody was asked
    page.goto(fresh_app_url + "/approvals")
    expect(page.get_by_role("button", name="Approve", exact=True)).to_have_count(0)

    page.goto(fresh_app_url + "/evals")
    page.get_by_role("tab", name="Run an experiment").click()
    page.get_by_text("Ask a human", exact=False).click()
    _start(page)
    expect(page.get_by_text("Status: waiting (2 runs wait for a decision)")).to_be_visible(
        timeout=120_000
    )
    expect(page.get_by_text("2 run(s) of this experiment wait for a decision")).to_be_visible()
    # the figures count the runs that ended: one per variant while the other waits
    summary = page.locator("p", has_text="Runs passed:")
    expect(summary).to_contain_text(re.compile(r"\(\d of 1\).*\(\d of 1\)"))
    asked = next(e for e in store.experiments() if e.id != auto.id)
    assert sorted(_statuses(store, asked.id)) == ["done", "done", "waiting", "waiting"]

    page.goto(fresh_app_url + "/approvals")
    expect(page.get_by_text(f"Experiment “{asked.name}”")).to_be_visible()
    page.get_by_role("button", name="Approve all (2)").click()
    expect(page.get_by_text("Approved 2 of 2: their runs go on.")).to_be_visible()
    deadline = time.time() + 60
    while "waiting" in _statuses(store, asked.id) or "queued" in _statuses(store, asked.id):
        assert time.time() < deadline, _statuses(store, asked.id)
        time.sleep(0.2)

    page.goto(fresh_app_url + "/evals")
    page.get_by_role("tab", name="Compare variants").click()
    expect(page.get_by_text("Status: done")).to_be_visible(timeout=30_000)
    expect(page.get_by_text("wait for a decision")).to_have_count(0)
    # ... and, once decided, all four: the figures updated with the approved runs
    expect(page.locator("p", has_text="Runs passed:")).to_contain_text(
        re.compile(r"\(\d of 2\).*\(\d of 2\)")
    )
    assert store.experiment(asked.id).status == "done"
    store.close()
