"""The Evals page in a real browser: an eval set edited as JSON, an experiment of two
Planner versions started and watched to its end, the comparison table read, and a
screenshot of it (evals.png in ``SHOTS``, see ``tests/e2e/conftest.py``).

The server is the test's own (fresh home), so the experiment's runs stay out of the
other browser tests' History.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from playwright.sync_api import expect

import graph.plan_execute  # noqa: F401  (declares the prompts read below)
from graph.prompts import default_text
from graph.service.store import Store
from graph.settings import Settings
from tests.e2e.conftest import SHOTS

PLANNER = "plan_execute/planner"
CHART = "Which stock in the database grew the most between 2005 and 2009? Chart the prices."
IBM = "Why did IBM sell its PC division to Lenovo?"
TWO_QUESTIONS = {
    "name": "two questions",
    "description": "A chart from the database; a question for the documents.",
    "questions": [
        {
            "question": CHART,
            "checks": [
                {"kind": "answer_contains", "value": "AAPL"},
                {"kind": "uses_agents", "value": ["data_researcher"]},
            ],
        },
        {"question": IBM, "checks": [{"kind": "answer_contains", "value": "kb:ibm-lenovo-2005"}]},
    ],
}


def _planner_versions(home: Path) -> None:
    """Two Planner versions, as the Prompts page saves them (neither made active): one
    that only asks for short plans, and one whose agent line leaves data_researcher out,
    which the scripted planner obeys."""
    store = Store.open(Settings(home=home))
    text = default_text(PLANNER)
    store.save_prompt_version(PLANNER, "short plans", text + "\nPrefer short plans.\n")
    store.save_prompt_version(
        PLANNER,
        "no data researcher",
        text.replace(
            '"agent" must be one of: {agent_names}',
            '"agent" must be one of: web_researcher, synthesizer',
        ),
    )
    store.close()


def _pick(page, key: str, option: str) -> None:
    """Choose an option of the selectbox with this widget key."""
    page.locator(f".st-key-{key}").click()
    page.get_by_role("option", name=option, exact=True).click()
    expect(page.locator(f".st-key-{key} input")).to_have_value(option)


def _label(page, key: str, start: str) -> str:
    """The full text of the option of this selectbox that starts with ``start``."""
    page.locator(f".st-key-{key}").click()
    # the list opens after the click: read it once it is there (it was read empty on a
    # busy machine)
    expect(
        page.get_by_role("option", name=re.compile("^" + re.escape(start))).first
    ).to_be_visible()
    options = page.get_by_role("option").all_inner_texts()
    page.keyboard.press("Escape")
    return next(o for o in options if o.startswith(start))


def _type(page, key: str, text: str) -> None:
    box = page.locator(f".st-key-{key} input")
    box.fill(text)
    box.press("Enter")


def _fits(page, element) -> None:
    """The element needs no sideways scrolling, once the page has laid it out (a grid
    sizes its columns after it is drawn: read again for up to 10 s)."""
    deadline = time.time() + 10
    while True:
        scroll, client = element.evaluate("e => [e.scrollWidth, e.clientWidth]")
        if scroll <= client:
            return
        assert time.time() < deadline, (scroll, client)
        page.wait_for_timeout(250)


def _table(page, key: str) -> tuple[list[str], list[list[str]]]:
    """A dataframe's column titles (lowest header row) and cell texts, as rendered."""
    frame = page.locator(f".st-key-{key}")
    expect(frame.locator("tbody tr").first).to_be_attached()  # the grid has drawn its rows
    headers = frame.locator("thead tr").last.locator("th").all_inner_texts()
    rows = [tr.locator("td").all_inner_texts() for tr in frame.locator("tbody tr").all()]
    return headers, rows


def test_an_experiment_of_two_planner_versions_runs_from_the_page_and_is_compared(
    page, fresh_app_url, tmp_path
):
    _planner_versions(tmp_path)
    page.goto(fresh_app_url + "/evals")
    page.get_by_role("button", name="Save the starter set").click()
    expect(page.get_by_text("Saved the starter set")).to_be_visible()

    page.get_by_text("Edit the questions and checks (JSON)").click()
    editor = page.locator(".st-key-evals-editor-starter textarea")
    editor.fill(json.dumps(TWO_QUESTIONS, indent=2))
    editor.press("Control+Enter")
    expect(page.get_by_text("Saving stores a new eval set “two questions”")).to_be_visible()
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_text("Saved “two questions”: 2 question(s), 3 check(s).")).to_be_visible()

    page.get_by_role("tab", name="Run an experiment").click()
    expect(page.locator(".st-key-evals-exp-set input")).to_have_value("two questions")
    _type(page, "evals-variant-0-name", "short plans")
    _pick(page, "evals-variant-0-planner", _label(page, "evals-variant-0-planner", "short plans"))
    _type(page, "evals-variant-1-name", "no data")
    expect(page.locator(".st-key-evals-variant-1-planner input")).to_have_value(
        re.compile(r"^no data researcher · saved ")
    )
    page.get_by_role("button", name="Add a variant").click()
    _type(page, "evals-variant-2-name", "shipped")
    _pick(page, "evals-variant-2-planner", _label(page, "evals-variant-2-planner", "shipped"))
    expect(page.get_by_text("2 question(s) × 3 variants × 1 repeat(s) = 6 runs")).to_be_visible()
    page.get_by_role("button", name="Start the experiment").click()

    # The page moves to the comparison tab and shows the progress until the runs end.
    expect(page.get_by_role("tab", name="Compare variants")).to_have_attribute(
        "aria-selected", "true"
    )
    expect(page.get_by_text("runs finished")).to_be_visible()
    expect(page.get_by_role("button", name="Stop")).to_be_visible()
    expect(page.locator(".st-key-evals-comparison")).to_be_visible(timeout=120_000)
    expect(page.get_by_role("button", name="Stop")).to_have_count(0)

    # Three variants side by side at 1440 px, with no sideways scrolling (issue #16)
    page.set_viewport_size({"width": 1440, "height": 900})
    comparison = page.locator(".st-key-evals-comparison [data-testid=stTable]")
    expect(comparison).to_be_visible()
    _fits(page, comparison)
    headers, rows = _table(page, "evals-comparison")
    assert headers == ["No.", "Question", "short plans (baseline)", "no data", "shipped"]
    assert [r[1] for r in rows] == [CHART, IBM]  # each question once, in full
    # Only the Planners that may plan data_researcher answer from the database; the
    # regression is marked against the baseline by an arrow, not by colour alone.
    assert rows[0][2].startswith("✓ passed") and rows[0][4].startswith("✓ passed")
    # One run each: a failed run is said, but no difference is called from one run (#27).
    assert rows[0][3].startswith("✗ failed") and "▼" not in rows[0][3]
    assert rows[1][2].startswith("✓ passed") and rows[1][3].startswith("✓ passed")
    for table in ("evals-summary", "evals-checks"):  # the other two tables fit too
        _fits(page, page.locator(f".st-key-{table} [data-testid=stTable]").first)
    headers, rows = _table(page, "evals-checks")
    assert headers == ["No.", "Question", "Check", "short plans", "no data", "shipped"]
    assert rows[0][1] == CHART and [c.strip() for c in rows[1][:5]] == [
        "1.2",
        "",  # the question once, on its first check's row (an empty cell reads as a space)
        "uses data_researcher",
        "✓",
        "✗",
    ]
    headers, rows = _table(page, "evals-summary")
    summary = {r[0]: dict(zip(headers, r)) for r in rows}
    # 2 of 2 against 1 of 2: the interval of the difference still holds zero
    assert summary["pass rate"]["no data vs short plans"] == "no clear difference (2 runs each)"
    assert summary["pass rate"]["short plans"] == "100% [34% – 100%] (2 of 2 runs)"

    side = page.locator(".st-key-evals-side-b")  # the "no data" run of the chart question
    expect(side).to_contain_text("web_researcher")

    SHOTS.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": 1400, "height": 1750})
    page.locator("h1").first.scroll_into_view_if_needed()
    page.wait_for_timeout(800)  # let the tables and charts finish drawing
    page.screenshot(path=str(SHOTS / "evals.png"))

    # Its runs are ordinary runs: the link opens one on the Run page.
    side.get_by_role("link", name="Open it on the Run page").click()
    page.wait_for_url(lambda url: "/run?run=" in url)
    expect(page.get_by_role("heading", name="Run", exact=True)).to_be_visible()
    expect(page.locator(".st-key-run-answer").get_by_text("Answer to")).to_be_visible()
