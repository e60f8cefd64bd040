"""Evaluating runs: the checks of an eval set (``graph.service.eval_sets``) evaluated on
what the store holds about a run, and the judge.

A check reads only the store (the run record, its snapshot, its messages and its
``llm_call`` events), so a run from History, an imported run and an experiment's run are
judged alike.

Quality that rules cannot check is judged by a model (``judge_run``), from the
editable prompt ``prompts/judge/gpa.txt``, and only with a real model configured.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field

from graph.errors import StepwiseError
from graph.kernel.accounting import usage_by_step
from graph.kernel.system import systems
from graph.models.chat import make_chat_model, model_label
from graph.models.structured import ask_json
from graph.prompts import PromptSet, PromptSpec, register
from graph.service.eval_sets import TEXT_KINDS, Check, EvalQuestion
from graph.service.store import Store
from graph.settings import Settings, get_settings

# --------------------------------------------------------------------------- a run's result


@dataclass
class RunResult:
    """What a check can know about a run, all read from the store."""

    run_id: str
    question: str
    status: str
    reason: str
    final_answer: str | None
    agents_used: list[str]  # catalog agents that ran (not planner/executor/human), in order
    nodes: list[str]  # every top-level node run, in order
    steps: int
    replans: int
    chart: bool
    human_decisions: list[str]  # what each human (or timeout) decision said
    llm_calls: int
    input_tokens: int
    output_tokens: int
    cost: float | None  # None when a model has no price
    unpriced: list[str]
    duration_s: float | None
    plan_history: list[dict] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def finished(self) -> bool:
        """Done, failed or waiting: the run is as far as it will get without someone."""
        return self.status not in ("queued", "running")

    @classmethod
    def from_store(
        cls, store: Store, run_id: str, prices: dict[str, tuple[float, float]] | None = None
    ) -> RunResult:
        record = store.run(run_id)
        if record is None:
            raise KeyError(f"No run {run_id!r}.")
        prices = get_settings().prices if prices is None else prices
        snapshot = store.snapshot(run_id) or {}
        nodes = store.nodes_run(run_id)
        system = systems().get(record.system)
        catalog = system.agents if system is not None else {}
        _, total = usage_by_step(store.events(run_id, kinds=("custom",)), prices)
        duration = record.duration_s
        if duration is None and record.started_at is not None:
            # A waiting run has no finish time: it took until its last event.
            last = store.events(run_id, after_seq=max(0, store.latest_seq(run_id) - 1))
            if last:
                duration = max(0.0, last[-1]["ts"] - record.started_at)
        return cls(
            run_id=run_id,
            question=record.question,
            status=record.status,
            reason=record.reason,
            final_answer=record.final_answer,
            agents_used=list(dict.fromkeys(n for n in nodes if n in catalog)),
            nodes=nodes,
            steps=record.counts.get("steps", 0),
            replans=record.counts.get("replans", 0),
            chart=bool(snapshot.get("chart_spec")),
            human_decisions=[  # an experiment deciding by itself is no human's help
                str(m.get("content") or "")
                for m in store.messages(run_id, agent="human")
                if m.get("name") != "experiment"
            ],
            llm_calls=total.calls,
            input_tokens=total.input_tokens,
            output_tokens=total.output_tokens,
            cost=total.cost,
            unpriced=sorted(total.unpriced),
            duration_s=duration,
            plan_history=list(snapshot.get("plan_history") or []),
        )


@dataclass
class CheckResult:
    kind: str
    expected: Any
    passed: bool
    detail: str
    label: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def _check(check: Check, run: RunResult) -> tuple[bool, str]:
    answer = run.final_answer or ""
    value = check.value
    if check.kind in TEXT_KINDS:
        if not answer:
            return False, "the run has no final answer"
        found = value.lower() in answer.lower()
        detail = f"{value!r} {'is' if found else 'is not'} in the answer"
        return (found if check.kind == "answer_contains" else not found), detail
    if check.kind == "uses_agents":
        missing = [a for a in value if a not in run.agents_used]
        if missing:
            return (
                False,
                f"never ran: {', '.join(missing)} (ran: {', '.join(run.agents_used) or 'none'})",
            )
        return True, "ran: " + ", ".join(run.agents_used)
    if check.kind == "max_steps":
        return run.steps <= value, f"{run.steps} step(s)"
    if check.kind == "max_replans":
        return run.replans <= value, f"{run.replans} replan(s)"
    if check.kind == "chart_produced":
        return run.chart, "a chart was produced" if run.chart else "no chart"
    # no_human_help
    if run.status == "waiting":
        return False, f"the run ended waiting for a human: {run.reason}"
    if run.human_decisions:
        return False, (
            f"{len(run.human_decisions)} human decision(s): " + "; ".join(run.human_decisions)
        )
    return True, "no human decision"


def evaluate(question: EvalQuestion, run: RunResult) -> list[CheckResult]:
    """Each of the question's checks on the run, with what was found.

    Answer checks ignore case. A run with no final answer fails both answer checks
    (a missing answer proves nothing about what it would have said)."""
    results = []
    for check in question.checks:
        passed, detail = _check(check, run)
        results.append(CheckResult(check.kind, check.value, bool(passed), detail, check.label))
    return results


def run_passed(run: RunResult, results: list[CheckResult]) -> bool:
    """A run passes its question when it ended done and every check passed: a failed or
    waiting run never counts as a pass, whatever its checks say."""
    return run.status == "done" and all(r.passed for r in results)


# --------------------------------------------------------------------------- judged quality

JUDGE_PROMPT = "judge/gpa"
register(
    PromptSpec(
        JUDGE_PROMPT,
        "Judge: goal-plan-action scores (1-5 with a reason) of a finished run.",
        frozenset({"user_query", "plans", "steps", "decisions", "final_answer", "outcome"}),
        frozenset({"user_query", "plans", "final_answer"}),
    )
)
GPA_METRICS = ("plan_quality", "plan_adherence", "execution_efficiency", "logical_consistency")


class JudgeUnavailable(StepwiseError, RuntimeError):
    """Judging needs a real model; the offline scripted model has no judgement."""


class Score(BaseModel):
    score: int = Field(ge=1, le=5)
    reason: str = ""


class GpaScores(BaseModel):
    plan_quality: Score
    plan_adherence: Score
    execution_efficiency: Score
    logical_consistency: Score


def judge_available(settings: Settings | None = None) -> bool:
    return (settings or get_settings()).resolved_provider == "openai"


def _judge_values(store: Store, run_id: str) -> dict[str, str]:
    record = store.run(run_id)
    if record is None:
        raise KeyError(f"No run {run_id!r}.")
    snapshot = store.snapshot(run_id) or {}
    plans = []
    for version in snapshot.get("plan_history") or []:
        plans.append(
            f"Plan version {version.get('version')} (from step {version.get('step')}; "
            f"{version.get('reason') or 'initial plan'}):"
        )
        for key, block in sorted((version.get("plan") or {}).items(), key=lambda kv: int(kv[0])):
            plans.append(f"  {key}. {block.get('agent')}: {block.get('action')}")
    steps = [
        f"{r['step']}. {r['agent']} [{r['status']}, {r['replans']} replan(s)]: "
        f"{r['action']} -> {str(r.get('result') or '')[:400]}"
        for r in snapshot.get("rows") or []
    ]
    decisions = [
        f"step {m.get('step')}: {str(m.get('content') or '')[:300]}"
        for m in store.messages(run_id, agent="executor")
    ]
    decisions += [
        f"step {m.get('step')} (human): {m.get('content')}"
        for m in store.messages(run_id, agent="human")
    ]
    return {
        "user_query": record.question,
        "plans": "\n".join(plans) or "(no plan)",
        "steps": "\n".join(steps) or "(no steps)",
        "decisions": "\n".join(decisions) or "(none)",
        "final_answer": record.final_answer or "(no final answer)",
        "outcome": f"{record.status}: {record.reason}".strip(),
    }


def judge_run(
    store: Store, run_id: str, model: BaseChatModel | None = None, settings: Settings | None = None
) -> dict[str, dict]:
    """Goal-plan-action scores of a run, in the spirit of TruLens' agent GPA metrics:
    ``{plan_quality, plan_adherence, execution_efficiency, logical_consistency:
    {score 1-5, reason}}``. The prompt is ``judge/gpa`` (its active stored version, else
    the file); the scores are stored with the run's judgements. Raises
    JudgeUnavailable without a real model."""
    settings = settings or get_settings()
    if model is None:
        if not judge_available(settings):
            raise JudgeUnavailable(
                "Judging quality needs a real model: make a model profile of a real server "
                "(any OpenAI-compatible one) active, or set OPENAI_BASE_URL or OPENAI_API_KEY. "
                "The offline scripted model cannot judge a run."
            )
        model = make_chat_model("planner", settings)
    elif getattr(model, "is_scripted", False):
        raise JudgeUnavailable(
            "Judging quality needs a real model; the offline scripted model cannot judge a run."
        )
    prompts = PromptSet(
        {n: t for n, t in store.active_prompt_texts().items()}, prompts_dir=settings.prompts_dir
    )
    example = json.dumps({m: {"score": 4, "reason": "One sentence on why."} for m in GPA_METRICS})
    reply = ask_json(
        model,
        prompts.render(JUDGE_PROMPT, **_judge_values(store, run_id)),
        GpaScores,
        label="The judge",
        repair_prompt=lambda error, _reply: (
            f"Your reply could not be used: {error}. Reply again with ONLY valid "
            f"JSON of this shape, nothing else:\n{example}"
        ),
        enums={"score": [1, 2, 3, 4, 5]},
        kind="judgement",
    )
    scores = reply.value.model_dump()
    store.save_judgement(run_id, model_label(model), scores)
    return scores
