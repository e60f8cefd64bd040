"""How the offline scripted model uses a tool it has no rule for (a user agent's tools, an
MCP server's): the first tool its prompt lists as read-only, with arguments taken from the
step's text where the tool's input schema allows, and it says so. Where no read-only tool
can be called from the text, it answers that a real model is needed, clearly labelled, so
the run goes on without pretending.

Arguments from the text, per property of the schema: ``name=value`` or ``name: value``
written in the text; a value of the property's ``enum`` the text names; a token shaped
like an example its description quotes (``'America/New_York'`` finds ``Europe/Rome``); a
number for a number. A required property with none of these: the tool is not called.
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import AIMessage

from graph.models.scripted.common import LABEL, tool_call

CALLED = f"{LABEL}: called `{{tool}}` with arguments from the step"


_LISTED = re.compile(r"^- [\w.-]+ \((read-only|may change something|unavailable)\):", re.M)


def is_tool_listing(system: str) -> bool:
    """Whether a prompt lists its tools the way a user agent's does."""
    return bool(_LISTED.search(system))


def read_only_tools(system: str) -> list[str]:
    """The tools a prompt lists as read-only (``- name (read-only): ...``)."""
    return re.findall(r"^- ([\w.-]+) \(read-only\):", system, re.M)


def use_any_tool(request: str, system: str, tools: list[dict]) -> AIMessage:
    readable = set(read_only_tools(system))
    offered = [t["function"] for t in tools if t["function"]["name"] in readable]
    for tool in offered:
        args = arguments_from(request, tool.get("parameters") or {})
        if args is not None:
            return AIMessage(
                content=CALLED.format(tool=tool["name"]) + ".",
                tool_calls=[tool_call(tool["name"], args)],
            )
    names = ", ".join(f"`{t['name']}`" for t in offered) or "none"
    unavailable = " ".join(re.findall(r"^- [\w.-]+ \(unavailable\): (.*)$", system, re.M))
    return AIMessage(
        content=f"[{LABEL}] This needs a real model: I follow fixed rules and could not "
        f"build the arguments of a read-only tool (read-only tools here: {names}) from the "
        f"step's text. Configure a real model for this agent. {unavailable}".strip()
    )


def arguments_from(text: str, schema: dict[str, Any]) -> dict[str, Any] | None:
    """The arguments ``schema`` allows from ``text``; None when a required one is missing."""
    properties: dict[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    args: dict[str, Any] = {}
    for name, prop in properties.items():
        value = _value(text, name, prop if isinstance(prop, dict) else {})
        if value is not None:
            args[name] = value
        elif name in required:
            return None
    return args


def _value(text: str, name: str, prop: dict[str, Any]) -> Any:
    kind = prop.get("type", "string")
    written = re.search(rf"\b{re.escape(name)}\s*[=:]\s*\"?([^\s\",;)]+)", text, re.I)
    if written:
        return _typed(written.group(1), kind)
    if enum := prop.get("enum"):
        return next((v for v in enum if re.search(rf"\b{re.escape(str(v))}\b", text, re.I)), None)
    if kind in ("integer", "number"):
        number = re.search(r"-?\d+(?:\.\d+)?", text)
        return _typed(number.group(0), kind) if number else None
    if kind != "string":
        return None
    for example in re.findall(r"['\"`]([^'\"`\s]+)['\"`]", prop.get("description") or ""):
        shape = _shape(example)
        if shape is not None and (found := re.search(shape, text)):
            return found.group(0)
    return None


def _shape(example: str) -> str | None:
    """A pattern for tokens shaped like ``example``; None when it has no separator (a bare
    word would match any word)."""
    parts = re.split(r"([^A-Za-z0-9_])", example)
    if len(parts) < 3:
        return None
    pattern = "".join(
        re.escape(p) if re.fullmatch(r"[^A-Za-z0-9_]", p) else r"[A-Za-z0-9_]+" for p in parts if p
    )
    return rf"(?<![\w/]){pattern}(?![\w/])"


def _typed(value: str, kind: str) -> Any:
    try:
        if kind == "integer":
            return int(float(value))
        if kind == "number":
            return float(value)
    except ValueError:
        return None
    return value
