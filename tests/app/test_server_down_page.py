"""With runs on a LangGraph Server that is down (STEPWISE_SERVER_URL at a closed port):
the sidebar and the Run page say so in one sentence, and the question stays in its box
(no run is recorded that the server never saw)."""

from graph.settings import get_settings
from tests.app.support import button, open_page, texts

QUESTION = "What was Apple's revenue in 2023?"
DOWN = "http://127.0.0.1:9"


def test_a_run_asked_of_a_server_that_is_down_says_so_and_is_kept(home, monkeypatch):
    monkeypatch.setenv("STEPWISE_SERVER_URL", DOWN)
    get_settings.cache_clear()
    at = open_page("app_pages/run.py")
    said = f"The LangGraph Server at {DOWN} did not answer"
    assert "Runs execute on the LangGraph Server" in texts(at)
    assert any(said in w.value for w in at.sidebar.warning)

    at.text_area(key="run:question").input(QUESTION).run()
    button(at, "Run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    (error,) = [e.value for e in at.error if said in e.value]
    assert "nothing was lost" in error
    assert at.text_area(key="run:question").value == QUESTION  # still there to run again
    from ui import services

    assert services.store().runs() == []
