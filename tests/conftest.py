"""Shared test setup: every test session gets its own STEPWISE_HOME and no model endpoint,
and every test its tier marker (``tiers``).

Set before any test imports the engine, because ``get_settings()`` reads the
environment once per process.
"""

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

_HOME = tempfile.mkdtemp(prefix="stepwise-test-")
os.environ["STEPWISE_HOME"] = _HOME
atexit.register(shutil.rmtree, _HOME, ignore_errors=True)  # the suite leaves nothing behind
for _var in (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "TAVILY_API_KEY",
    "STEPWISE_PROVIDER",
    "STEPWISE_STRUCTURED_OUTPUT",
    # no trace leaves a test unless the test asks (OpenTelemetry, LangSmith)
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
    "LANGSMITH_TRACING",
    "LANGCHAIN_TRACING_V2",
):
    os.environ.pop(_var, None)


import pytest  # noqa: E402

import graph.registry  # noqa: E402,F401  (the shipped systems, as the app and the CLI have them)

# The tiers, told from where a test lives and which fixtures it needs (directly or through
# other fixtures), so a new test is tiered without anyone marking it. A test in none of the
# slow tiers is ``fast``: what ``scripts/test.sh --fast`` runs.
TIER_FOLDERS = {
    ROOT / "tests" / f: t
    for f, t in (("e2e", "browser"), ("realmodel", "realmodel"), ("server", "server"))
}
# Modules whose tests start Python processes of their own (the CLI, worker processes, app
# processes killed or frozen mid-run): seconds a test, 40% of the fast tier's time before
# they were tiered apart. Listed here, not marked in each file, like the folders above.
TIER_MODULES = {
    ROOT / "tests" / "unit" / f"{m}.py": "processes"
    for m in (
        "test_cli",
        "test_cli_imports",
        "test_run_processes",
        "test_side_effects",
        "test_leases",
        "test_event_log",
        "test_restart",
        "test_frozen_owner",
        "test_disk_full",
        "test_mcp_stdio",  # starts MCP servers over stdio
        # user agents whose tools come from MCP servers the tests start (the time server
        # over stdio, the counting server over HTTP) or from the CLI's own process
        "test_user_agents",
        "test_user_agent_gate",
        "test_bus_user_agents",
        "test_bus_user_agent_gate",
        "test_cli_user_agents",
        "test_bind_address",  # starts the Streamlit app (5 s)
        "test_tool_gate_resume",  # a run service in a process of its own, SIGKILLed (24 s)
        "test_mcp_safety",  # the echo MCP server over stdio
    )
}
# the Tools page's test with a stdio MCP server: the page starts it
TIER_MODULES[ROOT / "tests" / "app" / "test_tools_stdio_page.py"] = "processes"
# the app's first script run in fresh interpreters (what it imports, what it freezes)
TIER_MODULES[ROOT / "tests" / "app" / "test_first_page.py"] = "processes"
# Single tests that start processes importing the engine, in modules whose other tests do
# not (node ids; seconds measured alone on the loaded 2-core machine, 2026-12-03).
TIER_TESTS = {
    test: "processes"
    for test in (
        # a run in an app-like process SIGKILLed mid-step (killed_mid_run), 9 s
        "tests/app/test_run_page.py::"
        "test_a_run_killed_mid_step_shows_interrupted_and_resume_finishes_it",
        # a second process opens the store after a "restart", 22 s
        "tests/unit/test_model_profiles.py::"
        "test_a_typed_key_is_kept_in_memory_only_and_gone_after_a_restart",
        # the fake server's command line, 12 s
        "tests/unit/test_local_server.py::test_cli_serves_echo_model",
        # the CLI against the fake server, both processes, 4 s
        "tests/unit/test_local_server.py::test_cli_scripted_model_plays_the_systems_rules",
        # a worker process asks for the typed key over its socket, 3 s
        "tests/unit/test_model_profiles.py::test_a_worker_process_gets_a_typed_key_over_its_socket",
        # another process migrates the store meanwhile, 2 s
        "tests/unit/test_schema.py::test_a_store_opening_while_another_process_migrates_waits_for_it",
    )
}
TIER_FIXTURES = {
    "browser": "browser",
    "page": "browser",
    "postgres": "postgres",
    "postgres_url": "postgres",
    "own_postgres": "postgres",  # a server of the test's own (tests/unit/test_database_restart)
    "langgraph_server": "server",
    "phoenix": "server",
    "foreign_graphs_server": "server",
    "llama": "realmodel",
    "slow_llama": "realmodel",
}


def tiers(item: pytest.Item) -> set[str]:
    """The slow tiers ``item`` belongs to (none: it is fast)."""
    folders = Path(item.path).resolve().parents
    found = {tier for folder, tier in TIER_FOLDERS.items() if folder in folders}
    if tier := TIER_MODULES.get(Path(item.path).resolve()):
        found.add(tier)
    if tier := TIER_TESTS.get(item.nodeid.split("[")[0]):
        found.add(tier)
    found.update(TIER_FIXTURES[f] for f in getattr(item, "fixturenames", ()) if f in TIER_FIXTURES)
    callspec = getattr(item, "callspec", None)
    # database_url asks for the PostgreSQL server at run time (getfixturevalue), unseen above
    if callspec is not None and callspec.params.get("database_url") == "postgresql":
        found.add("postgres")
    return found


# The slowed model server's runs (minutes each, mostly waiting on the throttled server) run
# beside the other tiers in the whole suite (scripts/test.sh): marked here.
LANE_FIXTURES = {"slow_llama": "slowmodel"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        for tier in sorted(tiers(item)) or ["fast"]:
            item.add_marker(tier)
        names = getattr(item, "fixturenames", ())
        for fixture, lane in LANE_FIXTURES.items():
            if fixture in names:
                item.add_marker(lane)


@pytest.fixture(scope="session")
def llama():
    """A real OpenAI-compatible server running a real small model, for the whole session
    (started on first use): ``tests/support_procs/llama_server.py``.

    One thread, at a higher priority than the suite's other processes (nice -5 as root):
    the whole suite runs these tests beside its other tiers (scripts/test.sh). With the
    prompt cache on, one thread answers a planner's call nearly as fast as two (1.47 and
    1.12 s against 1.38 and 0.98 s, 120 and 80 tokens) on about 60% of the CPU; two
    threads wait for each other at every step, so beside other work one test took 821 s
    instead of 95, and the real-model tests had to run alone, last (2026-12-04)."""
    from tests.support_procs import llama_server

    server = llama_server.start(threads=1, nice=-5)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def slow_llama():
    """The same server and model slowed as a laptop's would be, so its calls take tens of
    seconds: one thread, running half the time (``throttle``: a CPU half as fast), with the
    server's own defaults (no cache of earlier prompts: every prompt is read whole).
    Started on first use for the whole session, for the runs at the default settings.
    At a higher priority than the suite's other processes (nice -5 as root): the whole suite
    runs these beside its other tiers (scripts/test.sh), and with them keeping both cores
    busy its one thread got a third of its half (plan_execute 961 s, 332 s alone); the
    throttle, not the load, is to set its pace."""
    from tests.support_procs import llama_server

    server = llama_server.start(threads=1, cache=False, nice=-5)
    server.throttle(0.5)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL server for the whole session, in a temporary folder on loopback
    (started on first use, stopped at the end): ``tests/support_procs/postgres_server.py``."""
    from tests.support_procs import postgres_server

    server = postgres_server.start()
    yield server
    server.stop()


@pytest.fixture
def postgres_url(postgres) -> str:
    """A new empty database on that server, dropped after the test."""
    url = postgres.create_database()
    yield url
    postgres.drop_database(url)


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request) -> str | None:
    """Run a store test twice: on SQLite files under tmp_path (None: the embedded
    default) and on a fresh database of the real PostgreSQL server."""
    if request.param == "sqlite":
        return None
    return request.getfixturevalue("postgres_url")


def assert_backend(home, database_url: str | None) -> None:
    """The store and the checkpoints really are where ``database_url`` says: in
    PostgreSQL (no SQLite store or checkpoint file under ``home``), or in those files."""
    files = {name: (home / name).exists() for name in ("stepwise.sqlite", "checkpoints.sqlite")}
    if database_url:
        assert not any(files.values()), f"SQLite files made on PostgreSQL: {files}"
    else:
        assert all(files.values()), files


@pytest.fixture(scope="session")
def foreign_graphs_server():
    """A real ``langgraph dev`` serving ``tests/server_graphs/`` (graphs Stepwise did not
    define), for the whole session (started on first use): ``tests/support_procs/langgraph_dev.py``."""
    from tests.support_procs import langgraph_dev

    server = langgraph_dev.start()
    yield server
    server.stop()
    shutil.rmtree(server.home, ignore_errors=True)


@pytest.fixture(scope="session")
def langgraph_server(tmp_path_factory):
    """``langgraph dev`` serving the repository's ``langgraph.json`` on loopback, offline, in
    a home of its own, for the whole session (started on first use, stopped at the end):
    ``tests/support_procs/langgraph_server.py``. Its ``url`` is for ``langgraph-sdk``."""
    from tests.support_procs import langgraph_server

    server = langgraph_server.start(tmp_path_factory.mktemp("langgraph-dev"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def phoenix():
    """Arize Phoenix, a real OpenTelemetry backend taking OTLP/HTTP, on loopback for the
    whole session (started on first use): ``tests/support_procs/phoenix_server.py``."""
    from tests.support_procs import phoenix_server

    server = phoenix_server.start()
    yield server
    server.stop()
