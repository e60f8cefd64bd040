"""Eval sets and checks (graph/evals.py): every check kind on crafted and real runs, the
starter set against real scripted runs, export/import, stored eval sets, the judge."""

from __future__ import annotations

import json
import time

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from graph.kernel.design import Design
from graph.prompts import PromptError, PromptSet, prompt_spec, template_errors
from graph.service.eval_sets import (
    EVAL_SET_FORMAT,
    Check,
    EvalQuestion,
    EvalSet,
    EvalSetError,
    export_eval_set,
    import_eval_set,
    load_starter,
)
from graph.service.evals import JudgeUnavailable, RunResult, evaluate, judge_run, run_passed
from graph.service.store import Store
from graph.settings import Settings
from tests.support_procs.fake_server import LocalOpenAIServer

PRICES = {"priced-model": (1.0, 2.0)}


def craft_run(
    store: Store,
    run_id: str = "r1",
    *,
    status: str = "done",
    answer: str | None = "The answer names AAPL [sql:1].",
    nodes: tuple[str, ...] = ("planner", "executor", "data_researcher", "executor", "synthesizer"),
    steps: int = 2,
    replans: int = 0,
    chart: bool = False,
    human: bool = False,
    calls: tuple[tuple[str, int, int], ...] = (("priced-model", 1000, 500),),
    question: str = "Which stock grew the most?",
) -> str:
    """A run written into the store event by event, as a worker would write it."""
    store.create_run(run_id, question, Design(), "crafted")
    store.set_run_status(run_id, "running")
    seq = 0

    def add(kind, node="", data=None, step=1):
        nonlocal seq
        seq += 1
        store.append_event(
            run_id,
            {
                "seq": seq,
                "ts": time.time(),
                "kind": kind,
                "node": node,
                "namespace": "",
                "step": step,
                "data": data,
            },
        )

    for i, node in enumerate(nodes):
        add(
            "update",
            node,
            {
                "messages": [
                    {
                        "id": f"m{i}",
                        "type": "ai",
                        "name": node,
                        "content": f"{node} did its part",
                        "step": 1,
                        "agent": node,
                    }
                ]
            },
        )
    for model, read, wrote in calls:
        add(
            "custom",
            data={
                "llm_call": {
                    "model": model,
                    "node": "executor",
                    "input_tokens": read,
                    "output_tokens": wrote,
                    "latency_s": 0.1,
                }
            },
        )
    if human:
        add(
            "update",
            "human",
            {
                "messages": [
                    {
                        "id": "h1",
                        "type": "human",
                        "name": "human",
                        "content": "Human: approve step 2 (report_writer).",
                        "step": 2,
                        "agent": "human",
                    }
                ]
            },
        )
    add(
        "state",
        data={
            "rows": [{"step": i + 1} for i in range(steps)],
            "counts": {"steps": steps, "replans": replans},
            "replan_attempts": {"1": replans} if replans else {},
            "final_answer": answer,
            "plan_history": [],
            "chart_spec": {"mark": "line"} if chart else None,
        },
    )
    add("end", data={"status": status, "reason": "crafted"})
    return run_id


def results_for(store, checks: list[dict], **run) -> list:
    run_id = craft_run(store, **run)
    question = EvalQuestion(
        question="Which stock grew the most?", checks=[Check.model_validate(c) for c in checks]
    )
    return evaluate(question, RunResult.from_store(store, run_id, PRICES))


# ------------------------------------------------------------------ each check kind


@pytest.mark.parametrize(
    "check, run, expected",
    [
        ({"kind": "answer_contains", "value": "aapl"}, {}, True),  # ignores case
        ({"kind": "answer_contains", "value": "MSFT"}, {}, False),
        ({"kind": "answer_contains", "value": "AAPL"}, {"answer": None}, False),
        ({"kind": "answer_not_contains", "value": "MSFT"}, {}, True),
        ({"kind": "answer_not_contains", "value": "AAPL"}, {}, False),
        ({"kind": "answer_not_contains", "value": "MSFT"}, {"answer": None}, False),
        ({"kind": "uses_agents", "value": ["data_researcher", "synthesizer"]}, {}, True),
        ({"kind": "uses_agents", "value": ["web_researcher", "data_researcher"]}, {}, False),
        ({"kind": "max_steps", "value": 2}, {"steps": 2}, True),
        ({"kind": "max_steps", "value": 2}, {"steps": 3}, False),
        ({"kind": "max_replans", "value": 1}, {"replans": 1}, True),
        ({"kind": "max_replans", "value": 0}, {"replans": 1}, False),
        ({"kind": "chart_produced"}, {"chart": True}, True),
        ({"kind": "chart_produced"}, {"chart": False}, False),
        ({"kind": "no_human_help"}, {}, True),
        ({"kind": "no_human_help"}, {"human": True}, False),
        ({"kind": "no_human_help"}, {"status": "waiting", "answer": None}, False),
    ],
)
def test_each_check_kind_passes_and_fails_on_crafted_runs(store, check, run, expected):
    (result,) = results_for(store, [check], **run)
    assert result.passed is expected, result.detail
    assert result.kind == check["kind"] and result.detail


def test_a_failed_check_says_what_was_found(store):
    uses, steps, human = results_for(
        store,
        [
            {"kind": "uses_agents", "value": ["web_researcher"]},
            {"kind": "max_steps", "value": 1},
            {"kind": "no_human_help"},
        ],
        steps=3,
        human=True,
    )
    assert uses.detail.startswith("never ran: web_researcher (ran: data_researcher, synthesizer")
    assert steps.detail == "3 step(s)" and steps.expected == 1
    assert "Human: approve step 2" in human.detail


def test_a_run_passes_only_when_done_with_every_check_passed(store):
    checks = [{"kind": "max_steps", "value": 5}]
    done = RunResult.from_store(store, craft_run(store, "a"), PRICES)
    failed = RunResult.from_store(store, craft_run(store, "b", status="failed"), PRICES)
    question = EvalQuestion(question="q", checks=[Check.model_validate(c) for c in checks])
    assert run_passed(done, evaluate(question, done))
    assert evaluate(question, failed)[0].passed and not run_passed(
        failed, evaluate(question, failed)
    )


def test_run_result_reads_agents_counts_chart_and_human_decisions_from_the_store(store):
    run = RunResult.from_store(
        store,
        craft_run(
            store,
            steps=3,
            replans=2,
            chart=True,
            human=True,
            calls=(("priced-model", 1000, 500), ("priced-model", 200, 100)),
        ),
        PRICES,
    )
    assert run.agents_used == ["data_researcher", "synthesizer"]  # no planner/executor/human
    assert (run.steps, run.replans, run.chart) == (3, 2, True)
    assert run.human_decisions == ["Human: approve step 2 (report_writer)."]
    assert (run.llm_calls, run.input_tokens, run.output_tokens, run.tokens) == (2, 1200, 600, 1800)
    assert run.duration_s is not None and run.duration_s >= 0


def test_cost_is_tokens_times_price_and_unknown_when_a_model_has_no_price(store):
    priced = RunResult.from_store(store, craft_run(store, "p"), PRICES)
    assert priced.cost == pytest.approx((1000 * 1.0 + 500 * 2.0) / 1_000_000)
    mixed = RunResult.from_store(
        store,
        craft_run(store, "u", calls=(("priced-model", 1000, 500), ("mystery-model", 10, 10))),
        PRICES,
    )
    assert mixed.cost is None and mixed.unpriced == ["mystery-model"]
    assert mixed.tokens == 1520  # tokens still counted


# ------------------------------------------------------------------ real runs


def test_no_human_help_fails_on_a_real_run_left_waiting_for_approval(service):
    run_id = service.start("What caused the dot-com crash? Save a report.", Design())
    assert service.wait(run_id, timeout=30).status == "waiting"
    run = RunResult.from_store(service.store, run_id)
    (check,) = evaluate(EvalQuestion(question="q", checks=[Check(kind="no_human_help")]), run)
    assert not check.passed and "waiting for a human" in check.detail


def test_no_human_help_fails_on_a_real_run_a_human_approved(service):
    run_id = service.start("What caused the dot-com crash? Save a report.", Design())
    service.wait(run_id, timeout=30)
    (pending,) = service.pending_approvals()
    service.decide(run_id, pending["id"], "approve")
    assert service.wait(run_id, timeout=30).status == "done"
    run = RunResult.from_store(service.store, run_id)
    (check,) = evaluate(EvalQuestion(question="q", checks=[Check(kind="no_human_help")]), run)
    assert not check.passed and "1 human decision(s)" in check.detail
    assert "report_writer" in run.agents_used


def test_the_starter_set_expectations_hold_on_real_scripted_runs(service):
    """Each starter question's checks, on the shipped default design: everything passes
    except the report question, which waits for a human's approval."""
    starter = load_starter()
    assert 5 <= len(starter.questions) <= 6
    outcomes = {}
    for index, question in enumerate(starter.questions):
        run_id = service.start(question.question, Design())
        service.wait(run_id, timeout=60)
        run = RunResult.from_store(service.store, run_id)
        outcomes[index] = (run, evaluate(question, run))
    failing = {
        i: [r.kind for r in results if not r.passed]
        for i, (_, results) in outcomes.items()
        if any(not r.passed for r in results)
    }
    report = next(i for i, q in enumerate(starter.questions) if "report" in q.question.lower())
    assert failing == {report: ["answer_contains", "no_human_help"]}
    growth_run, _ = outcomes[0]
    assert growth_run.chart and "AAPL" in growth_run.final_answer
    tesla_run, _ = outcomes[1]
    assert tesla_run.replans == 1  # data_researcher finds no Tesla, one replan to the documents


# ------------------------------------------------------------------ the set and its file


def test_check_values_are_validated_with_readable_reasons():
    with pytest.raises(ValueError, match="unknown agent.*data_scientist"):
        Check(kind="uses_agents", value=["data_scientist"])
    with pytest.raises(ValueError, match="max_steps needs a whole number"):
        Check(kind="max_steps", value=-1)
    with pytest.raises(ValueError, match="answer_contains needs the text"):
        Check(kind="answer_contains", value="  ")
    with pytest.raises(ValueError, match="chart_produced takes no value"):
        Check(kind="chart_produced", value="yes")
    assert Check(kind="uses_agents", value="web_researcher").value == ["web_researcher"]
    assert Check(kind="max_replans", value="2").value == 2
    assert Check(kind="max_steps", value=3).label == "at most 3 step(s)"


def test_an_eval_set_survives_export_and_import_unchanged():
    original = EvalSet(
        name="mine",
        description="two questions",
        questions=[
            EvalQuestion(
                question="How did Tesla's stock do in 2008?",
                checks=[Check(kind="max_replans", value=1), Check(kind="no_human_help")],
            ),
            EvalQuestion(
                question="Which stock grew the most?",
                checks=[
                    Check(kind="uses_agents", value=["data_researcher"]),
                    Check(kind="answer_not_contains", value="TSLA"),
                ],
            ),
        ],
    )
    document = export_eval_set(original)
    assert document["format"] == EVAL_SET_FORMAT
    text = json.dumps(document)
    assert import_eval_set(text) == original
    assert import_eval_set(text.encode()) == original
    assert import_eval_set(json.loads(text)) == original


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "The file is not JSON text"),
        (json.dumps({"format": "stepwise-design", "design": {}}), "Not a Stepwise eval set file"),
        (json.dumps({"format": EVAL_SET_FORMAT, "version": 99, "eval_set": {}}), "newer"),
        (json.dumps({"format": EVAL_SET_FORMAT, "version": 1}), 'no "eval_set"'),
        (
            json.dumps(
                {
                    "format": EVAL_SET_FORMAT,
                    "version": 1,
                    "eval_set": {
                        "name": "x",
                        "questions": [
                            {"question": "q", "checks": []},
                            {"question": "q2", "checks": [{"kind": "answer_is"}]},
                        ],
                    },
                }
            ),
            "question 2, check 1, kind",
        ),
        (
            json.dumps(
                {
                    "format": EVAL_SET_FORMAT,
                    "version": 1,
                    "eval_set": {
                        "name": "x",
                        "questions": [
                            {"question": "q", "checks": [{"kind": "max_steps", "value": "many"}]}
                        ],
                    },
                }
            ),
            "question 1, check 1: max_steps needs a whole number",
        ),
        (
            json.dumps(
                {
                    "format": EVAL_SET_FORMAT,
                    "version": 1,
                    "eval_set": {"name": "x", "questions": []},
                }
            ),
            "questions: List should have at least 1 item",
        ),
    ],
)
def test_a_bad_eval_set_file_is_refused_saying_what_is_wrong(content, message):
    with pytest.raises(EvalSetError, match=message):
        import_eval_set(content)


def test_eval_sets_are_saved_listed_loaded_and_deleted_by_name(store):
    starter = load_starter()
    store.save_eval_set(starter)
    store.save_eval_set(starter.model_copy(update={"name": "another"}))
    assert store.eval_set_names() == ["another", "starter"]
    assert store.load_eval_set("starter") == starter
    edited = starter.model_copy(update={"questions": starter.questions[:2]})
    store.save_eval_set(edited)  # same name: replaced
    assert len(store.load_eval_set("starter").questions) == 2
    assert store.delete_eval_set("another") and not store.delete_eval_set("another")
    assert store.eval_set_names() == ["starter"] and store.load_eval_set("another") is None


# ------------------------------------------------------------------ judged quality

FIXED_SCORES = {
    "plan_quality": {"score": 4, "reason": "Sensible steps."},
    "plan_adherence": {"score": 5, "reason": "Followed the plan."},
    "execution_efficiency": {"score": 3, "reason": "One wasted call."},
    "logical_consistency": {"score": 4, "reason": "Answer matches findings."},
}


class FixedScoresModel(BaseChatModel):
    """A judge that always gives the same scores, so the test knows what to expect."""

    @property
    def _llm_type(self) -> str:
        return "fixed-scores"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        return ChatResult(
            generations=[ChatGeneration(message=AIMessage(content=json.dumps(FIXED_SCORES)))]
        )


def test_the_judge_prompt_is_registered_and_its_placeholders_validated():
    spec = prompt_spec("judge/gpa")
    assert {"user_query", "plans", "final_answer"} <= spec.required
    assert PromptSet().texts["judge/gpa"]  # the shipped file validates
    assert any(
        "unknown placeholder {plan_qualty}" in e
        for e in template_errors("judge/gpa", "{user_query} {plans} {final_answer} {plan_qualty}")
    )
    with pytest.raises(PromptError, match="missing placeholder {final_answer}"):
        PromptSet({"judge/gpa": "{user_query} {plans}"})


def test_a_run_is_judged_by_a_real_model_over_http(service, store):
    run_id = service.start("How did Tesla's stock do in 2008?", Design())
    service.wait(run_id, timeout=30)
    with LocalOpenAIServer(FixedScoresModel) as server:
        real = Settings(
            home=store.path.parent,
            openai_base_url=server.base_url,
            openai_api_key="k",
            planner_model="judge-model",
            max_retries=0,
        )
        scores = judge_run(store, run_id, settings=real)
        (request,) = server.requests
    assert scores == FIXED_SCORES
    prompt = request["messages"][0]["content"]
    assert "How did Tesla's stock do in 2008?" in prompt
    assert "Plan version 2" in prompt  # the replanned plan is shown to the judge
    assert request["model"] == "judge-model"
    stored = store.judgement(run_id)
    assert stored["scores"] == FIXED_SCORES and "judge-model" in stored["model_label"]


def test_the_judge_uses_the_active_version_of_its_prompt(service, store):
    run_id = service.start("Why did IBM sell its PC division to Lenovo?", Design())
    service.wait(run_id, timeout=30)
    version = store.save_prompt_version(
        "judge/gpa",
        "terse",
        "Score the run. Q: {user_query}\n{plans}\nA: {final_answer}\n"
        'JSON only: {{"plan_quality": {{"score": 1, "reason": ""}}}}',
    )
    store.set_active_prompt("judge/gpa", version.id)
    with LocalOpenAIServer(FixedScoresModel) as server:
        real = Settings(
            home=store.path.parent,
            openai_base_url=server.base_url,
            openai_api_key="k",
            max_retries=0,
        )
        judge_run(store, run_id, settings=real)
        assert server.requests[0]["messages"][0]["content"].startswith("Score the run. Q: Why")


def test_judging_is_refused_without_a_real_model(service, store):
    run_id = service.start("Why did IBM sell its PC division to Lenovo?", Design())
    service.wait(run_id, timeout=30)
    with pytest.raises(JudgeUnavailable, match="needs a real model.*OPENAI_BASE_URL"):
        judge_run(store, run_id, settings=Settings(home=store.path.parent, provider="scripted"))
    assert store.judgement(run_id) is None
