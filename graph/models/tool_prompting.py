"""Tool calling through the prompt, for servers and models without native tool calls.

The agents keep working with LangChain's tool-call messages; only what crosses the wire
changes. ``to_prompted`` turns a conversation with tool calls into plain text (each call
the assistant made becomes the JSON action it would have written, each tool result a
user message "Result of <tool>: …") and appends the instructions of the prompt
``models/tool_calling``: the tools, their arguments, and the JSON action shape. The
reply is one JSON object, grammar-constrained by ``action_schema`` where the server
takes a schema; ``parse_action`` turns it back into a tool call or a final answer.
``from_prompted`` undoes ``to_prompted``, so a deterministic model (the offline scripted
model behind the test server) can answer a prompted conversation with its usual rules.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall, ToolMessage

from graph.models.replies import parse_json_object
from graph.prompts import PromptSet, PromptSpec, register

PROMPT = "models/tool_calling"
FINAL = "final_answer"
# The first line of the prompt ``models/tool_calling``: where the rules begin (a prompt
# edited without it still works on a real model; ``from_prompted`` no longer finds them).
MARKER = "You can use tools. Reply with one JSON object and nothing else."
RESULT_HEAD = "Result of "

register(
    PromptSpec(
        PROMPT,
        "Tool calling written in the reply, for servers or models without native tool calls.",
        frozenset({"tool_list", "tool_names", "call_example", "answer_example"}),
        frozenset({"tool_list", "call_example"}),
    )
)

_EXAMPLE = re.compile(r"(?:for example|e\.g\.)[:,]?\s*(.+?)\s*\.?$", re.I)


def _properties(tool: dict) -> dict:
    return (tool.get("function", {}).get("parameters") or {}).get("properties") or {}


def _example_value(name: str, prop: dict) -> Any:
    """A concrete argument value: the one its description gives, else one of its type."""
    if "enum" in prop and prop["enum"]:
        return prop["enum"][0]
    found = _EXAMPLE.search(prop.get("description") or "")
    kind: Any = prop.get("type")  # JSON Schema as the tool gave it
    if found:
        text = found.group(1).strip().strip('"')
        if kind in ("array", "object"):
            try:
                return json.loads(found.group(1))
            except json.JSONDecodeError:
                return [text] if kind == "array" else {}
        return text
    return {"integer": 1, "number": 1, "boolean": False, "array": [], "object": {}}.get(
        kind, name.replace("_", " ")
    )


def call_example(tool: dict) -> dict:
    props = _properties(tool)
    required = (tool.get("function", {}).get("parameters") or {}).get("required") or list(props)
    return {
        "tool": tool["function"]["name"],
        "args": {n: _example_value(n, props[n]) for n in required if n in props},
    }


def tool_list(tools: list[dict]) -> str:
    lines = []
    for tool in tools:
        fn = tool["function"]
        props = _properties(tool)
        args = (
            ", ".join(
                f'"{n}" ({p.get("type", "any")}{": " + p["description"] if p.get("description") else ""})'
                for n, p in props.items()
            )
            or "no arguments"
        )
        lines.append(f"- {fn['name']}: {fn.get('description', '').strip()} Arguments: {args}.")
    return "\n".join(lines)


def instructions(tools: list[dict], prompts: PromptSet | None = None) -> str:
    """The tool-calling rules appended to the conversation (prompt ``models/tool_calling``)."""
    prompts = prompts or PromptSet()
    answer = {"tool": FINAL, "answer": "The answer, with what the tools found."}
    return prompts.render(
        PROMPT,
        tool_list=tool_list(tools),
        tool_names=", ".join([*(t["function"]["name"] for t in tools), FINAL]),
        call_example=json.dumps(call_example(tools[0])),
        answer_example=json.dumps(answer),
    )


def action_schema(tools: list[dict]) -> dict:
    """One JSON action: a call of one of ``tools`` with its arguments, or the final answer."""
    options = []
    for tool in tools:
        params = dict(tool["function"].get("parameters") or {"type": "object", "properties": {}})
        params.setdefault("type", "object")
        params.setdefault("properties", {})
        options.append(
            {
                "type": "object",
                "properties": {
                    "tool": {"type": "string", "enum": [tool["function"]["name"]]},
                    "args": params,
                },
                "required": ["tool", "args"],
            }
        )
    options.append(
        {
            "type": "object",
            "properties": {
                "tool": {"type": "string", "enum": [FINAL]},
                "answer": {"type": "string"},
            },
            "required": ["tool", "answer"],
        }
    )
    return {"anyOf": options}


def _action_text(message: AIMessage) -> str:
    call = message.tool_calls[0]
    return json.dumps({"tool": call["name"], "args": call.get("args") or {}})


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)


def to_prompted(
    messages: list[BaseMessage], tools: list[dict], prompts: PromptSet | None = None
) -> list[BaseMessage]:
    """The conversation as plain messages, with the tool-calling rules on the last user turn."""
    out: list[BaseMessage] = []
    for m in messages:
        if isinstance(m, AIMessage) and m.tool_calls:
            out.append(AIMessage(content=_action_text(m)))
        elif isinstance(m, ToolMessage):
            result = f"{RESULT_HEAD}{m.name or 'the tool'}:\n{_text(m.content)}"
            if (
                out
                and isinstance(out[-1], HumanMessage)
                and _text(out[-1].content).startswith(RESULT_HEAD)
            ):
                out[-1] = HumanMessage(content=f"{out[-1].content}\n\n{result}")
            else:
                out.append(HumanMessage(content=result))
        else:
            out.append(m)
    rules = instructions(tools, prompts)
    if out and isinstance(out[-1], HumanMessage):
        out[-1] = HumanMessage(content=f"{_text(out[-1].content)}\n\n{rules}", name=out[-1].name)
    else:
        out.append(HumanMessage(content=rules))
    return out


def is_prompted(messages: list[BaseMessage]) -> bool:
    return (
        bool(messages)
        and isinstance(messages[-1], HumanMessage)
        and MARKER in _text(messages[-1].content)
    )


def offered_tools(messages: list[BaseMessage]) -> list[str]:
    """The tool names the rules on the last message offer (without the final answer)."""
    found = re.search(r'"tool" must be one of: (.+?)\.?$', _text(messages[-1].content), re.M)
    names = [n.strip() for n in found.group(1).split(",")] if found else []
    return [n for n in names if n and n != FINAL]


def from_prompted(messages: list[BaseMessage]) -> list[BaseMessage]:
    """Undo ``to_prompted``: JSON actions become tool calls again, results tool messages,
    and the rules come off the last user turn."""
    *before, last = messages
    text = _text(last.content)
    head = text[: text.index(MARKER)].rstrip() if MARKER in text else text
    body = [*before, *([HumanMessage(content=head, name=last.name)] if head else [])]
    out: list[BaseMessage] = []
    calls: list[ToolCall] = []
    for m in body:
        text = _text(m.content)
        if (
            isinstance(m, AIMessage)
            and not m.tool_calls
            and (action := parse_action(text)).tool_calls
        ):
            calls = action.tool_calls
            out.append(action)
        elif isinstance(m, HumanMessage) and text.startswith(RESULT_HEAD) and calls:
            for part, call in zip(re.split(rf"\n\n(?={RESULT_HEAD})", text), calls):
                result = part.split(":\n", 1)[1] if ":\n" in part else part
                out.append(ToolMessage(content=result, tool_call_id=call["id"], name=call["name"]))
            calls = []
        else:
            out.append(m)
    return out


def repeated_result(messages: list[BaseMessage], reply: AIMessage) -> str | None:
    """The result of the conversation's last tool call when ``reply`` makes that same call
    again (same tool, same arguments), else None."""
    if not reply.tool_calls:
        return None
    call = reply.tool_calls[0]
    last = next((m for m in reversed(messages) if isinstance(m, AIMessage) and m.tool_calls), None)
    if last is None or (last.tool_calls[0]["name"], last.tool_calls[0].get("args")) != (
        call["name"],
        call.get("args"),
    ):
        return None
    answer = next(
        (
            m
            for m in messages
            if isinstance(m, ToolMessage) and m.tool_call_id == last.tool_calls[0].get("id")
        ),
        None,
    )
    return _text(answer.content) if answer is not None else None


def parse_action(text: str) -> AIMessage:
    """A reply in the action shape as an AIMessage: a tool call, or the final answer's
    text; anything else is kept as the model's words."""
    try:
        data = parse_json_object(text)
    except ValueError:
        return AIMessage(content=text)
    if not isinstance(data, dict):
        return AIMessage(content=text)
    tool = str(data.get("tool") or data.get("name") or "").strip()
    if tool and tool != FINAL and isinstance(data.get("args", {}), dict):
        call_id = f"call_{uuid.uuid4().hex[:12]}"
        return AIMessage(
            content="",
            tool_calls=[
                {"name": tool, "args": data.get("args") or {}, "id": call_id, "type": "tool_call"}
            ],
        )
    answer = data.get("answer")
    return AIMessage(content=str(answer) if answer is not None else text)


def encode_reply(message: AIMessage) -> str:
    """A model's reply written in the action shape (what ``parse_action`` reads)."""
    if message.tool_calls:
        return _action_text(message)
    return json.dumps({"tool": FINAL, "answer": _text(message.content)})


def first_turn(messages: list[BaseMessage]) -> bool:
    """No tool has been called yet in this conversation: an agent's first model turn."""
    return not any(isinstance(m, ToolMessage) for m in messages)
