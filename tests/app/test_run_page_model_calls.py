"""The Run page shows the model call a live run waits on: the tokens so far and their
rate, so a slow reply reads as progress, not as a hung run."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from graph.models.call_progress import CALLS, WRITING
from graph.models.server_slots import forget_slots
from graph.settings import get_settings
from tests.app.support import open_page, texts, wait_status
from tests.support_procs.fake_server import EchoChatModel, LocalOpenAIServer

pytestmark = pytest.mark.timeout(120)


def _services(home):
    from ui import services as ui_services

    key = str(Path(home).resolve())
    return ui_services._store(key), ui_services._service(key)


def _writing(run_id: str):
    """The run's call once the model has written a few tokens (None until then)."""
    end = time.monotonic() + 60
    while time.monotonic() < end:
        found = [c for c in CALLS.for_run(run_id) if c.state == WRITING and c.tokens >= 3]
        if found:
            return found[0]
        time.sleep(0.05)
    return None


def test_the_run_page_shows_a_call_in_progress_with_its_tokens_and_rate(home, monkeypatch):
    forget_slots()
    with LocalOpenAIServer(EchoChatModel, model_name="echo") as server:
        server.inject(*["steady:0.3"] * 5)  # a word every 0.3 s: the Planner's call is slow
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("STEPWISE_PROVIDER", "openai")
        monkeypatch.setenv("STEPWISE_PLANNER_MODEL", "echo")
        monkeypatch.setenv("STEPWISE_WORKER_MODEL", "echo")
        get_settings.cache_clear()
        store, service = _services(home)  # made after the settings: the model is the server's
        at = open_page("app_pages/run.py")
        at.text_area(key="run:question").input("How did Tesla's stock do in 2008?").run()
        next(b for b in at.button if b.label == "Run").click().run()
        run_id = at.query_params["run"]
        assert _writing(run_id) is not None, "the run's model call never began writing"
        at.run()
        shown = texts(at)
        assert "The model is writing a plan call:" in shown, shown
        line = next(t for t in shown.splitlines() if "The model is writing" in t)
        assert " tokens so far, " in line and " tokens/s (" in line, line
        service.cancel(run_id)
        wait_status(store, run_id, "cancelled", "failed", "done")
        assert CALLS.for_run(run_id) == []
        at.run()
        assert "The model is writing" not in texts(at)
