"""The History page over runs executed by a LangGraph Server (STEPWISE_SERVER_URL at a
real ``langgraph dev``): the checkpoint timeline is read from the server, and a fork
with an edited plan runs there as a new run, as it does locally."""

import pytest

from graph.kernel.design import Design
from graph.service.server_runs import ServerRunService, thread_of
from graph.settings import get_settings
from tests.app.support import button, open_page, replace_rows

TESLA = "How did Tesla's stock do in 2008?"
NEW_PLAN = {
    "1": {"agent": "web_researcher", "action": "Search the documents for: the 2008 crisis"},
    "2": {"agent": "synthesizer", "action": "Answer from the findings."},
}


@pytest.fixture
def on_server(home, monkeypatch, langgraph_server):
    monkeypatch.setenv("STEPWISE_SERVER_URL", langgraph_server.url)
    get_settings.cache_clear()
    from ui import services

    assert isinstance(services.service(), ServerRunService)
    return services.store(), services.service()


def test_the_timeline_and_a_fork_of_a_server_run_on_the_history_page(on_server):
    store, service = on_server
    run_id = service.start(TESLA, Design())
    assert service.wait(run_id, timeout=60).status == "done"
    at = open_page("app_pages/history.py", run=run_id)
    timeline = next(d.value for d in at.dataframe if "After" in d.value.columns)
    assert list(timeline["After"][:4]) == ["input", "__start__", "planner", "executor"]
    assert len(timeline) == len(service.client.threads.get_history(thread_of(run_id), limit=100))

    point = at.selectbox(key=f"history:fork-point:{run_id}").value
    shown = at.data_editor(key=f"history:change:plan:{point}:table").value
    assert shown["agent"][0] == "data_researcher"  # the plan at that checkpoint, read there
    replace_rows(at, f"history:change:plan:{point}:table", list(NEW_PLAN.values()))
    at.run()
    button(at, "Run on as a new run").click().run()
    new_id = next(r.id for r in store.runs() if r.id != run_id)
    record = service.wait(new_id, timeout=60)
    assert record.status == "done", record.reason
    assert (record.parent_run, record.parent_checkpoint) == (run_id, point)
    assert [r["action"] for r in store.snapshot(new_id)["rows"]] == [
        s["action"] for s in NEW_PLAN.values()
    ]
    assert service.server_runs(new_id)[0]["status"] == "success"  # it ran on the server
