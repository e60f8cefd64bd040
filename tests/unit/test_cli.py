"""The command line, run as a user would: a real subprocess."""

import json
import os
import socket
import subprocess
import sys

from tests.conftest import ROOT

QUESTION = "Which stock in the database grew the most between 2005 and 2009? Chart the prices."


def cli(*args, **env):
    return subprocess.run([sys.executable, "-m", "graph", *args], cwd=ROOT, text=True,
                          capture_output=True, timeout=120, env={**os.environ, **env})


def test_run_prints_the_plan_each_step_the_chart_and_a_cited_answer():
    result = cli("run", QUESTION)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("model: offline scripted model\nplan v1:\n  1. data_researcher:")
    assert "step 1 | data_researcher  | running   | replans 0" in out
    assert "step 4 | synthesizer      | done      | replans 0" in out
    assert "chart: Vega-Lite spec, 300 points" in out
    assert "growth_pct 448.10. [sql:1]" in out
    assert "\ndone: Finished: the synthesizer wrote the final answer." in out


def test_run_json_prints_the_final_state():
    result = cli("run", "How did Tesla's stock do in 2008?", "--agents",
                 "web_researcher,data_researcher,synthesizer", "--max-replans", "1", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["status"] == "done"
    assert data["state"]["replan_attempts"] == {"1": 1}
    assert data["state"]["enabled_agents"] == ["web_researcher", "data_researcher", "synthesizer"]
    assert data["state"]["final_answer"]


def test_a_failed_run_exits_non_zero_with_one_line_saying_why():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = cli("run", QUESTION, OPENAI_BASE_URL=f"http://127.0.0.1:{port}/v1",
                 STEPWISE_MAX_RETRIES="0")
    assert result.returncode == 1
    assert result.stderr.strip() == (f"error: Could not reach the model server at "
                                     f"http://127.0.0.1:{port}/v1 after 1 attempt(s): is it running?")
    assert "Traceback" not in result.stderr + result.stdout


def test_bad_arguments_are_refused_in_one_line():
    result = cli("run", QUESTION, "--agents", "web_researcher,cortex_researcher")
    assert result.returncode == 2
    assert result.stderr.strip().startswith("error: unknown agent(s): cortex_researcher; known:")
    empty = cli("run", "   ")
    assert empty.returncode == 2 and empty.stderr.strip() == "error: The question is empty."


def test_dot_prints_the_graph_of_the_enabled_agents():
    result = cli("dot", "--agents", "data_researcher,chart_generator,synthesizer")
    assert result.returncode == 0
    assert result.stdout.startswith("digraph plan_execute {")
    assert "chart_generator -> executor" in result.stdout
    assert "web_researcher" not in result.stdout and "chart_summarizer" not in result.stdout
