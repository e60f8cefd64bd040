"""The scripted model's rules for plan_execute's Planner and Executor: the Planner's plan
(fresh, or revised for a step that found nothing; steps flagged for approval when the
question asks for it) and the Executor's routing (the source design's three cases).
"""

from __future__ import annotations

import json
import re

from graph.models.scripted.common import (
    allowed_values,
    is_useful,
    symbols_in,
    unknown_companies,
    user_query,
    years_in,
)
from graph.models.scripted.described import agent_for, described_agents


def _agents_offered(prompt: str) -> list[str]:
    """The agents a prompt lets us use: its list of allowed values, else its agent list."""
    allowed = allowed_values(prompt, "agent")
    if allowed is not None:
        return allowed
    return re.findall(r"^- ([a-z]+_[a-z_]+):", prompt, re.M)


_BUILT_IN = frozenset(
    {
        "web_researcher",
        "data_researcher",
        "chart_generator",
        "chart_summarizer",
        "report_writer",
        "synthesizer",
    }
)


def _user_agents(prompt: str, agents: list[str]) -> dict[str, set[str]]:
    """Agents offered that are not plan_execute's own (user agents), with the words of
    their descriptions as the agent list gives them."""
    return described_agents(prompt, agents, _BUILT_IN)


def _clauses(question: str) -> list[str]:
    parts = re.split(
        r"(?<=[.?!;])\s+|,\s*and\s+|\s+and then\s+|\s+and\s+(?=(?:how|what|why|"
        r"which|when|who)\b)",
        question.strip(),
    )
    return [p.strip(" .?!;,") for p in parts if p and p.strip(" .?!;,")]


def _is_chart(text: str) -> bool:
    return bool(re.search(r"\b(chart|plot|graph|visuali[sz]e|draw)\b", text, re.I))


def _is_data(text: str) -> bool:
    return bool(
        re.search(
            r"\b(stock|stocks|price|prices|grew|growth|gain|average|highest|lowest|return|"
            r"performed|database|percent|fell|drop)\b",
            text,
            re.I,
        )
    )


def _hints(clause: str, question: str) -> str:
    """Symbols and period from the clause, else inherited from the whole question."""
    symbols = symbols_in(clause) or unknown_companies(clause) or symbols_in(question)
    years = years_in(clause) or years_in(question)
    parts = []
    if symbols:
        parts.append("symbols: " + ", ".join(symbols))
    if years:
        parts.append(f"period: {min(years)}-{max(years)}")
    return f" ({'; '.join(parts)})" if parts else ""


def plan_for(prompt: str) -> dict:
    """A plan (fresh or revised) from what the Planner prompt says."""
    agents = _agents_offered(prompt)
    if revision := re.search(r"revision at step (\d+) because: (.*)", prompt):
        current = re.search(r"Current plan:\s*(\{.*?\n\})", prompt, re.S)
        if current:
            written = json.loads(current.group(1))
            plan = (
                {str(i): s for i, s in enumerate(written["steps"], 1)}
                if "steps" in written
                else written
            )
            return _as_steps(_revise(plan, int(revision.group(1)), agents))
    question = user_query(prompt)
    steps: list[dict] = []

    def add(agent: str, action: str) -> None:
        if agent in agents:
            steps.append({"agent": agent, "action": action})

    have_series = False
    wants_report = False
    users = _user_agents(prompt, agents)
    for clause in _clauses(question):
        hints = _hints(clause, question)
        if _ASKS_APPROVAL.search(clause) and not _is_data(clause):
            continue  # an instruction about approvals, not something to research
        if user := agent_for(clause, users):
            add(user, f"{clause}.")
        elif _is_report(clause):
            wants_report = True
        elif _is_chart(clause):
            if not have_series:
                add("data_researcher", f"Fetch the monthly prices to chart{hints}.")
            add("chart_generator", f"Chart the monthly prices fetched earlier{hints}.")
            have_series = True
        elif _is_data(clause):
            researcher = "data_researcher" if "data_researcher" in agents else "web_researcher"
            add(researcher, f"Using the stock database, answer: {clause}{hints}.")
        else:
            researcher = "web_researcher" if "web_researcher" in agents else "data_researcher"
            add(researcher, f"Search the documents for: {clause}.")
    if wants_report:
        add("report_writer", f'Save the findings so far as a report titled "{question}".')
    add("synthesizer", f"Answer the user's question from the findings: {question}")
    if not steps and agents:  # nothing fits: let the one agent there is do what it can
        add(agents[0], f"Do what you can for: {question}")
    _flag_for_approval(steps, prompt, question)
    return {"steps": steps}


def _as_steps(plan: dict) -> dict:
    """The source design's ``{"1": {...}}`` map in the shape the Planner is asked for."""
    return {"steps": [plan[k] for k in sorted(plan, key=int)]}


_ASKS_APPROVAL = re.compile(r"\b(ask me|my approval|approve each|check with me)\b", re.I)


def _is_report(text: str) -> bool:
    return bool(
        re.search(
            r"\b(save|write|keep|store|file)\b.*\breport\b|\breport\b.*\b(save|file)\b", text, re.I
        )
    )


def _flag_for_approval(steps: list[dict], prompt: str, question: str) -> None:
    """Flag what the prompt says to flag: agents it lists as having side effects, and
    every research step when the user asked to approve steps."""
    risky = set(re.findall(r"^- ([a-z_]+):[^\n]*side effects", prompt, re.M))
    asked = _ASKS_APPROVAL.search(question)
    for step in steps:
        if step["agent"] in risky:
            step.update(approval=True, approval_reason=f"{step['agent']} has side effects.")
        elif asked and step["agent"] != "synthesizer":
            step.update(approval=True, approval_reason="The user asked to approve the steps.")


def _revise(plan: dict, step: int, agents: list[str]) -> dict:
    """Unblock step ``step``: hand it to the other researcher, keep every other step."""
    block = dict(plan.get(str(step), {}))
    agent, action = block.get("agent"), block.get("action", "")
    topic = re.sub(
        r"^(Using the stock database, answer|Search the documents for|"
        r"Try again more broadly): ",
        "",
        action,
    ).rstrip(".")
    if agent == "data_researcher" and "web_researcher" in agents:
        block = {"agent": "web_researcher", "action": f"Search the documents for: {topic}."}
    elif agent == "web_researcher" and "data_researcher" in agents and _is_data(topic):
        block = {
            "agent": "data_researcher",
            "action": f"Using the stock database, answer: {topic}.",
        }
    elif agent not in agents:
        fallback = next(
            (a for a in ("web_researcher", "data_researcher", "synthesizer") if a in agents),
            agents[0] if agents else agent,
        )
        block = {"agent": fallback, "action": action}
    else:
        block = {"agent": agent, "action": f"Try again more broadly: {topic}."}
    revised = dict(plan)
    revised[str(step)] = block
    return revised


def _field(prompt: str, label: str) -> str:
    found = re.search(rf"^- {label} \.*: ?(.*)$", prompt, re.M)
    return found.group(1).strip() if found else ""


def executor_decision(prompt: str) -> dict:
    """The source design's three cases, in order: replan, next step, current step."""
    step = int(_field(prompt, "Current step index") or 1)
    plan = json.loads(_field(prompt, "Full plan") or "{}")
    result = _field(prompt, "Result of current step")
    attempts = int(_field(prompt, r"Replan attempts \(step\)") or 0)
    cap = re.search(r"After (\d+) replans", prompt)
    max_replans = int(cap.group(1)) if cap else 3
    block, nxt = plan.get(str(step), {}), plan.get(str(step + 1))
    question = _field(prompt, "User query")

    if result == "(not run yet)" or not result:
        return {
            "replan": False,
            "goto": block.get("agent", "planner"),
            "reason": f"Step {step} has not run yet.",
            "query": _standalone(block.get("action", question), question),
        }
    if not is_useful(result) and attempts < max_replans:
        return {
            "replan": True,
            "goto": "planner",
            "reason": f"Step {step} ({block.get('agent')}) produced no usable data: {result[:160]}",
            "query": "",
        }
    why = (
        "has a useful result"
        if is_useful(result)
        else f"still has no usable data after {attempts} replan(s); moving on"
    )
    if nxt:
        return {
            "replan": False,
            "goto": nxt["agent"],
            "reason": f"Step {step} {why}.",
            "query": _standalone(nxt.get("action", ""), question),
        }
    return {
        "replan": False,
        "goto": "end",
        "reason": f"Step {step} {why}; the plan is complete.",
        "query": "",
    }


def _standalone(action: str, question: str) -> str:
    return action if question in action else f"{action} (User question: {question})"
