"""What every rule set of the scripted model reads prompts with: the honest label, token
counts, message text, the allowed values a prompt lists, and the companies, tickers and
years a question names."""

from __future__ import annotations

import json
import re
import uuid

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

LABEL = "offline scripted model"

COMPANIES = {
    "microsoft": "MSFT",
    "amazon": "AMZN",
    "ibm": "IBM",
    "google": "GOOG",
    "alphabet": "GOOG",
    "apple": "AAPL",
}

TICKERS = set(COMPANIES.values())

NOT_COMPANIES = {
    "what",
    "which",
    "how",
    "why",
    "when",
    "where",
    "who",
    "chart",
    "plot",
    "compare",
    "show",
    "find",
    "fetch",
    "the",
    "i",
    "and",
    "in",
    "of",
    "use",
    "using",
    "search",
    "try",
    "sql",
    "database",
    "stock",
    "stocks",
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "nasdaq",
    "s",
    "p",
    "ceo",
    "us",
    "usa",
    "answer",
    "list",
    "give",
    "tell",
    "did",
    "does",
    "do",
    "is",
    "was",
    "are",
    "were",
    "a",
    "an",
    "between",
    "from",
    "to",
    "for",
    "step",
    "then",
    "also",
    "its",
    "iphone",
    "ipod",
    "ipo",
    "aws",
    "dot",
    "com",
    "crash",
    "crisis",
    "lehman",
    "vista",
    "windows",
    "lenovo",
    "wall",
    "street",
    "year",
    "years",
    "final",
    "symbols",
    "period",
    "save",
    "report",
    "keep",
    "write",
    "titled",
    "findings",
}

USELESS_MARKERS = ("no usable results", "no results", "error:", "refused")


def count_tokens(text: str) -> int:
    """A plain word-and-punctuation count: what the scripted model reports as usage."""
    return len(re.findall(r"\w+|[^\w\s]", text))


def message_text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)


def tool_call(name: str, args: dict) -> dict:
    return {
        "name": name,
        "args": args,
        "id": f"call_{uuid.uuid5(uuid.NAMESPACE_OID, name + json.dumps(args, sort_keys=True)).hex[:12]}",
        "type": "tool_call",
    }


def task_prompt(messages: list[BaseMessage]) -> str:
    """The prompt that states the task: a repair request refers back to the first one."""
    humans = [message_text(m) for m in messages if isinstance(m, HumanMessage)]
    return humans[0] if humans else ""


def allowed_values(prompt: str, field: str) -> list[str] | None:
    """The values a prompt allows for a JSON field, from its line ``"field" must be one of:
    a, b, c.`` (None when the prompt has no such line)."""
    found = re.search(rf'"{re.escape(field)}" must be one of: (.+?)(?:\.\s|\.?$)', prompt, re.M)
    if not found:
        return None
    return [v.strip() for v in found.group(1).split(",") if v.strip()]


def user_query(prompt: str) -> str:
    found = re.findall(r'User (?:query|question)\s*[.:]*\s*"?(.+?)"?\s*$', prompt, re.M)
    if found:
        return found[-1].strip()
    lines = [line for line in prompt.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def symbols_in(text: str) -> list[str]:
    found = []
    for word in re.findall(r"[A-Za-z][A-Za-z.]+", text):
        sym = word.upper() if word.upper() in TICKERS else COMPANIES.get(word.lower())
        if sym and sym not in found:
            found.append(sym)
    return found


def unknown_companies(text: str) -> list[str]:
    """Capitalised names that are not companies in the database (e.g. "Tesla")."""
    names = []
    for match in re.finditer(r"(?<![.?!]\s)(?<!^)\b([A-Z][a-z]{2,})(?:'s)?\b", text):
        word = match.group(1)
        if word.lower() not in NOT_COMPANIES and word.lower() not in COMPANIES:
            names.append(word)
    return names


def years_in(text: str) -> list[int]:
    return [int(y) for y in re.findall(r"\b(19[89]\d|20[0-2]\d)\b", text)]


def is_useful(result: str) -> bool:
    lowered = result.lower()
    return (
        bool(result)
        and result != "(not run yet)"
        and not any(marker in lowered for marker in USELESS_MARKERS)
    )


def tool_name_of(messages: list[BaseMessage], result: ToolMessage) -> str:
    """Which tool produced ``result``: over HTTP a tool message carries only the call id."""
    for message in reversed(messages):
        for call in getattr(message, "tool_calls", None) or []:
            if call.get("id") == result.tool_call_id:
                return call["name"]
    return ""
