"""Each test's tier comes from where it lives and what it needs (``tests/conftest.py``):
``scripts/test.sh --fast`` runs ``-m fast``, so a browser, PostgreSQL, LangGraph Server or
real-model test tiered ``fast`` by mistake would make the quick tier start those servers."""

from __future__ import annotations

import pytest

from tests.support import ROOT

FILES = [
    "tests/unit/test_store.py",  # database_url: SQLite and PostgreSQL parameters
    "tests/unit/test_shared_ledger.py",  # postgres_url
    "tests/app/test_server_page.py",  # foreign_graphs_server
    "tests/app/test_server_history_page.py",  # langgraph_server, through a fixture of its own
    "tests/server/test_served_graphs.py",
    "tests/e2e/test_bus_in_browser.py",
    "tests/e2e/test_slow_server_in_browser.py",  # a browser on the slowed real model
    "tests/e2e/test_user_agent_on_the_real_server_in_browser.py",  # a browser, the real model
    "tests/app/test_run_page_full_database.py",  # a PostgreSQL server of its own
    "tests/realmodel/test_real_server.py",
    "tests/realmodel/test_bus_user_agent_real_server.py",  # also the time MCP server
    "tests/unit/test_secrets.py",
    "tests/unit/test_cli.py",  # starts the CLI's own processes
    "tests/unit/test_database_restart.py",  # a PostgreSQL server of its own
    "tests/unit/test_bus_user_agents.py",  # the time MCP server over stdio
]
TIERS = {"fast", "processes", "browser", "postgres", "server", "realmodel"}


class _Markers:
    """Collects each collected test's tier markers."""

    def __init__(self) -> None:
        self.tiers: dict[str, set[str]] = {}

    def pytest_collection_finish(self, session) -> None:
        for item in session.items:
            self.tiers[item.nodeid] = {m.name for m in item.iter_markers()} & TIERS


@pytest.fixture(scope="module")
def tiers() -> dict[str, set[str]]:
    """The tiers of the tests in ``FILES``, as a real collection of them gives them."""
    markers = _Markers()
    code = pytest.main(
        ["--collect-only", "-q", "-p", "no:cacheprovider", "--rootdir", str(ROOT)]
        + [str(ROOT / f) for f in FILES],
        plugins=[markers],
    )
    assert code == 0, code
    return markers.tiers


def _of(tiers: dict[str, set[str]], part: str) -> list[set[str]]:
    found = [t for nodeid, t in tiers.items() if part in nodeid]
    assert found, f"no test collected matching {part}"
    return found


def test_every_test_has_exactly_one_tier_or_several_slow_ones(tiers):
    assert all(t and ("fast" not in t or t == {"fast"}) for t in tiers.values()), tiers


def test_a_store_test_is_fast_on_sqlite_and_postgres_on_postgresql(tiers):
    assert all(t == {"fast"} for t in _of(tiers, "[sqlite]"))
    assert all(t == {"postgres"} for t in _of(tiers, "[postgresql]"))
    assert _of(tiers, "test_a_lost_postgresql_connection_is_opened_again") == [{"postgres"}]
    assert _of(tiers, "test_a_side_effect_recorded_on_one_machine_is_found_from_another") == [
        {"postgres"}
    ]


def test_tests_needing_a_langgraph_server_are_server_wherever_they_live(tiers):
    on_page = _of(tiers, "tests/app/test_server_page.py")
    assert on_page.count({"server"}) == 10 and on_page.count({"fast"}) == 2, on_page
    assert all(t == {"server"} for t in _of(tiers, "tests/app/test_server_history_page.py"))
    assert all(t == {"server"} for t in _of(tiers, "tests/server/"))


def test_browser_and_real_model_tests_are_never_fast(tiers):
    assert all(t == {"browser"} for t in _of(tiers, "test_bus_in_browser.py"))
    # the three systems' runs on the slowed server: in the whole suite's server part
    slow = _of(tiers, "test_slow_server_in_browser")
    assert slow == [{"browser", "realmodel"}] * 3, slow
    # clock defined in the browser, run on the suite's llama.cpp server
    assert _of(tiers, "test_user_agent_on_the_real_server") == [{"browser", "realmodel"}]
    assert all(t == {"realmodel"} for t in _of(tiers, "tests/realmodel/"))


def test_a_plain_unit_test_is_fast(tiers):
    assert all(t == {"fast"} for t in _of(tiers, "test_secrets.py"))


def test_tests_starting_processes_or_their_own_postgresql_are_never_fast(tiers):
    assert all(t == {"processes"} for t in _of(tiers, "tests/unit/test_cli.py"))
    assert all(t == {"processes"} for t in _of(tiers, "test_bus_user_agents.py"))
    assert all(t == {"postgres"} for t in _of(tiers, "test_database_restart.py"))
    assert _of(tiers, "test_run_page_full_database.py") == [{"postgres"}]
