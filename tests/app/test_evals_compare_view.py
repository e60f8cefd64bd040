"""The comparison of an experiment's variants as a reader sees it (issue #16 point 4):
per question each variant's result and figures side by side, coloured and marked against
the baseline; the question once in the per-check table; two runs with what differs
marked. Pure functions of ``ui.evals.results_view`` and ``ui.evals.two_runs_view``, on a comparison as ``compare`` makes it."""

from __future__ import annotations

from ui.evals import results_view, two_runs_view


def _cell(passed: bool, steps: float, tokens: float) -> dict:
    return {
        "runs": 1,
        "not_counted": 0,
        "pass_rate": 1.0 if passed else 0.0,
        "checks": [1.0 if passed else 0.0, 1.0],
        "steps": steps,
        "replans": 0.0,
        "llm_calls": 6.0,
        "tokens": tokens,
        "cost": 0.0,
        "latency_s": 2.0,
        "statuses": ["done"],
    }


COMPARISON = {
    "baseline": "base",
    "variants": ["short", "base", "long"],
    "rows": [
        {
            "question_index": 0,
            "question": "Which stock grew the most between 2005 and 2009? Chart the prices.",
            "checks": ["answer contains AAPL", "uses data_researcher"],
            "variants": {
                "base": _cell(True, 4, 11000),
                "short": _cell(False, 2, 4000),
                "long": _cell(True, 4, 15000),
            },
            "differences": {
                "short": {
                    "pass_rate": "worse",
                    "steps": "better",
                    "replans": "same",
                    "llm_calls": "same",
                    "tokens": "better",
                    "cost": "same",
                    "latency_s": "same",
                },
                "long": {
                    "pass_rate": "same",
                    "steps": "same",
                    "replans": "same",
                    "llm_calls": "same",
                    "tokens": "worse",
                    "cost": "same",
                    "latency_s": "same",
                },
            },
        }
    ],
}


def test_each_question_is_one_row_with_a_column_per_variant_baseline_first():
    (row,) = results_view.question_rows_readable(COMPARISON)
    assert list(row) == ["No.", "Question", "base (baseline)", "short", "long"]
    assert row["Question"] == COMPARISON["rows"][0]["question"]  # in full, once
    assert row["base (baseline)"].startswith("✓ passed · checks ✓ ✓ · 4 steps")
    assert ":" not in row["base (baseline)"].replace("$", "")  # the baseline is not coloured


def test_a_variant_is_coloured_and_marked_where_it_moved_against_the_baseline():
    (row,) = results_view.question_rows_readable(COMPARISON)
    short, long = row["short"], row["long"]
    assert short.startswith(":red[**✗ failed ▼**]")  # worse: red and an arrow down
    assert ":green[**2 steps ▲**]" in short  # fewer steps is better: green, arrow up
    assert ":green[**4,000 tokens ▲**]" in short
    assert " 0 replans " in short  # the same: plain
    assert long.startswith("✓ passed · ") and ":red[**15,000 tokens ▼**]" in long


def test_the_per_check_table_writes_each_question_once():
    rows = results_view.check_rows(COMPARISON)
    assert [r["No."] for r in rows] == ["1.1", "1.2"]
    assert rows[0]["Question"] == COMPARISON["rows"][0]["question"]
    assert rows[1]["Question"] == ""
    assert rows[0]["short"] == "✗" and rows[1]["short"] == "✓"


def test_the_answer_lines_the_other_run_lacks_are_highlighted_keeping_the_markdown():
    mine = "# AAPL grew the most\n- AAPL +448% [sql:1]\n- MSFT +25.8%\n\nSources below."
    theirs = "- AAPL +448% [sql:1]\n\nSources below."
    shown = two_runs_view.highlighted_markdown(mine, theirs)
    assert shown.splitlines() == [
        "# :orange-background[AAPL grew the most]",
        "- AAPL +448% [sql:1]",
        "- :orange-background[MSFT +25.8%]",
        "",
        "Sources below.",
    ]
    assert two_runs_view.highlighted_markdown("a [b] c", "") == ":orange-background[a [b\\] c]"


def test_plan_steps_the_other_run_lacks_are_marked():
    mine = [
        {"Step": 1, "Agent": "data_researcher", "Action": "Query the prices"},
        {"Step": 2, "Agent": "synthesizer", "Action": "Answer"},
    ]
    theirs = [
        {"Step": 1, "Agent": "web_researcher", "Action": "Search the documents"},
        {"Step": 2, "Agent": "synthesizer", "Action": "Answer"},
    ]
    marked = two_runs_view.differing_steps(mine, theirs)
    assert [r["Differs"] for r in marked] == ["◆ not in the other run", ""]
    assert marked[0]["Agent"] == "data_researcher"  # the rest of the row as it was


def test_differences_read_with_their_interval_and_a_failing_variant_says_it_had_no_completed_run():
    from ui.evals import intervals as iv

    worse = {"verdict": "worse", "estimate": 1.0, "low": 0.5, "high": 1.5, "runs": [10, 10]}
    assert iv.contrast_text("steps", worse) == "▼ worse: +1 [+0.5 – +1.5] (10 completed runs each)"
    too_few = {"verdict": "unclear", "runs": [0, 0]}  # no question ran twice on both sides
    assert iv.contrast_text("steps", too_few) == (
        "no clear difference (needs 2 completed runs of a question each)"
    )
    unclear = {"verdict": "unclear", "runs": [10, 9]}
    assert iv.contrast_text("latency_s", unclear) == (
        "no clear difference (9 against the baseline's 10 completed runs)"
    )
    failing = {"verdict": "unknown", "runs": [3, 0]}
    assert iv.contrast_text("steps", failing) == (
        "? unknown (no completed run: 0 against the baseline's 3 completed runs)"
    )
    assert iv.mark_colour("▲ better: −1 (6 completed runs each)") == iv.COLOURS["▲"]
    assert iv.mark_colour("no clear difference (6 runs each)") == ""
