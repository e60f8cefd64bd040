"""The prompts of plan_execute: which placeholders each may use, and the functions that
fill them from a state (``plan_prompt``, ``executor_prompt``, ...).

The texts live in ``prompts/plan_execute/*.txt``; this module only declares and fills.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Sequence, cast

from langchain_core.messages import BaseMessage

from graph.plan_execute.agents import (
    AGENTS,
    enabled_specs,
    format_agent_guidelines,
    format_agent_list,
    plannable,
    spec_of,
)
from graph.plan_execute.state import State
from graph.prompts import PromptSet, PromptSpec, register

_P = "plan_execute/"

SAMPLE_PLAN = {
    "1": {"agent": "data_researcher", "action": "Compute each stock's growth from 2005 to 2009."},
    "2": {"agent": "synthesizer", "action": "Answer the question from the findings."},
}
SAMPLE_STATE: dict[str, Any] = {
    "user_query": "Which stock in the database grew the most between 2005 and 2009?",
    "enabled_agents": list(AGENTS),
    "plan": SAMPLE_PLAN,
    "current_step": 1,
    "replan_attempts": {},
    "step_results": {},
    "messages": [],
}

register(
    PromptSpec(
        _P + "planner",
        "Planner: breaks the request into numbered steps.",
        frozenset(
            {
                "agent_list",
                "agent_names",
                "agent_enum",
                "agent_guidelines",
                "plan_example",
                "replan_section",
                "user_query",
            }
        ),
        frozenset({"agent_list", "replan_section", "user_query"}),
    )
)
register(
    PromptSpec(
        _P + "planner_fresh",
        "Planner, first plan: appended as {replan_section}.",
        frozenset({"user_query"}),
    )
)
register(
    PromptSpec(
        _P + "planner_replan",
        "Planner, replanning: appended as {replan_section}.",
        frozenset({"replan_reason", "prior_plan", "current_step", "user_query"}),
        frozenset({"replan_reason", "prior_plan"}),
    )
)
register(
    PromptSpec(
        _P + "executor",
        "Executor: replan?, which agent next, and its query.",
        frozenset(
            {
                "agents",
                "agent_enum",
                "goto_names",
                "decision_example",
                "agent_guidelines",
                "max_replans",
                "attempts",
                "plan_agent",
                "next_agent",
                "user_query",
                "current_step",
                "plan_step",
                "plan_json",
                "step_result",
                "replan_flag",
                "messages_tail",
            }
        ),
        frozenset({"user_query", "current_step", "plan_step", "step_result"}),
    )
)
register(
    PromptSpec(
        _P + "agent_system",
        "Shared team prompt of every sub-agent; {role} is the agent's own prompt.",
        frozenset({"role"}),
        frozenset({"role"}),
    )
)
register(PromptSpec(_P + "web_researcher", "Role of web_researcher.", frozenset()))
register(
    PromptSpec(
        _P + "data_researcher",
        "Role of data_researcher; {schema} is the database schema.",
        frozenset({"schema"}),
        frozenset({"schema"}),
    )
)
register(
    PromptSpec(
        _P + "chart_generator",
        "Role of chart_generator; {datasets} lists the run's datasets.",
        frozenset({"datasets"}),
        frozenset({"datasets"}),
    )
)
register(PromptSpec(_P + "chart_summarizer", "Role of chart_summarizer.", frozenset()))
register(
    PromptSpec(_P + "report_writer", "Role of report_writer (saves a report file).", frozenset())
)
register(
    PromptSpec(
        _P + "synthesizer",
        "Synthesizer: the final answer with citations.",
        frozenset({"user_query", "findings", "sources", "chart_caption"}),
        frozenset({"user_query", "findings"}),
    )
)
register(
    PromptSpec(
        _P + "repair",
        "Sent back when a JSON reply is unusable.",
        frozenset({"error", "reply", "expected"}),
        frozenset({"error"}),
    )
)


def _one_line(text: object, limit: int = 600) -> str:
    flat = " / ".join(part.strip() for part in str(text).splitlines() if part.strip())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _example_agent(enabled: list[str] | None) -> str:
    """The agent of the examples' first step: a researcher when one is on."""
    planned = plannable(enabled)
    return next(
        (a for a in ("data_researcher", "web_researcher") if a in planned),
        next((a for a in planned if a != "synthesizer"), planned[0] if planned else ""),
    )


def _example(agent: str) -> str:
    spec = spec_of(agent)
    return spec.example if spec is not None else ""


def plan_example(enabled: list[str] | None) -> str:
    """A concrete, valid plan for the prompt's example question, with enabled agents only:
    small models copy an example's literal text, so it is never ``a | b`` or "string"."""
    first = _example_agent(enabled)
    steps = [first] + (
        ["synthesizer"] if "synthesizer" in plannable(enabled) and first != "synthesizer" else []
    )
    return json.dumps(
        {
            "steps": [
                {"agent": a, "action": _example(a), "approval": False, "approval_reason": ""}
                for a in steps
                if a
            ]
        }
    )


def plan_json(plan: dict) -> str:
    """A plan in the shape the Planner writes (``{"steps": [...]}``), for its prompts."""
    ordered = [plan[k] for k in sorted(plan, key=int)]
    return json.dumps({"steps": ordered}, indent=2)


def executor_example(enabled: list[str] | None) -> str:
    agent = _example_agent(enabled)
    return json.dumps(
        {
            "replan": False,
            "goto": agent or "end",
            "reason": "Step 1 has not run yet, so its agent goes first.",
            "query": _example(agent) if agent else "",
        }
    )


def goto_names(enabled: list[str] | None) -> list[str]:
    """What the Executor's "goto" may name: the plannable agents, the Planner, or the end."""
    return [*plannable(enabled), "planner", "end"]


def plan_prompt(state: State, prompts: PromptSet) -> str:
    """The Planner's prompt: a fresh plan, or a revision with the reason and the current plan."""
    enabled = state.get("enabled_agents")
    user_query = state.get("user_query") or ""
    if state.get("replan_flag"):
        section = prompts.render(
            _P + "planner_replan",
            replan_reason=state.get("last_reason") or "(no reason given)",
            prior_plan=plan_json(state.get("plan") or {}),
            current_step=state.get("current_step", 1),
            user_query=user_query,
        )
    else:
        section = prompts.render(_P + "planner_fresh", user_query=user_query)
    return prompts.render(
        _P + "planner",
        agent_list=format_agent_list(enabled),
        agent_names=", ".join(plannable(enabled)) or "(none)",
        agent_enum=", ".join(plannable(enabled)) or "(none)",  # the name earlier versions used
        agent_guidelines=format_agent_guidelines(enabled),
        plan_example=plan_example(enabled),
        replan_section=section,
        user_query=user_query,
    )


def format_messages_tail(messages: Sequence[BaseMessage], count: int = 4) -> str:
    lines = []
    for m in messages[-count:]:
        who = getattr(m, "name", None) or m.type
        lines.append(f"  [{who}] {_one_line(m.content, 300)}")
    return "\n".join(lines) or "  (none)"


def executor_prompt(state: State, prompts: PromptSet, max_replans: int) -> str:
    """The Executor's prompt: the current step, its result so far, and the rules of routing."""
    enabled = state.get("enabled_agents")
    plan = state.get("plan") or {}
    step = int(state.get("current_step") or 1)
    block, nxt = plan.get(str(step), {}), plan.get(str(step + 1))
    agents = [s.name for s in enabled_specs(enabled) if s.planned] + ["planner"]
    return prompts.render(
        _P + "executor",
        agents=", ".join(agents),
        agent_enum=", ".join(goto_names(enabled)),
        goto_names=", ".join(goto_names(enabled)),
        decision_example=executor_example(enabled),
        agent_guidelines=format_agent_guidelines(enabled),
        max_replans=max_replans,
        attempts=(state.get("replan_attempts") or {}).get(str(step), 0),
        plan_agent=block.get("agent", "?"),
        next_agent=nxt["agent"] if nxt else 'none: this is the last step, answer "end"',
        user_query=state.get("user_query") or "",
        current_step=step,
        plan_step=json.dumps(block),
        plan_json=json.dumps(plan),
        step_result=_one_line((state.get("step_results") or {}).get(str(step), "(not run yet)")),
        replan_flag=bool(state.get("replan_flag")),
        messages_tail=format_messages_tail(state.get("messages") or []),
    )


def describe_datasets(datasets: list[dict]) -> str:
    return (
        "\n".join(
            f"- {d['id']}: columns {', '.join(d['columns'])} ({len(d['rows'])} rows), "
            f"from step {d.get('step')}: {d['sql']}"
            for d in datasets
        )
        or "- (none yet)"
    )


def agent_prompt(prompts: PromptSet, agent: str, **values: object) -> str:
    """A sub-agent's system prompt: the shared team prompt around the agent's own role."""
    role = prompts.render(_P + agent, **values)
    return prompts.render(_P + "agent_system", role=role)


def synthesizer_prompt(state: State, prompts: PromptSet) -> str:
    plan = state.get("plan") or {}
    results = state.get("step_results") or {}
    findings = [
        f"- Step {n} ({plan.get(n, {}).get('agent', '?')}): {_one_line(text)}"
        for n, text in sorted(results.items(), key=lambda kv: int(kv[0]))
    ]
    # What earlier versions of the plan found missing: a replan replaces a step's result,
    # and an answer must still say what the data does not hold.
    findings += [
        f"- Before replan {entry['version'] - 1}: {_one_line(entry['reason'])}"
        for entry in state.get("plan_history") or []
        if entry.get("version", 1) > 1 and "no usable" in str(entry.get("reason", "")).lower()
    ]
    sources = [f"- [{s['id']}] {s.get('title', '')}" for s in state.get("sources") or []]
    sources += [
        f"- [{d['id']}] SQL: {d['sql']} ({len(d['rows'])} rows)"
        for d in state.get("datasets") or []
    ]
    return prompts.render(
        _P + "synthesizer",
        user_query=state.get("user_query") or "",
        findings="\n".join(findings) or "- (no step produced findings)",
        sources="\n".join(sources) or "- (none)",
        chart_caption=state.get("chart_caption") or "none",
    )


def repair_prompt(prompts: PromptSet, expected: str) -> Callable[[str, str], str]:
    """A function giving the repair message for an unusable JSON reply."""
    return lambda error, reply: prompts.render(
        _P + "repair", error=error, reply=reply[:2000], expected=expected
    )


def preview_prompt(name: str, text: str, state: dict | None = None, max_replans: int = 3) -> str:
    """Prompt ``name`` as the model would receive it, with ``text`` in place of its
    current template, for ``state`` (a sample state when None). Raises PromptError
    naming any bad placeholder, so the editor can show it inline."""
    from graph.tools.database import SCHEMA_SQL

    sample = cast(State, {**SAMPLE_STATE, **(state or {})})
    prompts = PromptSet({name: text})
    short = name.removeprefix(_P)
    if short in ("planner", "planner_fresh", "planner_replan"):
        if short == "planner_replan":
            sample = {
                **sample,
                "replan_flag": True,
                "last_reason": sample.get("last_reason") or "step 1 returned no rows",
            }
        return plan_prompt(sample, prompts)
    if short == "executor":
        return executor_prompt(sample, prompts, max_replans)
    if short == "synthesizer":
        return synthesizer_prompt(sample, prompts)
    if short == "repair":
        return prompts.render(
            name,
            error="the reply is not valid JSON",
            reply="Sure! Here is…",
            expected=plan_example(sample.get("enabled_agents")),
        )
    values = {
        "schema": SCHEMA_SQL.strip(),
        "datasets": describe_datasets(sample.get("datasets") or []),
        "role": "(role)",
    }
    if short == "agent_system":
        return prompts.render(name, role="(the agent's own role prompt goes here)")
    return agent_prompt(prompts, short, **values)
