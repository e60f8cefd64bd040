"""The scripted model's rules for plan_execute: the Planner's plan (fresh or revised), the
Executor's routing (the source design's three cases, replanning a step that found nothing), SQL for
a handful of question shapes, the search, chart and report tools, and an answer stitched
from the findings with their citations.

Over 400 lines because plan_execute has the most roles to script (Planner, Executor, six
agents and their tools); each rule is short and they read best side by side.
"""

from __future__ import annotations

import json
import re

from langchain_core.messages import BaseMessage

from graph.models.scripted.common import (
    LABEL,
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


def _search_args(request: str, system: str) -> dict:
    query = re.sub(
        r"^(Search the documents for|Try again more broadly|Using the stock "
        r"database, answer):\s*",
        "",
        request,
    )
    return {"query": re.sub(r"\s*\((symbols|period|User question):.*?\)", "", query).strip(" .")}


def _chart_args(request: str, system: str) -> dict | str:
    datasets = re.findall(r"^- (sql:\d+): columns ([\w, ]+)", system, re.M)
    for dataset_id, cols in reversed(datasets):
        columns = [c.strip() for c in cols.split(",")]
        if "date" in columns and "price" in columns:
            return {
                "dataset_id": dataset_id,
                "x": "date",
                "y": "price",
                "color": "symbol" if "symbol" in columns else None,
                "mark": "line",
                "title": "Monthly closing price",
            }
    for dataset_id, cols in reversed(datasets):
        columns = [c.strip() for c in cols.split(",")]
        numeric = [c for c in columns if c.endswith(("_pct", "price", "avg_price"))]
        if "symbol" in columns and numeric:
            return {
                "dataset_id": dataset_id,
                "x": "symbol",
                "y": numeric[-1],
                "mark": "bar",
                "title": numeric[-1].replace("_", " "),
            }
    return "No usable results: no dataset with prices has been fetched yet, so there is nothing to chart."


def _sql_args(request: str, system: str) -> dict | str:
    if "stocks" not in system:
        return "No usable results: the database schema I was given has no stocks table."
    return {"sql": write_sql(request)}


def _report_args(request: str, system: str) -> dict:
    title = re.search(r'titled "(.+?)"', request)
    findings = request.split("Findings so far:", 1)
    body = findings[1].strip() if len(findings) > 1 else "(no findings yet)"
    return {"title": title.group(1) if title else "Stepwise report", "body": body}


def write_sql(request: str) -> str:
    """SQL for the question shapes the scripted model knows: growth, averages, extremes, series."""
    # The instruction decides; the user's question appended to it only fills gaps.
    instruction, _, context = request.partition("(User question:")
    hint_symbols = re.search(r"symbols: ([^;)]+)", instruction)
    if hint_symbols:
        symbols = [s.strip().upper() for s in hint_symbols.group(1).split(",") if s.strip()]
    else:
        symbols = (
            symbols_in(instruction)
            or [n.upper() for n in unknown_companies(instruction)]
            or symbols_in(context)
        )
    years = years_in(instruction) or years_in(context)
    request = instruction
    start = f"{min(years)}-01-01" if years else "2000-01-01"
    end = f"{max(years)}-12-31" if years else "2010-12-31"
    where = f"date BETWEEN '{start}' AND '{end}'"
    if symbols:
        where += " AND symbol IN (" + ", ".join(f"'{s}'" for s in symbols) + ")"
    text = request.lower()
    if re.search(r"\b(chart|plot|monthly prices|price series|fetch the monthly)\b", text):
        return f"SELECT date, symbol, price FROM stocks WHERE {where} ORDER BY date, symbol"
    if re.search(
        r"\b(grew|grow|growth|gain|gained|rise|rose|increase|change|changed|"
        r"return|perform|performed|fell|fall|drop|dropped|decline|lost)\b",
        text,
    ):
        order = (
            "ASC" if re.search(r"\b(fell|fall|drop|dropped|decline|lost|worst)\b", text) else "DESC"
        )
        return (
            "WITH span AS (SELECT symbol, MIN(date) AS first_date, MAX(date) AS last_date "
            f"FROM stocks WHERE {where} GROUP BY symbol) "
            "SELECT s.symbol, s.first_date, f.price AS first_price, s.last_date, "
            "l.price AS last_price, ROUND(100.0 * (l.price - f.price) / f.price, 1) AS growth_pct "
            "FROM span s JOIN stocks f ON f.symbol = s.symbol AND f.date = s.first_date "
            "JOIN stocks l ON l.symbol = s.symbol AND l.date = s.last_date "
            f"ORDER BY growth_pct {order}"
        )
    if re.search(r"\b(average|mean)\b", text):
        return (
            f"SELECT symbol, ROUND(AVG(price), 2) AS avg_price, COUNT(*) AS months "
            f"FROM stocks WHERE {where} GROUP BY symbol ORDER BY avg_price DESC"
        )
    if re.search(r"\b(highest|peak|max|maximum|lowest|min|minimum|bottom)\b", text):
        agg, order = (
            ("MIN", "ASC")
            if re.search(r"\b(lowest|min|minimum|bottom)\b", text)
            else ("MAX", "DESC")
        )
        return (
            f"SELECT symbol, date, price FROM stocks s WHERE {where} AND price = "
            f"(SELECT {agg}(price) FROM stocks t WHERE t.symbol = s.symbol AND "
            f"t.{where.replace('symbol IN', 't.symbol IN')}) ORDER BY price {order}"
        )
    return f"SELECT date, symbol, price FROM stocks WHERE {where} ORDER BY date, symbol"


def _read_rows(content: str) -> str:
    lines = content.splitlines()
    count = re.search(r"^(\d+) row", lines[1] if len(lines) > 1 else "")
    if not count or count.group(1) == "0":
        # what the tool says an empty result means comes first: it must survive clipping
        said = f" {lines[2]}" if len(lines) > 2 and lines[2].startswith("The database") else ""
        return f"No usable results: the query returned no rows.{said} {lines[0]}"
    header = lines[2].split(" | ")
    top = "; ".join(lines[3:6])
    first = ", ".join(f"{k} {v}" for k, v in zip(header, lines[3].split(" | ")))
    return (
        f"The query returned {count.group(1)} row(s) with columns {', '.join(header)}. "
        f"Top rows: {top}. Reading: first row {first}."
    )


def _caption(content: str) -> str:
    singles = re.findall(r"^(\S+): a single point, ([\d.-]+) at (\S+)", content, re.M)
    rows = re.findall(
        r"^(\S+): first ([\d.-]+) at (\S+), last ([\d.-]+) at (\S+), min ([\d.-]+) "
        r"at (\S+), max ([\d.-]+) at (\S+)",
        content,
        re.M,
    )
    if singles and not rows:
        bars = "; ".join(f"{name} {value} ({at})" for name, value, at in singles)
        one = "a single bar" if len(singles) == 1 else f"{len(singles)} single bars"
        return f"The chart shows {one}: {bars}. There is no change over time to read from it."
    if not rows:
        return "No usable results: the chart has no figures to describe."
    if not any(re.match(r"\d{4}-\d{2}", r[2]) for r in rows):  # bars over categories
        best = max(rows, key=lambda r: float(r[7]))
        worst = min(rows, key=lambda r: float(r[5]))
        across = f", across {len(rows)} series" if len(rows) > 1 else ""
        return (
            f"{best[0]} is highest at {best[7]} ({best[8]}) and lowest at "
            f"{worst[5]} ({worst[6]}){across}."
        )

    def change(r: tuple[str, ...]) -> float:
        return (float(r[3]) - float(r[1])) / float(r[1]) * 100

    best = max(rows, key=change)
    worst = min(rows, key=change)
    text = (
        f"{best[0]} moved from {best[1]} ({best[2]}) to {best[3]} ({best[4]}), "
        f"{change(best):+.1f}%, the largest change of {len(rows)} series."
    )
    if worst is not best:
        text += f" {worst[0]} went from {worst[1]} to {worst[3]} ({change(worst):+.1f}%)."
    return text


_STEP_PREFIX = re.compile(r"^- Step \d+ \(\w+\):\s*")


def synthesize(prompt: str) -> str:
    """The findings restated per step, each with the source ids it came with."""
    question = user_query(prompt)
    section = re.search(r"Findings, step by step:\s*(.*?)\n\s*Sources you may cite:", prompt, re.S)
    findings = [
        line.strip()
        for line in (section.group(1) if section else "").splitlines()
        if line.strip().startswith("- Step")
    ]
    useful = [f for f in findings if is_useful(f)]
    caption = re.search(r"Chart caption \(if a chart was made\): (.+)$", prompt, re.M)
    lines = [f'FINAL ANSWER: Answer to "{question}", from the steps that ran:']
    for finding in useful:
        finding = _STEP_PREFIX.sub("", finding)
        if finding.startswith("Chart made") and caption:
            continue  # the caption below says it with figures
        reading = re.search(r"Reading: (.*)", finding)
        lines.append("- " + (reading.group(1) if reading else finding))
    if caption and caption.group(1).strip() not in ("", "none"):
        lines.append(f"- Chart: {caption.group(1).strip()}")
    for gap in sorted(
        set(re.findall(r"(The database holds no prices for [^:]+: it has only [^)]+\))", prompt))
    ):
        lines.append(f"- Not in the data: {gap}")  # said even when other steps found things
    if not useful:
        lines.append(
            "- No step found usable data, so this question cannot be answered "
            "from the knowledge base or the database."
        )
    lines.append(f"\n({LABEL}: answer assembled by rules from the findings above.)")
    return "\n".join(lines)


def answer(prompt: str) -> dict | str | None:
    """The reply to a plan_execute prompt, or None for another system's."""
    if '"goto"' in prompt:
        return executor_decision(prompt)
    if '"agent"' in prompt and '"action"' in prompt:
        return plan_for(prompt)
    if "Findings" in prompt:
        return synthesize(prompt)
    return None


def _search_summary(messages: list[BaseMessage], content: str) -> str:
    hits = re.findall(r"^(\[kb:[^\]]+\]) (.+)$", content, re.M)
    return "Findings: " + "; ".join(f"{title} {source}" for source, title in hits[:3])


TOOL_RULES = {
    "search_knowledge_base": _search_args,
    "run_sql": _sql_args,
    "make_chart": _chart_args,
    "describe_chart": lambda request, system: {},
    "save_report": _report_args,
}
# How a tool's result is read back as the agent's findings.
SUMMARIES = {
    "search_knowledge_base": _search_summary,
    "run_sql": lambda messages, content: _read_rows(content),
    "describe_chart": lambda messages, content: _caption(content),
}
