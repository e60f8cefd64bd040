"""How the Server page reads a state it did not define: Stepwise's plan when a graph keeps
one, nothing extra otherwise; a history line per checkpoint."""

from __future__ import annotations

from graph.service.server_records import Checkpoint
from ui.server_view import history_rows, plan_rows, short


def test_a_plan_execute_state_shows_its_plan_with_the_current_step_marked():
    rows = plan_rows(
        {
            "plan": {
                "1": {"agent": "web_researcher", "action": "Search"},
                "2": {"agent": "synthesizer", "action": "Answer"},
            },
            "current_step": 2,
            "step_status": {"1": "done", "2": "running"},
        }
    )
    assert rows == [
        {"Step": "1", "Agent": "web_researcher", "Action": "Search", "Status": "done"},
        {"Step": "▶ 2", "Agent": "synthesizer", "Action": "Answer", "Status": "running"},
    ]


def test_a_teams_state_shows_its_subtasks():
    rows = plan_rows({"subtasks": [{"id": "s1", "team": "research", "status": "done"}]})
    assert rows == [{"Subtask": "s1", "Team": "research", "Instruction": "", "Status": "done"}]


def test_a_foreign_state_has_no_plan_even_with_a_key_named_plan():
    assert plan_rows({"topic": "cats"}) is None
    assert plan_rows({"plan": "go left"}) is None
    assert plan_rows([1, 2]) is None


def test_history_lines_say_who_ran_what_changed_and_what_waits():
    rows = history_rows(
        [
            Checkpoint("c1", 0, "loop", "2026-01-01T10:00:00", ["__start__"], {"t": "x" * 200}),
            Checkpoint("c2", 1, "loop", "2026-01-01T10:00:01", ["ask"], {}, ["t"], ["w"], 1),
        ]
    )
    assert rows[0]["Changed"] == "t = " + short("x" * 200, 60)
    assert rows[0]["Changed"].endswith("…") and len(rows[0]["Changed"]) == 64
    assert rows[1]["Changed"] == "; removed t"
    assert rows[1]["Next"] == "w (waits on a question)" and rows[1]["At"] == "10:00:01"
