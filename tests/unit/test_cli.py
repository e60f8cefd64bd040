"""The command line, run as a user would: a real subprocess."""

import json
import os
import re
import socket
import subprocess
import sys

from graph.cli import STARTING
from graph.service.store import Store
from graph.settings import Settings
from tests.support import ROOT

QUESTION = "Which stock in the database grew the most between 2005 and 2009? Chart the prices."


def cli(*args, **env):
    return subprocess.run(
        [sys.executable, "-m", "graph", *args],
        cwd=ROOT,
        text=True,
        capture_output=True,
        timeout=120,
        env={**os.environ, **env},
    )


def test_run_prints_the_plan_each_step_the_chart_and_a_cited_answer():
    result = cli("run", QUESTION)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith(
        f"{STARTING}\nmodel: offline scripted model\nplan v1:\n  1. data_researcher:"
    )
    assert "step 1 | data_researcher  | running   | replans 0" in out
    assert "step 4 | synthesizer      | done      | replans 0" in out
    assert "chart: Vega-Lite spec, 300 points" in out
    assert "growth_pct 448.10. [sql:1]" in out
    assert "\ndone: Finished: the synthesizer wrote the final answer." in out


def test_run_json_prints_the_final_state():
    result = cli(
        "run",
        "How did Tesla's stock do in 2008?",
        "--agents",
        "web_researcher,data_researcher,synthesizer",
        "--max-replans",
        "1",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[:2] == [STARTING, "model: offline scripted model"]
    data = json.loads(result.stdout)  # the progress went to stderr: stdout is JSON only
    assert data["status"] == "done"
    assert data["state"]["replan_attempts"] == {"1": 1}
    assert data["state"]["enabled_agents"] == ["web_researcher", "data_researcher", "synthesizer"]
    assert data["state"]["final_answer"]


def test_a_systems_own_setting_is_set_with_set_and_a_bad_one_refused_in_one_line():
    tesla = ("run", "How did Tesla's stock do in 2008?", "--agents", "web_researcher,synthesizer")
    result = cli(*tesla, "--set", "max_replans=0", "--set", "escalate_at_cap=false", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["status"] == "done"
    assert data["state"]["replan_attempts"] == {}  # no replan allowed: the step moved on
    for args, words in [
        (("--set", "max_replans=many"), "plan_execute setting max_replans (Max replans per step)"),
        (("--set", "max_replan=1"), "plan_execute has no setting 'max_replan'"),
        (("--set", "max_replans"), "--set 'max_replans': write it as NAME=VALUE"),
        (("--system", "supervisor_bus", "--set", "bus_timeout_s=0"), "greater than 0"),
    ]:
        refused = cli(*tesla[:2], *args)
        assert refused.returncode == 2 and words in refused.stderr, refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1


def test_a_failed_run_exits_non_zero_with_one_line_saying_why():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = cli(
        "run", QUESTION, OPENAI_BASE_URL=f"http://127.0.0.1:{port}/v1", STEPWISE_MAX_RETRIES="0"
    )
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"error: Could not reach the model server at "
        f"http://127.0.0.1:{port}/v1 after 1 attempt(s): is it running?"
    )
    assert "Traceback" not in result.stderr + result.stdout


def test_bad_arguments_are_refused_in_one_line():
    result = cli("run", QUESTION, "--agents", "web_researcher,cortex_researcher")
    assert result.returncode == 2
    assert result.stderr.strip().startswith("error: unknown agent(s): cortex_researcher; known:")
    empty = cli("run", "   ")
    assert empty.returncode == 2
    assert empty.stderr.strip() == "error: The question is empty: type a question to run."


def test_dot_prints_the_graph_of_the_enabled_agents():
    result = cli("dot", "--agents", "data_researcher,chart_generator,synthesizer")
    assert result.returncode == 0
    assert result.stdout.startswith("digraph plan_execute {")
    assert "chart_generator -> executor" in result.stdout
    assert "web_researcher" not in result.stdout and "chart_summarizer" not in result.stdout


# --------------------------------------------------------------------------- every system

BUS_QUESTION = "What caused the dot-com crash?"


def test_every_hosted_system_is_listed_and_drawn():
    listed = cli("systems")
    assert listed.returncode == 0, listed.stderr
    assert [line.split(":")[0] for line in listed.stdout.splitlines()] == [
        "plan_execute",
        "supervisor_bus",
        "hierarchical_teams",
    ]
    assert "Settings (--set NAME=VALUE): max_replans, escalate_at_cap." in listed.stdout
    assert "Settings (--set NAME=VALUE): bus_timeout_s." in listed.stdout
    teams = cli("dot", "--system", "hierarchical_teams")
    assert teams.returncode == 0, teams.stderr
    assert teams.stdout.startswith("digraph hierarchical_teams {")
    assert "subgraph cluster_search_team {" in teams.stdout
    bus = cli("dot", "--system", "supervisor_bus", "--agents", "researcher,writer")
    assert "reviewer" not in bus.stdout and "supervisor -> researcher" in bus.stdout
    wrong = cli("dot", "--system", "supervisor_bus", "--agents", "synthesizer")
    assert wrong.returncode == 2 and "unknown agent(s): synthesizer" in wrong.stderr


def test_a_bus_run_waits_for_approval_is_answered_followed_up_listed_and_exported(tmp_path):
    home = {"STEPWISE_HOME": str(tmp_path)}
    first = cli("run", "--system", "supervisor_bus", BUS_QUESTION, **home)
    assert first.returncode == 3, first.stderr  # waiting for a human
    assert "waiting: approval of writer" in first.stderr
    run_id = first.stderr.split("python -m graph resume ")[1].split()[0]

    answered = cli("resume", run_id, "--decision", "approve", **home)
    assert answered.returncode == 0, answered.stderr
    assert "[kb:dotcom-crash]" in answered.stdout
    assert "done: Finished" in answered.stdout

    follow = cli("send", run_id, "And what happened to Amazon?", **home)
    assert follow.returncode == 3, follow.stderr  # the writer asks again in the new turn
    assert "Search the documents for: And what happened to Amazon?" in follow.stdout

    listed = cli("runs", **home)
    assert listed.returncode == 0
    (line,) = listed.stdout.splitlines()
    assert line.startswith(run_id) and "supervisor_bus" in line and "waiting" in line

    target = tmp_path / "run.json"
    exported = cli("export", run_id, "-o", str(target), **home)
    assert exported.returncode == 0, exported.stderr
    document = json.loads(target.read_text())
    assert document["run"]["id"] == run_id and document["run"]["status"] == "waiting"
    assert document["run"]["design"]["system"] == "supervisor_bus"
    assert document["events"] and len(document["snapshot"]["rows"]) >= 4


def test_a_teams_run_that_needs_no_http_call_completes_from_the_command_line(tmp_path):
    result = cli(
        "run",
        "--system",
        "hierarchical_teams",
        "Find reliable news sites about copper prices",
        STEPWISE_HOME=str(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    assert "search_team" in result.stdout
    assert "site:reuters.com+copper+prices" in result.stdout
    assert "\ndone: " in result.stdout


HOSTILE = "How did Tesla\x1b[31m do\x1b]0;pwned\x07 in 2008?\u009b2J\x1b]52;c;aGk=\x1b\\ ok\x08"
CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def test_terminal_control_sequences_in_a_question_and_a_stored_answer_are_never_echoed(
    tmp_path,
):
    home = {"STEPWISE_HOME": str(tmp_path)}
    ran = cli("run", HOSTILE, **home)
    assert ran.returncode == 0, ran.stderr
    listed = cli("runs", **home)
    run_id = listed.stdout.split()[0]
    stored = Store.open(Settings(home=tmp_path))
    assert stored.run(run_id).question == HOSTILE  # kept as asked: only the echo is cleaned
    assert "\x1b[31m" in stored.snapshot(run_id)["final_answer"]
    stored.close()
    for out in (ran.stdout, ran.stderr, listed.stdout, listed.stderr):
        assert not CONTROLS.search(out), repr(out)
    assert 'Answer to "How did Tesla do in 2008? ok"' in ran.stdout  # the stored answer
    assert listed.stdout.rstrip().endswith("How did Tesla do in 2008? ok")
    exported = cli("export", run_id, **home)
    assert not CONTROLS.search(exported.stdout)
    assert json.loads(exported.stdout)["run"]["question"] == HOSTILE  # still the same JSON


def test_a_question_past_the_cap_is_refused_in_one_line_giving_the_cap(tmp_path):
    result = cli("run", "q" * 501, STEPWISE_HOME=str(tmp_path), STEPWISE_MAX_QUESTION_CHARS="500")
    assert result.returncode == 2
    assert result.stderr == (
        "error: The question is 501 characters long; a question may have at most 500 "
        "(STEPWISE_MAX_QUESTION_CHARS).\n"
    )


def test_a_reader_that_goes_away_after_the_first_line_leaves_no_traceback_and_the_run_ends_done(
    tmp_path,
):
    """`python -m graph run Q | head -1`: the pipe closes after one line; the CLI must not
    die on a BrokenPipeError traceback, and the run goes on to its end in the store."""
    process = subprocess.Popen(
        [sys.executable, "-m", "graph", "run", "Who founded Apple?"],
        cwd=ROOT,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "STEPWISE_HOME": str(tmp_path)},
    )
    assert process.stdout.readline() == f"{STARTING}\n"  # before the engine is imported
    process.stdout.close()  # as `head -1` does
    stderr = process.stderr.read()
    assert process.wait(timeout=120) == 0, stderr
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr, stderr
    [record] = Store.open(Settings(home=tmp_path)).runs()
    assert record.status == "done"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed once the socket is


def test_a_store_that_cannot_be_opened_is_one_line_not_a_traceback(tmp_path):
    """A home that is not a folder, and a PostgreSQL database that cannot be reached (its
    password never shown): each command says so in one line and exits 1."""
    (tmp_path / "file").write_text("")
    password = "hunter2-Very-Secret"
    cases = {
        "not a folder": ({"STEPWISE_HOME": str(tmp_path / "file" / "home")}, "Not a directory"),
        "database away": (
            {
                "STEPWISE_HOME": str(tmp_path / "home"),
                "STEPWISE_DATABASE_URL": f"postgresql://u:{password}@127.0.0.1:{_closed_port()}/x",
            },
            "Cannot use the PostgreSQL database at postgresql://u:[redacted]@127.0.0.1:",
        ),
    }
    for case, (env, words) in cases.items():
        for args in (("run", "What caused the dot-com crash?"), ("runs",)):
            result = cli(*args, **env)
            said = (case, args, result.stderr)
            assert result.returncode == 1, said
            assert result.stderr.startswith("error: ") and words in result.stderr, said
            assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, said
            assert password not in result.stderr + result.stdout, said


def test_a_read_only_home_is_one_line_not_a_traceback(tmp_path):
    """STEPWISE_HOME on a read-only mount (a bind mount in a mount namespace of the CLI's
    own: root, or a user namespace where those are allowed)."""
    import shutil

    import pytest

    home = tmp_path / "ro"
    home.mkdir()
    namespace = ["unshare", "-m"] if os.getuid() == 0 else ["unshare", "-Urm"]
    script = (
        f"mount --bind {home} {home} && mount -o remount,bind,ro {home} && "
        f"exec {sys.executable} -m graph run 'What caused the dot-com crash?'"
    )
    if not shutil.which("unshare") or subprocess.run([*namespace, "true"]).returncode:
        pytest.skip("no mount namespace may be made here")
    result = subprocess.run(
        [*namespace, "sh", "-c", script],
        cwd=ROOT,
        text=True,
        capture_output=True,
        timeout=120,
        env={**os.environ, "STEPWISE_HOME": str(home)},
    )
    assert result.returncode == 1, result.stderr
    assert result.stderr == (
        f"error: The store at {home} cannot be opened or written (unable to open database "
        f"file). Check that STEPWISE_HOME ({home}) is a folder this user can write.\n"
    )
