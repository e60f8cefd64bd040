"""Tools by role, and the gate where tool calls execute.

Binding only an agent's own tools to its model is not enough: a model can still name
another tool (an instruction in a document or a message can suggest it). So every
call goes through ``execute``, which runs it only if the tool is on the agent's
allowlist; anything else is refused, answered to the model as a refusal, and
reported by the worker as an ``error`` message on the bus.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool

from graph.kernel.built_once import BuiltOnce
from graph.supervisor_bus.agents import ROLE_TOOLS
from graph.tools.drafts import format_output_tool, write_draft_tool
from graph.tools.effects import Ledger
from graph.tools.knowledge import (
    KnowledgeBase,
    check_citations_tool,
    fetch_document_tool,
    search_tool,
)

REFUSED = "REFUSED:"


def tools_for(
    agent: str,
    kb: KnowledgeBase,
    ledger: Ledger,
    drafts_dir: Path,
    message_id: str,
    shared: BuiltOnce | None = None,
) -> dict[str, BaseTool]:
    """Every tool Stepwise's bus agents have, for one request message, by name.
    Which of them an agent may call is decided by ``Gate``, not by this list.

    The tools over the knowledge base hold no run data: with ``shared`` (the graph's
    ``Deps.built``) they are built once per graph; ``write_draft`` is bound to the
    request message (its ledger key), so it is built for each one."""

    def static() -> list[BaseTool]:
        return [
            search_tool(kb),
            fetch_document_tool(kb),
            check_citations_tool(kb),
            format_output_tool(),
        ]

    built = shared.get("tools", static) if shared is not None else static()
    return {t.name: t for t in [*built, write_draft_tool(drafts_dir, ledger, message_id)]}


@dataclass
class Gate:
    """Runs an agent's tool calls, each only if its role allows it."""

    agent: str
    tools: dict[str, BaseTool]
    refused: list[dict] = field(default_factory=list)  # the calls it refused

    @property
    def allowed(self) -> tuple[str, ...]:
        return ROLE_TOOLS.get(self.agent, ())

    def bindable(self) -> list[BaseTool]:
        """The tools offered to the agent's model: its allowlist, nothing more."""
        return [self.tools[name] for name in self.allowed if name in self.tools]

    def execute(self, call: Mapping[str, Any]) -> ToolMessage:
        name = call.get("name", "")
        if name not in self.allowed or name not in self.tools:
            self.refused.append({"tool": name, "args": call.get("args") or {}})
            return ToolMessage(
                content=f"{REFUSED} {self.agent} may not use {name!r}; its tools are "
                f"{', '.join(self.allowed) or 'none'}.",
                tool_call_id=call.get("id") or "",
                name=name or "unknown",
                status="error",
            )
        return self.tools[name].invoke({**call, "type": "tool_call"})
