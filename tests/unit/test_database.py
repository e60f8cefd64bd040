"""Model-written SQL cannot hold a run: budgets, one connection per query, memory caps,
SQLite's own parser for "one statement", and Stop reaching a query in flight
(graph/tools/database.py). Real database files under a temporary STEPWISE_HOME."""

from __future__ import annotations

import json
import resource
import threading
import time

import pytest

from graph.kernel.design import Design
from graph.models.scripted import ScriptedChatModel
from graph.service.run_service import RunService
from graph.settings import get_settings
from graph.stopping import Stopped, stoppable
from graph.tools.database import QueryRefused, open_database, sql_tool

# About 5 s of SQLite work on this machine without a budget (finite, so the code as it
# was ends too and the tests fail instead of hanging).
SLOW_SQL = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 30000000) "
    "SELECT count(*) FROM c"
)
NORMAL_SQL = "SELECT symbol, ROUND(AVG(price), 2) FROM stocks GROUP BY symbol ORDER BY symbol"


@pytest.fixture
def budget(settings, monkeypatch):
    """Set the SQL budgets through the environment, as a user would."""

    def configure(timeout_s: float = 60, max_steps: int = 10**12) -> None:
        monkeypatch.setenv("STEPWISE_SQL_TIMEOUT", str(timeout_s))
        monkeypatch.setenv("STEPWISE_SQL_MAX_STEPS", str(max_steps))
        get_settings.cache_clear()
        open_database.cache_clear()

    return configure


def run_sql(sql: str, max_rows: int = 10):
    return sql_tool(open_database(), max_rows).invoke(
        {"type": "tool_call", "id": "1", "name": "run_sql", "args": {"sql": sql}}
    )


def test_a_query_over_its_time_budget_is_stopped_with_a_sentence_the_model_can_act_on(budget):
    budget(timeout_s=0.5)
    started = time.monotonic()
    message = run_sql(SLOW_SQL)
    assert time.monotonic() - started < 3
    assert message.content.startswith(
        "ERROR: The query ran longer than 0.5 s and was stopped; ask for fewer rows or avoid "
        "recursive queries."
    )
    assert message.artifact == {"sql": SLOW_SQL, "error": message.content.splitlines()[0][7:]}


def test_a_query_over_its_step_budget_is_stopped_whatever_the_clock_says(budget):
    budget(timeout_s=60, max_steps=1_000_000)
    with pytest.raises(QueryRefused, match=r"more than 1,000,000 steps .* avoid recursive"):
        open_database().query(SLOW_SQL, 10)
    assert open_database().query(NORMAL_SQL, 10).rows[0][0] == "AAPL"  # normal work fits


def test_a_slow_query_in_one_run_does_not_make_a_query_in_another_run_wait(budget):
    budget(timeout_s=5)
    slow_result: list = []
    # Far more than 5 s of work, so only the budget ends it, on a fast machine too.
    slower = SLOW_SQL.replace("30000000", "300000000")
    slow = threading.Thread(target=lambda: slow_result.append(run_sql(slower).content))
    slow.start()
    time.sleep(0.3)  # the slow query is under way
    started = time.monotonic()
    normal = open_database().query(NORMAL_SQL, 10)
    waited = time.monotonic() - started
    still_running = slow.is_alive()
    slow.join(30)
    assert len(normal.rows) == 5
    assert waited < 2, f"the normal query waited {waited:.1f} s behind the slow one"
    assert still_running, "the slow query ended too soon for this test to mean anything"
    assert slow_result[0].startswith("ERROR: The query ran longer than 5 s")


def test_memory_hungry_functions_are_refused_by_their_caps_and_memory_stays_flat(settings):
    """Each is refused by a cap with its own reason, not left to run into the query's time
    limit (whose reason is another sentence): the time it takes is not asserted, a loaded
    machine made 2 s of it."""
    peak_before_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for function in ("randomblob", "zeroblob"):
        with pytest.raises(QueryRefused, match=rf"The function {function}\(\) is not allowed"):
            open_database().query(f"SELECT {function}(500000000)", 10)
    # A string grown by other means hits the cap on one value's size, with its reason.
    with pytest.raises(QueryRefused, match=r"grew past 1,000,000 bytes"):
        open_database().query(
            "SELECT length(replace(printf('%.*c', 900000, 'x'), 'x', 'xxxxxxxxxx'))", 10
        )
    # printf padding past the cap gives no value instead of 50 MB.
    assert open_database().query("SELECT length(printf('%.*c', 50000000, 'x'))", 10).rows == [
        [None]
    ]
    # Values under the cap, but many of them: the rows together are refused.
    with pytest.raises(QueryRefused, match=r"rows of the query came to more than 1,000,000"):
        open_database().query("SELECT printf('%.*c', 900000, 'x') FROM stocks", 500)
    growth_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before_kb) / 1024
    assert growth_mb < 100, f"peak memory grew by {growth_mb:.0f} MB"


def test_sqlite_decides_what_one_statement_is_not_a_search_for_semicolons(settings):
    db = open_database()
    assert db.query("SELECT 'a;b' AS s", 10).rows == [["a;b"]]
    assert db.query("SELECT 1 AS one; -- the end; really", 10).rows == [[1]]
    assert db.query("SELECT 1 AS one;", 10).sql == "SELECT 1 AS one"
    for two in ("SELECT 1; DROP TABLE stocks", "SELECT 1; SELECT 2", "SELECT 'a;b'; DELETE FROM x"):
        with pytest.raises(QueryRefused, match="Only one SQL statement may run at a time."):
            db.query(two, 10)
    assert db.query("SELECT COUNT(*) FROM stocks", 10).rows == [[560]]


def test_stop_interrupts_a_query_in_flight_within_two_seconds(budget):
    budget(timeout_s=60)
    event = threading.Event()
    threading.Timer(0.3, event.set).start()
    started = time.monotonic()
    with stoppable(event), pytest.raises(Stopped, match="SQL query"):
        open_database().query(SLOW_SQL, 10)
    assert time.monotonic() - started < 2.3


# About 15 s of work: without Stop reaching it, the run is still at it long after Stop.
BOMB_SQL = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000000) "
    "SELECT count(*) FROM c"
)
_bomb_sent = threading.Event()


class BombingModel(ScriptedChatModel):
    """The scripted model, except that the SQL it writes never ends."""

    def _generate(self, *args, **kwargs):
        result = super()._generate(*args, **kwargs)
        for call in result.generations[0].message.tool_calls:
            if call["name"] == "run_sql":
                call["args"] = {"sql": BOMB_SQL}
                _bomb_sent.set()
        return result


def test_stop_during_a_runaway_query_ends_the_run_cancelled_within_two_seconds(
    budget, store, settings
):
    budget(timeout_s=60)  # only Stop can end this query
    _bomb_sent.clear()
    service = RunService(store, settings, model_factory=lambda role: BombingModel())
    try:
        run_id = service.start(
            "Which stock in the database grew the most between 2005 and 2009?",
            Design(max_replans=1, recursion_limit=40),
        )
        assert _bomb_sent.wait(30), "the data_researcher never ran its query"
        time.sleep(0.5)  # the query is under way
        assert service.is_live(run_id)
        pressed = time.monotonic()
        assert service.cancel(run_id)
        run = service.wait(run_id, timeout=10)
        assert time.monotonic() - pressed < 2
        assert run.status == "cancelled", run.reason
        assert "Cancelled by the user" in run.reason
        # Stop was not turned into a tool error for the model to read and go on from.
        assert "Stopped by the user" not in json.dumps(store.events(run_id), default=str)
    finally:
        service.shutdown()
