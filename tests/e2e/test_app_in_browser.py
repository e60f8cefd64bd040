"""The app in a real browser: design, prompts, a run watched live, a reload mid-run.

Each test leaves a screenshot of its page in ``SHOTS`` (see ``tests/e2e/conftest.py``).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from playwright.sync_api import expect

from graph.service.store import FILE_NAME, Store
from tests.e2e.conftest import SHOTS

CHART_QUESTION = (
    "Which stock in the database grew the most between 2005 and 2009? Chart the prices."
)
ANSWERED = "answer assembled by rules"  # the scripted synthesizer's closing line


def _shoot(page, name: str, height: int = 1000) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": 1400, "height": height})
    page.locator("h1").first.scroll_into_view_if_needed()
    page.wait_for_timeout(600)  # let the graph and chart finish drawing
    page.screenshot(path=str(SHOTS / name))


def _answer(page):
    return page.locator(".st-key-run-answer").get_by_text(ANSWERED)


def _graph_node(page, name: str):
    titles = page.locator('[data-testid="stGraphVizChart"] svg g.node title')
    return titles.filter(has_text=re.compile(rf"^{name}$"))


def _step_statuses(page) -> list[str]:
    table = page.locator('[data-testid="stTable"]').first
    return [s.strip() for s in table.locator("tbody tr td:nth-child(4)").all_inner_texts()]


def _run_in_url(url: str) -> str | None:
    found = re.search(r"[?&]run=([0-9a-f]{32})", url)
    return found.group(1) if found else None


def _click_run(page) -> str:
    """Press Run; the new run's id, once the page has put it in the address."""
    # The page shows the newest earlier run, if any, and puts it in the address once its
    # script has drawn "Run to watch": read before that, an old run would pass for the new.
    page.wait_for_function(
        "() => /[?&]run=[0-9a-f]{32}/.test(location.search)"
        " || document.body.innerText.includes('No runs yet')"
    )
    before = _run_in_url(page.url)
    page.get_by_role("button", name="Run", exact=True).click()
    page.wait_for_url(lambda url: _run_in_url(url) not in (None, before))
    return _run_in_url(page.url)


def test_unticking_an_agent_removes_its_node_from_the_drawn_graph(page, app_url):
    page.goto(app_url)
    expect(_graph_node(page, "web_researcher")).to_have_count(1)
    web = page.locator('[data-testid="stCheckbox"]').filter(has_text="web_researcher")

    web.click()
    expect(_graph_node(page, "web_researcher")).to_have_count(0)
    expect(_graph_node(page, "data_researcher")).to_have_count(1)

    page.reload()  # the design is kept in the store, not in the browser session
    expect(page.get_by_role("checkbox", name="web_researcher")).not_to_be_checked()
    expect(_graph_node(page, "web_researcher")).to_have_count(0)

    web.click()  # back to the full design for the other tests
    expect(_graph_node(page, "web_researcher")).to_have_count(1)
    _shoot(page, "design.png", height=1500)


def test_editing_the_planner_prompt_changes_the_preview_and_saves_a_listed_version(page, app_url):
    page.goto(app_url + "/prompts")
    editor = page.locator('[data-testid="stTextArea"] textarea')
    preview = page.locator('.st-key-prompt-preview [data-testid="stCode"]')
    expect(preview).to_contain_text("You are the **Planner**")
    added = "Prefer plans of three steps or fewer."
    expect(preview).not_to_contain_text(added)
    # Read the editor once it shows the template: on CI (2 cores, busy) it was read empty
    # once while the preview already showed the template, and the edit became the one line.
    expect(editor).to_have_value(re.compile(r"You are the \*\*Planner\*\*"))

    editor.fill(editor.input_value() + f"\n{added}\n")
    editor.press("Control+Enter")
    expect(preview).to_contain_text(added)
    changes = page.locator(".st-key-prompt-preview-changes table.prompt-diff")
    expect(changes.locator("td.diff-new")).to_contain_text([added])  # as written, no "+"
    expect(changes).not_to_contain_text(f"+{added}")
    assert editor.bounding_box()["height"] >= 600  # a large editor

    page.get_by_label("Version name").fill("three steps")
    page.get_by_label("Version name").press("Enter")
    page.get_by_role("button", name="Save version").click()
    versions = page.locator('[data-testid="stTable"]').first
    expect(versions).to_contain_text("three steps")
    expect(versions).to_contain_text("active")
    _shoot(page, "prompts.png", height=1500)

    page.get_by_role("button", name="Reset to shipped default").click()
    expect(page.get_by_text("Active: the shipped default")).to_be_visible()


def test_a_run_fills_the_step_table_row_by_row_then_shows_the_final_answer(page, app_url):
    page.goto(app_url + "/run")
    page.get_by_role("button", name=CHART_QUESTION).click()
    expect(page.get_by_label("Question")).to_have_value(CHART_QUESTION)
    _click_run(page)

    seen: list[tuple[str, ...]] = []
    deadline = time.time() + 60
    while time.time() < deadline:
        statuses = tuple(_step_statuses(page))
        if statuses and (not seen or seen[-1] != statuses):
            seen.append(statuses)
        if statuses and all(s == "done" for s in statuses):
            break
        page.wait_for_timeout(100)
    done_counts = [sum(s == "done" for s in statuses) for statuses in seen]
    assert seen and all(s == "done" for s in seen[-1]), seen
    assert len(set(done_counts)) >= 3, f"the table did not fill step by step: {seen}"
    assert done_counts == sorted(done_counts), seen
    assert any("running" in statuses for statuses in seen), seen

    expect(_answer(page)).to_be_visible(timeout=20_000)
    expect(page.locator('[data-testid="stVegaLiteChart"]').first).to_be_visible()
    # The graph was drawn again as each node started. Its renderer's tweens are off
    # (ui/graph_fit.py): with them, every redraw worked out points along every edge for an
    # animation never played, 40% of the browser's script time on a live page.
    tweens = page.evaluate(
        """() => {
        const chart = document.querySelector('[data-testid="stGraphVizChart"]');
        const renderer = chart && chart.__graphviz__;
        return renderer ? [renderer._options.tweenPaths, renderer._options.tweenShapes] : null;
        }"""
    )
    assert tweens == [False, False], f"the graph's renderer still tweens: {tweens}"
    _shoot(page, "run.png", height=1900)


def test_reloading_mid_run_finds_the_run_again_and_it_finishes(page, app_url, app_home):
    page.goto(app_url + "/run")
    box = page.get_by_label("Question")
    box.fill(CHART_QUESTION)
    box.press("Control+Enter")
    expect(box).to_have_value(CHART_QUESTION)
    # paced, so it is surely still going when the reloaded page (slow under load) looks
    page.get_by_role("combobox", name="Pace").click()
    page.get_by_role("option", name="1 s per node").click()
    expect(page.get_by_role("combobox", name="Pace")).to_have_value("1 s per node")
    page.wait_for_timeout(300)
    run_id = _click_run(page)
    expect(page.locator('[data-testid="stTable"]').first).to_contain_text("running")

    page.reload()
    assert f"run={run_id}" in page.url
    expect(page.get_by_role("combobox", name="Run to watch")).to_have_value(
        re.compile(re.escape(CHART_QUESTION[:40]))
    )
    # The reloaded page found the run while it was still going, and follows it to its end.
    expect(page.get_by_text(re.compile(r"^status running"))).to_be_visible()
    expect(_answer(page)).to_be_visible(timeout=30_000)
    expect(page.get_by_text(re.compile(r"^status done"))).to_be_visible()
    assert set(_step_statuses(page)) == {"done"}
    store = Store(Path(app_home) / FILE_NAME)
    assert store.run(run_id).status == "done", [(r.id, r.status, r.question) for r in store.runs()]
    store.close()


def test_a_bookmarked_run_page_opens_inside_the_app_on_a_fresh_server(page, fresh_app_url):
    page.goto(fresh_app_url + "/run")  # the server's very first request is not the home page
    expect(page.get_by_role("heading", name="Run", exact=True)).to_be_visible()
    sidebar = page.locator('[data-testid="stSidebar"]')
    expect(sidebar).to_contain_text("offline scripted model")
    expect(sidebar.get_by_role("link", name="Design")).to_be_visible()
    expect(sidebar.get_by_role("link", name="app", exact=True)).to_have_count(0)


def test_after_switching_system_one_timeout_choice_is_shown_chosen(page, app_url):
    """Issue #28: after a switch of system neither "When nobody decides in time" option
    was chosen until a reload (the browser held the other system's option words)."""

    def chosen() -> list[bool]:
        group = page.get_by_role("radiogroup", name="When nobody decides in time")
        expect(group.get_by_role("radio")).to_have_count(2)
        return [r.is_checked() for r in group.get_by_role("radio").all()]

    page.goto(app_url)
    system = page.get_by_role("radiogroup", name="System")
    expect(system).to_be_visible()
    for title in ("Supervisor + message bus", "Hierarchical teams", "Planner / Executor"):
        system.get_by_text(title, exact=True).click()
        expect(page.get_by_role("radio", name=title)).to_be_checked()
        expect(page.locator('[data-testid="stApp"]')).to_have_attribute(
            "data-test-script-state", "notRunning"
        )
        assert chosen().count(True) == 1, title
