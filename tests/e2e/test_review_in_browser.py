"""Blind review in a real browser (issue 27, point 3): six pairs of an experiment judged
with the keyboard only, no variant's name anywhere on the page before the last choice,
then the win rates with their intervals, exported as CSV and JSON.

The experiment is run before the server starts, on the server's own fresh home, by the
same run service the app uses (the offline scripted model)."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

from playwright.sync_api import expect

import graph.plan_execute  # noqa: F401  (declares the prompts read below)
from graph.prompts import default_text
from graph.service.eval_sets import EvalQuestion, EvalSet
from graph.service.experiment_variants import Variant
from graph.service.experiments import ExperimentRunner
from graph.service.human_reviews import HumanReviews
from graph.service.run_service import RunService
from graph.service.store import Store
from graph.settings import Settings
from tests.e2e.conftest import serve

PLANNER = "plan_execute/planner"
CHART = "Which stock in the database grew the most between 2005 and 2009? Chart the prices."
IBM = "Why did IBM sell its PC division to Lenovo?"
VARIANTS = ("shipped prompts", "planner without data")
KEYS = ["a", "b", "t", "a", "x", "b"]
CHOICES = {"a": "A", "b": "B", "t": "tie", "x": "both bad"}


def _experiment(home: Path) -> str:
    settings = Settings(home=home, provider="scripted")
    store = Store.open(settings)
    service = RunService(store, settings, timeout_tick_s=0)
    try:
        version = store.save_prompt_version(
            PLANNER,
            "no data",
            default_text(PLANNER).replace(
                '"agent" must be one of: {agent_names}',
                '"agent" must be one of: web_researcher, synthesizer',
            ),
        )
        eval_set = EvalSet(
            name="review", questions=[EvalQuestion(question=CHART), EvalQuestion(question=IBM)]
        )
        runner = ExperimentRunner.of(service)
        experiment_id = runner.start(
            "blind test",
            eval_set,
            [Variant(name=VARIANTS[0]), Variant.from_versions(store, VARIANTS[1], [version.id])],
            repeats=3,
        )
        assert runner.wait(experiment_id, timeout=180).status == "done"
        return experiment_id
    finally:
        service.shutdown()
        store.close()


def _idle(page) -> None:
    expect(page.locator('[data-testid="stApp"]')).to_have_attribute(
        "data-test-script-state", "notRunning"
    )


def test_six_pairs_reviewed_with_the_keyboard_only_then_win_rates_exported(page, tmp_path):
    experiment_id = _experiment(tmp_path)
    with serve(tmp_path) as url:
        page.goto(url + "/evals")
        tab = page.get_by_role("tab", name="Review blind")
        # the first script run of a fresh server imports the engine: slow on busy cores
        expect(tab).to_be_visible(timeout=60_000)
        tab.click()
        progress = page.locator(".st-key-evals-review-progress")
        for number, key in enumerate(KEYS, start=1):
            expect(progress).to_contain_text(f"{number} of 6")
            _idle(page)
            shown = page.locator("body").inner_text()
            for name in VARIANTS:
                assert name not in shown, f"{name!r} shown before choice {number}"
            expect(page.get_by_text("Answer A", exact=True)).to_be_visible()
            expect(page.get_by_text("Answer B", exact=True)).to_be_visible()
            page.keyboard.press(key)
        expect(progress).to_contain_text("All 6 pairs judged")
        results = page.locator(".st-key-evals-review-results")
        expect(results).to_contain_text(VARIANTS[1])
        expect(results).to_contain_text("Win rate (interval)")
        expect(results).to_contain_text("% to ")  # "67% (21% to 94%)"
        expect(page.get_by_text(re.compile("^Against the baseline “"))).to_contain_text(
            "Wilson score interval"
        )

        files = {}
        for label in (
            "Export the judgements (CSV)",
            "Export the judgements and win rates (JSON)",
        ):
            button = page.get_by_role("button", name=label)
            button.focus()
            with page.expect_download() as download:
                page.keyboard.press("Enter")
            saved = tmp_path / download.value.suggested_filename
            download.value.save_as(saved)
            files[label] = saved.read_text()

    store = Store.open(Settings(home=tmp_path))
    kept = HumanReviews(store).pair_judgements(experiment_id)
    assert [j.choice for j in kept] == [CHOICES[k] for k in KEYS]
    rows = list(csv.DictReader(files["Export the judgements (CSV)"].splitlines()))
    assert [r["choice"] for r in rows] == [CHOICES[k] for k in KEYS]
    document = json.loads(files["Export the judgements and win rates (JSON)"])
    (rate,) = document["win_rates"]
    assert rate["variant"] == VARIANTS[1] and rate["pairs"] == 6
    assert rate["ties"] == 1 and rate["both_bad"] == 1
    assert 0.0 <= rate["low"] <= rate["win_rate"] <= rate["high"] <= 1.0
