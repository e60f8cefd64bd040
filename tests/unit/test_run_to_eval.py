"""Eval questions from real runs (graph/service/run_to_eval.py) and eval sets as tables
(ui/evals/check_table.py): checks proposed from what scripted runs did in a real store,
saved into new and existing sets, and tables read back with clear messages."""

from __future__ import annotations

import pytest

from graph.kernel.design import Design
from graph.service.eval_sets import Check, EvalQuestion, EvalSet, EvalSetError, load_starter
from graph.service.evals import evaluate, run_passed
from graph.service.run_to_eval import ProposedCheck, add_question, answer_terms, proposal_from_run
from ui.evals import check_table as ct

CHART = "Which stock in the database grew the most between 2005 and 2009? Chart the prices."
IPHONE = (
    "What happened to Apple when it launched the iPhone, and how did its stock price "
    "change in 2007?"
)
REPORT = "What caused the dot-com crash? Save a report."


def _run(service, question: str, status: str = "done") -> str:
    run_id = service.start(question, Design())
    assert service.wait(run_id, timeout=120).status == status
    return run_id


def _kinds(proposed) -> dict[str, list]:
    found: dict[str, list] = {}
    for p in proposed:
        found.setdefault(p.check.kind, []).append(p.check.value)
    return found


def test_checks_proposed_from_a_chart_run_are_what_it_did_and_it_passes_them(store, service):
    run_id = _run(service, CHART)
    run, proposed = proposal_from_run(store, run_id)
    kinds = _kinds(proposed)
    assert kinds["uses_agents"] == [run.agents_used]
    assert "data_researcher" in run.agents_used and "chart_generator" in run.agents_used
    assert kinds["max_steps"] == [run.steps] and kinds["max_replans"] == [run.replans]
    assert "chart_produced" in kinds and "no_human_help" in kinds
    assert "AAPL" in kinds["answer_contains"]
    assert all(term in run.final_answer for term in kinds["answer_contains"])
    question = EvalQuestion(question=run.question, checks=[p.check for p in proposed])
    results = evaluate(question, run)
    assert all(r.passed for r in results), [(r.label, r.detail) for r in results]
    assert run_passed(run, results)


def test_a_run_without_chart_cites_its_document_and_proposes_no_chart(store, service):
    run, proposed = proposal_from_run(store, _run(service, IPHONE))
    kinds = _kinds(proposed)
    assert "chart_produced" not in kinds
    assert kinds["answer_contains"][0] == "kb:apple-iphone-2007"
    assert not any(t in ("2007", "sql:1") for t in kinds["answer_contains"])


def test_a_run_waiting_for_a_human_gets_no_answer_or_no_help_checks(store, service):
    run, proposed = proposal_from_run(store, _run(service, REPORT, status="waiting"))
    kinds = _kinds(proposed)
    assert run.final_answer is None
    assert "answer_contains" not in kinds and "no_human_help" not in kinds
    assert kinds["uses_agents"] == [run.agents_used] and run.agents_used


def test_answer_terms_skip_the_question_years_dates_and_step_citations():
    answer = (
        'Answer to "How did IBM do in 2008?", from the steps that ran:\n'
        "- IBM row date 2008-01-01, price 104.52 [sql:1], see [kb:ibm-lenovo-2005]\n"
        "(offline scripted model: answer assembled by rules.)"
    )
    assert answer_terms(answer, "How did IBM do in 2008?") == ["kb:ibm-lenovo-2005", "104.52"]


def test_a_question_goes_into_a_new_set_then_an_existing_one_and_replaces_its_twin(store):
    first = EvalQuestion(question="Q one?", checks=[Check(kind="max_steps", value=3)])
    saved, said = add_question(store, "from runs", first, new_set=True)
    assert said == "Saved the new eval set “from runs” with this question; 1 check(s)."
    assert store.load_eval_set("from runs") == saved
    second = EvalQuestion(question="Q two?")
    saved, said = add_question(store, "from runs", second, new_set=False)
    assert [q.question for q in saved.questions] == ["Q one?", "Q two?"]
    assert said.startswith("Added the question to “from runs” as question 2")
    again = EvalQuestion(question="q ONE?", checks=[Check(kind="chart_produced")])
    saved, said = add_question(store, "from runs", again, new_set=False)
    assert len(saved.questions) == 2 and saved.questions[0].checks == again.checks
    assert "already asked this question (question 1)" in said
    with pytest.raises(EvalSetError, match="already exists"):
        add_question(store, "from runs", first, new_set=True)
    with pytest.raises(EvalSetError, match="needs a name|Give the new eval set a name"):
        add_question(store, "  ", first, new_set=True)
    assert store.load_eval_set("from runs") == saved


# ------------------------------------------------------------------ tables


def test_proposal_rows_read_back_with_edits_and_untick_and_bad_values_named():
    question = EvalQuestion(
        question="Q?",
        checks=[
            Check(kind="uses_agents", value=["web_researcher", "synthesizer"]),
            Check(kind="max_steps", value=4),
            Check(kind="chart_produced"),
        ],
    )
    rows = ct.proposal_rows([ProposedCheck(c, "x") for c in question.checks])
    assert rows[0]["Value"] == "web_researcher, synthesizer"
    assert ct.question_from_rows(" Q? ", rows) == question
    rows[1]["Value"] = "2"
    rows[2]["Keep"] = False
    assert [c.value for c in ct.question_from_rows("Q?", rows).checks] == [
        ["web_researcher", "synthesizer"],
        2,
    ]
    rows[1]["Value"] = "a few"
    with pytest.raises(EvalSetError) as bad:
        ct.question_from_rows("Q?", rows)
    assert str(bad.value) == "Check row 2 (max_steps): max_steps needs a whole number of 0 or more."
    with pytest.raises(EvalSetError, match="The question is empty"):
        ct.question_from_rows("  ", rows)
    rows[1]["Value"] = "2"
    rows[0]["Value"] = "web_researcher, nobody"
    with pytest.raises(EvalSetError, match="Check row 1 .*unknown agent.*nobody"):
        ct.question_from_rows("Q?", rows)


def test_the_starter_set_round_trips_through_its_tables():
    starter = load_starter()
    back = ct.eval_set_from_tables(
        starter.name, starter.description, ct.question_table(starter), ct.check_table(starter)
    )
    assert back == starter


def test_deleting_a_question_keeps_the_other_checks_on_their_questions():
    eval_set = EvalSet(
        name="s",
        questions=[
            EvalQuestion(question=f"Q{i}?", checks=[Check(kind="max_steps", value=i)])
            for i in (1, 2, 3)
        ],
    )
    questions = ct.apply_edits(
        ct.question_table(eval_set),
        {"edited_rows": {}, "deleted_rows": [1], "added_rows": [{"Question": "Q4?"}]},
    )
    checks = ct.apply_edits(
        ct.check_table(eval_set),
        {
            "edited_rows": {2: {"Value": "9"}},
            "deleted_rows": [1],
            "added_rows": [{"Question": 4, "Kind": "no_human_help"}],
        },
    )
    back = ct.eval_set_from_tables("s", "", questions, checks)
    assert [(q.question, [c.value for c in q.checks]) for q in back.questions] == [
        ("Q1?", [1]),
        ("Q3?", [9]),
        ("Q4?", [None]),
    ]
    checks.append({"Question": 2, "Kind": "max_replans", "Value": "1"})
    with pytest.raises(EvalSetError) as bad:
        ct.eval_set_from_tables("s", "", questions, checks)
    assert str(bad.value).startswith("Check row 4 names question 2, which is not in the questions")
    with pytest.raises(EvalSetError, match="Question row 2 is empty"):
        ct.eval_set_from_tables("s", "", [{"No.": 1, "Question": "Q"}, {"No.": 2}], [])
    with pytest.raises(EvalSetError, match="chart_produced takes no value: leave its value empty"):
        ct.eval_set_from_tables(
            "s",
            "",
            [{"No.": 1, "Question": "Q"}],
            [{"Question": 1, "Kind": "chart_produced", "Value": "yes"}],
        )
