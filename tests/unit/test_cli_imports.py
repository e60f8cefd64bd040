"""The command line imports only what an offline run needs (issue 33.7): the PostgreSQL
driver, the OpenAI client and the chart library wait until a run uses them. Real
subprocesses, offline scripted model, SQLite store under a temporary home."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.support import ROOT

# Needed only for a PostgreSQL store, a model server, or a chart.
HEAVY = ("psycopg", "openai", "altair", "langchain_openai")
LOADED = f"sorted(m for m in sys.modules if m.split('.')[0] in {set(HEAVY)!r} and '.' not in m)"


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
    assert out[0] == "model: offline scripted model"
    assert json.loads(out[-1]) == [0, []]
