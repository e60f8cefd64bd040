"""The scripted model's rules for plan_execute: which role a prompt is for (``answer``),
the answer stitched from the findings with their citations (``synthesize``), and the
tables of its tools (``TOOL_RULES``, ``SUMMARIES``) that ``graph.models.scripted.rules``
reads. The Planner's and Executor's rules are in ``offline_planning``, the tools' in
``offline_tools``.
"""

from __future__ import annotations

import re

from graph.models.scripted.common import (
    LABEL,
    is_useful,
    user_query,
)
from graph.plan_execute.offline_planning import executor_decision, plan_for
from graph.plan_execute.offline_tools import (
    chart_args,
    chart_caption,
    read_rows,
    report_args,
    search_args,
    search_summary,
    sql_args,
)

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


TOOL_RULES = {
    "search_knowledge_base": search_args,
    "run_sql": sql_args,
    "make_chart": chart_args,
    "describe_chart": lambda request, system: {},
    "save_report": report_args,
}
# How a tool's result is read back as the agent's findings.
SUMMARIES = {
    "search_knowledge_base": search_summary,
    "run_sql": lambda messages, content: read_rows(content),
    "describe_chart": lambda messages, content: chart_caption(content),
}
