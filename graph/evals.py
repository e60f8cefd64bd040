"""Eval sets: fixed questions with checks, evaluated on what the store holds about a run.

Tuning a prompt needs a yardstick that does not move: the same questions, each with
checks a run either passes or fails (the answer says X, these agents ran, at most N
steps or replans, a chart came out, no human had to step in). A check reads only the
store (the run record, its snapshot, its messages and its ``llm_call`` events), so a
run from History, an imported run and an experiment's run are judged alike.

Quality that rules cannot check is judged by a model (``judge_run``), from the
editable prompt ``prompts/judge/gpa.txt``, and only with a real model configured.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from graph.accounting import usage_by_step
from graph.prompts import PromptSpec, register
from graph.settings import REPO_ROOT, Settings, get_settings
from graph.systems import SYSTEMS, get_system

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from graph.store import Store

EVAL_SET_FORMAT = "stepwise-eval-set"
EVAL_SET_VERSION = 1
STARTER_PATH = REPO_ROOT / "data" / "evals" / "starter.json"

CheckKind = Literal["answer_contains", "answer_not_contains", "uses_agents", "max_steps",
                    "max_replans", "chart_produced", "no_human_help"]
CHECK_KINDS: tuple[str, ...] = CheckKind.__args__  # type: ignore[attr-defined]
_TEXT_KINDS = ("answer_contains", "answer_not_contains")
_COUNT_KINDS = ("max_steps", "max_replans")
_FLAG_KINDS = ("chart_produced", "no_human_help")


def known_agents() -> list[str]:
    """Agents of every hosted system: an eval set is not tied to one system."""
    return list(dict.fromkeys(a for system in SYSTEMS.values() for a in system.agents()))


class EvalSetError(ValueError):
    """An eval set file or document that cannot be used; the message says where and why."""


# --------------------------------------------------------------------------- the set


class Check(BaseModel):
    """One thing a run must do. ``value`` is the text (answer checks), the agent names
    (``uses_agents``), the limit (``max_steps``, ``max_replans``) or nothing (flags)."""

    model_config = ConfigDict(extra="forbid")

    kind: CheckKind
    value: Any = None

    @model_validator(mode="after")
    def _value_fits_kind(self) -> Check:
        kind, value = self.kind, self.value
        if kind in _TEXT_KINDS:
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{kind} needs the text to look for")
            self.value = value.strip()
        elif kind == "uses_agents":
            names = [value] if isinstance(value, str) else value
            if not isinstance(names, list) or not names or not all(
                    isinstance(n, str) and n.strip() for n in names):
                raise ValueError("uses_agents needs a list of agent names")
            names = [n.strip() for n in names]
            known = known_agents()
            if unknown := [n for n in names if n not in known]:
                raise ValueError(f"uses_agents names unknown agent(s): {', '.join(unknown)}; "
                                 f"known: {', '.join(known)}")
            self.value = list(dict.fromkeys(names))
        elif kind in _COUNT_KINDS:
            if isinstance(value, str) and value.strip().isdigit():
                value = int(value)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{kind} needs a whole number of 0 or more")
            self.value = value
        elif value not in (None, True):
            raise ValueError(f"{kind} takes no value")
        else:
            self.value = None
        return self

    @property
    def label(self) -> str:
        """The check in words, for table headers."""
        value = self.value
        return {
            "answer_contains": lambda: f"answer contains {value!r}",
            "answer_not_contains": lambda: f"answer does not contain {value!r}",
            "uses_agents": lambda: "uses " + ", ".join(value),
            "max_steps": lambda: f"at most {value} step(s)",
            "max_replans": lambda: f"at most {value} replan(s)",
            "chart_produced": lambda: "a chart is produced",
            "no_human_help": lambda: "finishes without human help",
        }[self.kind]()


class EvalQuestion(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1)
    checks: list[Check] = Field(default_factory=list)

    @field_validator("question")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the question is empty")
        return value.strip()


class EvalSet(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=120)
    description: str = ""
    questions: list[EvalQuestion] = Field(min_length=1)

    @field_validator("name")
    @classmethod
    def _name_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the eval set needs a name")
        return value.strip()


def export_eval_set(eval_set: EvalSet) -> dict:
    """An eval set as a JSON-ready document with its format tag."""
    return {"format": EVAL_SET_FORMAT, "version": EVAL_SET_VERSION,
            "eval_set": eval_set.model_dump(mode="json")}


def _where(loc: tuple) -> str:
    """A pydantic error location in words a person can find in the file."""
    parts, items = [], list(loc)
    while items:
        key = items.pop(0)
        if key in ("questions", "checks") and items and isinstance(items[0], int):
            parts.append(f"{key[:-1]} {items.pop(0) + 1}")
        else:
            parts.append(str(key))
    return ", ".join(parts) or "eval set"


def import_eval_set(data: dict | str | bytes) -> EvalSet:
    """The eval set in an exported document (a dict, or its JSON text); EvalSetError
    says what is wrong: not JSON, not an eval set, or which question/check is bad."""
    if isinstance(data, (str, bytes, bytearray)):
        try:
            data = json.loads(data)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise EvalSetError(f"Not a JSON file: {exc}.") from None
    if not isinstance(data, dict) or data.get("format") != EVAL_SET_FORMAT:
        raise EvalSetError(f"Not a Stepwise eval set file (its \"format\" is not "
                           f"{EVAL_SET_FORMAT!r}).")
    version = data.get("version", EVAL_SET_VERSION)
    if not isinstance(version, int) or version > EVAL_SET_VERSION:
        raise EvalSetError(f"Eval set format version {version!r} is newer than this Stepwise "
                           f"reads (up to {EVAL_SET_VERSION}).")
    body = data.get("eval_set")
    if not isinstance(body, dict):
        raise EvalSetError("The file has no \"eval_set\" object.")
    try:
        return EvalSet.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        message = first["msg"].removeprefix("Value error, ")
        more = len(exc.errors()) - 1
        raise EvalSetError(f"{_where(first['loc'])}: {message}"
                           + (f" (and {more} more problem(s))" if more else "") + ".") from None


def load_starter(path: Path | None = None) -> EvalSet:
    """The starter set shipped with the app (exercises the offline tools)."""
    return import_eval_set((path or STARTER_PATH).read_text(encoding="utf-8"))


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
    def from_store(cls, store: Store, run_id: str,
                   prices: dict[str, tuple[float, float]] | None = None) -> RunResult:
        record = store.run(run_id)
        if record is None:
            raise KeyError(f"No run {run_id!r}.")
        prices = get_settings().prices if prices is None else prices
        snapshot = store.snapshot(run_id) or {}
        nodes = store.nodes_run(run_id)
        catalog = get_system(record.system).agents() if record.system in SYSTEMS else {}
        _, total = usage_by_step(store.events(run_id, kinds=("custom",)), prices)
        duration = record.duration_s
        if duration is None and record.started_at is not None:
            # A waiting run has no finish time: it took until its last event.
            last = store.events(run_id, after_seq=max(0, store.latest_seq(run_id) - 1))
            if last:
                duration = max(0.0, last[-1]["ts"] - record.started_at)
        return cls(
            run_id=run_id, question=record.question, status=record.status,
            reason=record.reason, final_answer=record.final_answer,
            agents_used=list(dict.fromkeys(n for n in nodes if n in catalog)),
            nodes=nodes, steps=record.step_count, replans=record.replan_count,
            chart=bool(snapshot.get("chart_spec")),
            human_decisions=[str(m.get("content") or "")
                             for m in store.messages(run_id, agent="human")],
            llm_calls=total.calls, input_tokens=total.input_tokens,
            output_tokens=total.output_tokens, cost=total.cost,
            unpriced=sorted(total.unpriced), duration_s=duration,
            plan_history=list(snapshot.get("plan_history") or []))


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
    if check.kind in _TEXT_KINDS:
        if not answer:
            return False, "the run has no final answer"
        found = value.lower() in answer.lower()
        detail = f"{value!r} {'is' if found else 'is not'} in the answer"
        return (found if check.kind == "answer_contains" else not found), detail
    if check.kind == "uses_agents":
        missing = [a for a in value if a not in run.agents_used]
        if missing:
            return False, f"never ran: {', '.join(missing)} (ran: {', '.join(run.agents_used) or 'none'})"
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
        return False, (f"{len(run.human_decisions)} human decision(s): "
                       + "; ".join(run.human_decisions))
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
register(PromptSpec(
    JUDGE_PROMPT, "Judge: goal-plan-action scores (1-5 with a reason) of a finished run.",
    frozenset({"user_query", "plans", "steps", "decisions", "final_answer", "outcome"}),
    frozenset({"user_query", "plans", "final_answer"})))
GPA_METRICS = ("plan_quality", "plan_adherence", "execution_efficiency", "logical_consistency")


class JudgeUnavailable(RuntimeError):
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
        plans.append(f"Plan version {version.get('version')} (from step {version.get('step')}; "
                     f"{version.get('reason') or 'initial plan'}):")
        for key, block in sorted((version.get("plan") or {}).items(), key=lambda kv: int(kv[0])):
            plans.append(f"  {key}. {block.get('agent')}: {block.get('action')}")
    steps = [f"{r['step']}. {r['agent']} [{r['status']}, {r['replans']} replan(s)]: "
             f"{r['action']} -> {str(r.get('result') or '')[:400]}"
             for r in snapshot.get("rows") or []]
    decisions = [f"step {m.get('step')}: {str(m.get('content') or '')[:300]}"
                 for m in store.messages(run_id, agent="executor")]
    decisions += [f"step {m.get('step')} (human): {m.get('content')}"
                  for m in store.messages(run_id, agent="human")]
    return {"user_query": record.question, "plans": "\n".join(plans) or "(no plan)",
            "steps": "\n".join(steps) or "(no steps)",
            "decisions": "\n".join(decisions) or "(none)",
            "final_answer": record.final_answer or "(no final answer)",
            "outcome": f"{record.status}: {record.reason}".strip()}


def judge_run(store: Store, run_id: str, model: BaseChatModel | None = None,
              settings: Settings | None = None) -> dict[str, dict]:
    """Goal-plan-action scores of a run, in the spirit of TruLens' agent GPA metrics:
    ``{plan_quality, plan_adherence, execution_efficiency, logical_consistency:
    {score 1-5, reason}}``. The prompt is ``judge/gpa`` (its active stored version, else
    the file); the scores are stored with the run's judgements. Raises
    JudgeUnavailable without a real model."""
    from graph.models.chat import make_chat_model, model_label
    from graph.models.structured import ask_json
    from graph.plan_execute.prompts import repair_prompt
    from graph.prompts import PromptSet

    settings = settings or get_settings()
    if model is None:
        if not judge_available(settings):
            raise JudgeUnavailable(
                "Judging quality needs a real model: set OPENAI_BASE_URL (any OpenAI-compatible "
                "server) or OPENAI_API_KEY. The offline scripted model cannot judge a run.")
        model = make_chat_model("planner", settings)
    elif getattr(model, "is_scripted", False):
        raise JudgeUnavailable("Judging quality needs a real model; the offline scripted "
                               "model cannot judge a run.")
    prompts = PromptSet({n: t for n, t in store.active_prompt_texts().items()},
                        prompts_dir=settings.prompts_dir)
    example = json.dumps({m: {"score": 4, "reason": "One sentence on why."} for m in GPA_METRICS})
    reply = ask_json(model, prompts.render(JUDGE_PROMPT, **_judge_values(store, run_id)),
                     GpaScores, label="The judge", repair_prompt=repair_prompt(prompts, example),
                     enums={"score": [1, 2, 3, 4, 5]})
    scores = reply.value.model_dump()
    store.save_judgement(run_id, model_label(model), scores)
    return scores
