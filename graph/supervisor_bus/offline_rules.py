"""The scripted model's rules for supervisor_bus: the supervisor routes first to the user
agents whose descriptions share words with the question (the best match first; one that
shares none is not asked), then to the first offered worker that has neither answered nor
been ruled out (research, writing, review), then FINISH; a worker chains a second tool
where it has one (a search is followed by reading its top document, formatted output by
saving it as a draft). A user agent's own tools are played by the model's ``any_tool``
rule, as in every system."""

from __future__ import annotations

import re

from langchain_core.messages import BaseMessage, ToolMessage

from graph.models.scripted.common import allowed_values, message_text, tool_name_of, user_query
from graph.models.scripted.described import described_agents, words

_BUILT_IN = frozenset({"researcher", "writer", "reviewer"})


def _in_order(prompt: str, agents: list[str], question: str) -> list[str]:
    """The offered agents in the order they are asked: the user agents whose descriptions
    share words with the question, most shared first, then the others as offered; a user
    agent whose description shares none is left out."""
    asked = words(question)
    shared = {
        name: len(described & asked)
        for name, described in described_agents(prompt, agents, _BUILT_IN).items()
    }
    users = sorted((n for n, score in shared.items() if score), key=lambda n: -shared[n])
    return [*users, *(a for a in agents if a not in shared)]


def supervisor_decision(prompt: str) -> dict:
    """The supervisor_bus routing: the first agent that has neither answered nor been
    ruled out, user agents matching the question first, then in the order offered
    (research, writing, review); FINISH after."""
    agents = [a for a in allowed_values(prompt, "next_agent") or [] if a != "FINISH"]
    answered = re.search(r"^Answered so far: (.*)$", prompt, re.M)
    answered_names = {a.strip() for a in (answered.group(1) if answered else "").split(",")}
    excluded = re.search(r"^Do not ask again: (.*)$", prompt, re.M)
    excluded_line = excluded.group(1) if excluded else ""
    asked = re.search(r'^User question: "(.*)"\s*$', prompt, re.M)
    question = asked.group(1) if asked else user_query(prompt)
    order = _in_order(prompt, agents, question)
    users = set(order) - _BUILT_IN
    for agent in order:
        if agent in answered_names or re.search(rf"\b{re.escape(agent)} \(", excluded_line):
            continue
        return {
            "next_agent": agent,
            "task": _bus_task(agent, question),
            "reason": f"{agent}'s description fits the question; it has not answered yet."
            if agent in users
            else f"{agent} has not answered yet; its part comes next.",
        }
    return {
        "next_agent": "FINISH",
        "task": "",
        "reason": "Every agent that can help has answered or been ruled out.",
    }


def _bus_task(agent: str, question: str) -> str:
    if agent == "researcher":
        return f"Search the documents for: {question}"
    if agent == "writer":
        return (
            f'Write the answer to "{question}" from the findings you received, format '
            "it and save it as a draft."
        )
    if agent == "reviewer":
        return f'Check that the sources cited in the material you received exist ("{question}").'
    return f"Do your part for: {question}"


_RECEIVED = "Messages you received for this task:"


def _received(request: str) -> str:
    """The forwarded messages of a bus request, without their "- from x (id):" heads."""
    if _RECEIVED not in request:
        return ""
    block = request.split(_RECEIVED, 1)[1]
    return "\n".join(
        re.sub(r"^- from \w+ \([^)]*\):\s*", "", line).strip()
        for line in block.strip().splitlines()
        if line.strip()
    )


def _format_args(request: str) -> dict:
    title = re.search(r'answer to "(.+?)"', request)
    return {
        "title": title.group(1) if title else "Answer",
        "body": _received(request) or "(no findings were received)",
    }


def _fetch_args(request: str) -> dict | str:
    found = re.search(r"\[(kb:[^\]\s]+)\]", request)
    if not found:
        return "No usable results: no document id to fetch."
    return {"doc_id": found.group(1)}


def _findings_with_reading(messages: list[BaseMessage], content: str) -> str:
    """The search findings, with the first sentences of the document read after them."""
    if content.startswith("NO RESULTS"):
        return f"No usable results: {content.splitlines()[0]}"
    searched = next(
        (
            message_text(m)
            for m in reversed(messages)
            if isinstance(m, ToolMessage)
            and (m.name or tool_name_of(messages, m)) == "search_knowledge_base"
        ),
        "",
    )
    hits = re.findall(r"^(\[kb:[^\]]+\]) (.+)$", searched, re.M)
    lines = content.splitlines()
    source = lines[0].split(" ", 1)[0] if lines else ""
    body = " ".join(line.strip() for line in lines[2:] if line.strip())
    reading = " ".join(re.split(r"(?<=[.!?])\s+", body)[:2])[:400]
    findings = "; ".join(f"{title} {src}" for src, title in hits[:3])
    text = f"Findings: {findings}." if findings else "Findings:"
    return f"{text}\nFrom {source}: {reading}"


def answer(prompt: str) -> dict | None:
    return supervisor_decision(prompt) if '"next_agent"' in prompt else None


def _saved_args(content: str) -> dict:
    title = re.match(r"# (.+)", content)
    return {"title": title.group(1) if title else "Answer", "body": content}


TOOL_RULES = {
    "fetch_document": lambda request, system: _fetch_args(request),
    "format_output": lambda request, system: _format_args(request),
    "write_draft": lambda request, system: _format_args(request),
    "check_citations": lambda request, system: {"text": _received(request) or request},
}
SUMMARIES = {"fetch_document": _findings_with_reading}
# After one tool comes a second, once: (the tool, its arguments from the first's result,
# or None when there is nothing to go on).
FOLLOW_UPS = {
    "search_knowledge_base": (
        "fetch_document",
        lambda content: a if isinstance(a := _fetch_args(content), dict) else None,
    ),
    "format_output": ("write_draft", _saved_args),
}
