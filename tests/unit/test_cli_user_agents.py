"""``python -m graph run --design design.json`` (issue 30.6): a design exported with a user
agent "clock" runs from the command line, its MCP tool (mcp-server-time over stdio, as the
Tools page of that home connected it) really called. A real subprocess. (Tier
``processes``.)"""

from __future__ import annotations

import json

from graph.kernel.design import export_design
from graph.service.store import Store
from graph.settings import Settings
from tests.unit.test_cli import cli
from tests.user_agent_support import CLOCK_QUESTION, clock_design, time_server


def test_a_design_file_with_a_user_agent_runs_from_the_command_line_and_calls_its_mcp_tool(
    tmp_path,
):
    store = Store.open(Settings(home=tmp_path))
    store.mcp_servers.add(time_server())
    store.close()
    design_file = tmp_path / "design.json"
    design_file.write_text(json.dumps(export_design(clock_design())))
    result = cli(
        "run", CLOCK_QUESTION, "--design", str(design_file), "--json", STEPWISE_HOME=str(tmp_path)
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["status"] == "done"
    plan = data["state"]["plan"]
    assert [plan[k]["agent"] for k in sorted(plan)] == ["clock", "synthesizer"]
    result = data["state"]["step_results"]["1"]
    assert "called `get_current_time` with arguments from the step" in result
    assert '"timezone": "Europe/Rome"' in result


def test_a_design_file_that_is_not_one_is_refused_in_one_line(tmp_path):
    bad = tmp_path / "design.json"
    bad.write_text('{"format": "stepwise-design", "design": {"enabled_agents": ["clock"]}}')
    result = cli("run", CLOCK_QUESTION, "--design", str(bad), STEPWISE_HOME=str(tmp_path))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"error: --design {bad}: enabled_agents: unknown agent(s): clock; known: "
        "web_researcher, data_researcher, chart_generator, chart_summarizer, report_writer, "
        "synthesizer"
    ]
    missing = cli("run", CLOCK_QUESTION, "--design", str(tmp_path / "none.json"))
    assert missing.returncode == 2 and "cannot be read" in missing.stderr
