"""The command line imports only what an offline run needs (issue 33.7): parsing the
arguments and printing a run's first line load no engine at all (no LangGraph, LangChain,
store or system), so the first line comes at once; the PostgreSQL driver, the OpenAI
client, the chart library and the MCP client wait until a run uses them. Real subprocesses, offline
scripted model, SQLite store under a temporary home. No timing: what is imported when."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from graph.cli import STARTING
from tests.support import ROOT

# Needed only for a PostgreSQL store, a model server, a chart, or an MCP tool server.
HEAVY = ("psycopg", "openai", "altair", "langchain_openai", "mcp", "langchain_mcp_adapters")
LOADED = f"sorted(m for m in sys.modules if m.split('.')[0] in {set(HEAVY)!r} and '.' not in m)"
# The engine and what it stands on: none of it before a run's first line.
ENGINE = (
    "langgraph",
    "langchain_core",
    "langchain",
    "langsmith",
    "mcp",
    "pydantic",
    "graph.service",
    "graph.registry",
    "graph.kernel",
    "graph.cli_commands",
    *HEAVY,
)
ENGINE_LOADED = (
    f"sorted(m for m in sys.modules if m.split('.')[0] in {set(ENGINE)!r} "
    f"or '.'.join(m.split('.')[:2]) in {set(ENGINE)!r})"
)
# stdout or stderr replaced by a stream that notes, at its first write, which engine
# modules were loaded; then the run goes on, and the notes are printed last.
TAPPED = f"""
import io, json, sys
from graph.cli import main
seen = []
class Noting:
    def __init__(self, real):
        self.real = real
    def write(self, text):
        if not seen:
            seen.append((text, {ENGINE_LOADED}))
        return self.real.write(text)
    def flush(self):
        self.real.flush()
    def fileno(self):
        return self.real.fileno()
"""


def _python(code: str, home) -> subprocess.CompletedProcess:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "STEPWISE_DATABASE_URL", "STEPWISE_PROVIDER"))
    }
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        text=True,
        capture_output=True,
        timeout=120,
        env={**env, "STEPWISE_HOME": str(home)},
    )


def test_importing_the_command_line_loads_no_database_driver_model_client_or_charts(tmp_path):
    result = _python(f"import graph.cli, sys, json; print(json.dumps({LOADED}))", tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1]) == []


def test_parsing_a_runs_arguments_loads_no_engine(tmp_path):
    code = (
        "import sys, json\n"
        "from graph.cli import parser\n"
        "args = parser().parse_args(['run', 'Who founded Apple?', '--system', 'plan_execute',"
        " '--set', 'max_replans=1', '--json'])\n"
        f"print(json.dumps([args.command, {ENGINE_LOADED}]))\n"
    )
    result = _python(code, tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1]) == ["run", []]


def test_a_runs_first_line_is_printed_before_any_of_the_engine_is_imported(tmp_path):
    code = TAPPED + (
        "sys.stdout = Noting(sys.stdout)\n"
        "code = main(['run', 'Who founded Apple?'])\n"
        "sys.stdout = sys.stdout.real\n"
        f"print(json.dumps([code, seen, {ENGINE_LOADED}]))\n"
    )
    result = _python(code, tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout.splitlines()
    assert out[:2] == [STARTING, "model: offline scripted model"]
    code, [(first, loaded_then)], loaded_at_end = json.loads(out[-1])
    assert code == 0 and first == STARTING and loaded_then == []
    # the check can fail: the run itself loaded the engine
    assert "langgraph" in loaded_at_end and "graph.service" in loaded_at_end


def test_under_json_the_first_line_goes_to_stderr_also_before_the_engine(tmp_path):
    code = TAPPED + (
        "sys.stderr = Noting(sys.stderr)\n"
        "code = main(['run', 'Who founded Apple?', '--json'])\n"
        "sys.stderr = sys.stderr.real\n"
        "print(json.dumps([code, seen]), file=sys.stderr)\n"
    )
    result = _python(code, tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["status"] == "done"  # stdout: the JSON, nothing else
    err = result.stderr.splitlines()
    assert err[:2] == [STARTING, "model: offline scripted model"]
    code, [(first, loaded_then)] = json.loads(err[-1])
    assert code == 0 and first == STARTING and loaded_then == []


def test_an_offline_run_without_a_chart_loads_none_of_them_either(tmp_path):
    code = (
        "import sys, json\n"
        "from graph.cli import main\n"
        "code = main(['run', 'Who founded Apple?'])\n"
        f"print(json.dumps([code, {LOADED}]))\n"
    )
    result = _python(code, tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout.splitlines()
    assert out[:2] == [STARTING, "model: offline scripted model"]
    assert json.loads(out[-1]) == [0, []]
