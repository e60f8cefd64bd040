"""The Run page says the question cap, and its question box holds no more than that."""

from tests.app.support import button, open_page


def test_the_run_page_gives_the_cap_and_its_box_holds_no_more(home, services):
    store, service = services
    at = open_page("app_pages/run.py")
    box = at.text_area(key="run:question")
    assert box.max_chars == 20_000
    assert "At most 20,000 characters (STEPWISE_MAX_QUESTION_CHARS)." in box.placeholder
    at.session_state["run:question"] = "q" * 20_001  # a paste past the cap
    at.run()
    button(at, "Run").click().run()
    assert not at.exception and not at.error
    (run,) = store.runs()
    assert len(run.question) == 20_000  # cut by the box, never past what the service takes
    service.wait(run.id, timeout=60)
