"""The app's first page loads only what it draws, with the collector held off (issue 33,
point 7): ``streamlit run``'s first script run (the Design page) imports no database
driver, model client, chart library, MCP client or another page's engine modules, runs
no full garbage collection while LangGraph and the app's modules load (one once they
have, ``ui/collector.py``), and leaves the collector on.

A fresh interpreter per test (what is imported, and the collector's state, belong to the
process), the app run by AppTest on a temporary home, offline scripted model, SQLite.
No timing: what is imported, and what the collector did, when."""

from __future__ import annotations

from tests.app.support import ROOT, last_json_line

# Needed only by other pages, a PostgreSQL store, a model server, a chart, an MCP tool
# server or an OpenTelemetry collector; none of them draws the Design page.
NOT_ON_THE_FIRST_PAGE = (
    "psycopg",
    "openai",
    "langchain_openai",
    "altair",
    "pandas",
    "pyarrow",
    "mcp",
    "langchain_mcp_adapters",
    "opentelemetry.exporter",
    "graph.service.experiments",
    "graph.service.judging",
    "graph.service.evals",
    "ui.evals",
    "ui.event_feed",
    "ui.trace_builder",
    "ui.history_view",
)
LOADED = (
    f"sorted(m for m in sys.modules if any(m == n or m.startswith(n + '.') "
    f"for n in {NOT_ON_THE_FIRST_PAGE!r}))"
)
# The app's first script run, with the collector's collections of the oldest generation
# noted once the app's script has begun (``ui`` imported): whether its first run had ended
# by then (``collector.settled``).
FIRST_RUN = f"""
import gc, json, sys
from streamlit.testing.v1 import AppTest
full = []
def note(phase, info):
    if phase == "start" and info["generation"] == 2 and "ui" in sys.modules:
        collector = sys.modules.get("ui.collector")
        full.append(bool(collector and collector.settled()))
gc.callbacks.append(note)
at = AppTest.from_file({str(ROOT / "app.py")!r}, default_timeout=120)
before = len(sys.modules)
at.run()
print(json.dumps({{
    "titles": [t.value for t in at.title],
    "exceptions": [e.value for e in at.exception],
    "loaded": {LOADED},
    "modules": [before, len(sys.modules)],
    "full_collections": full,
    "enabled": gc.isenabled(),
}}))
"""


def _first_run(home, then: str = ""):
    """What the script printed last: the first run's figures, or what ``then`` prints."""
    return last_json_line(home, FIRST_RUN + then)


def test_the_first_page_loads_no_other_pages_modules_database_driver_model_client_or_charts(
    tmp_path,
):
    first = _first_run(tmp_path)
    assert first["titles"] == ["Design"] and first["exceptions"] == []
    assert first["loaded"] == []


def test_the_check_sees_another_pages_modules_once_that_page_is_drawn(tmp_path):
    evals = _first_run(
        tmp_path,
        "at.switch_page('app_pages/evals.py').run()\n"
        "assert not at.exception, [e.value for e in at.exception]\n"
        f"print(json.dumps({LOADED}))\n",
    )
    assert "graph.service.experiments" in evals and "ui.evals" in evals


def test_the_first_run_loads_the_app_with_no_full_collection_and_leaves_the_collector_on(
    tmp_path,
):
    first = _first_run(tmp_path)
    before, after = first["modules"]
    assert after - before > 500  # the run did load LangGraph and the app's modules
    # none while they loaded: only the one collection once the run has ended
    assert first["full_collections"] == [True]
    assert first["enabled"] is True
