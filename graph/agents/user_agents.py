"""A user agent: an agent defined in the browser, not in Python — a name, a description the
Planner reads to choose it, its own prompt, and its tools (built-in ones, or tools of a
connected MCP server). It runs as a ReAct worker with exactly those tools.

A design carries the definitions of the user agents it knows (``Design.user_agents``), so a
design exported, imported or run from the command line brings them along; the store keeps
the ones defined on the Design page. A definition names an MCP server, never its command:
the server comes from the Tools page of the machine the run is on.

The systems read a user agent's definition by name while they build prompts from the
agents a state names (``defined``): ``define`` is called with a design's agents when its
graph is built, so the Planner of that run reads them.

Its prompt is versioned like every prompt: ``user_agents/<name>`` is a prompt of the family
registered here (``graph.prompts.register_family``), whose default is the definition's own
prompt. A run's worker uses the design's active version of it when there is one.
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Iterable

from langchain_core.prompts import PromptTemplate
from pydantic import BaseModel, ConfigDict, Field, field_validator

from graph.prompts import family_of, register_family

log = logging.getLogger(__name__)

BUILTIN_PREFIX = "builtin:"
MCP_PREFIX = "mcp:"
# Built-in tools a user agent may have: read-only ones that hold no run data.
BUILTIN_TOOLS: dict[str, str] = {
    "search_knowledge_base": "Searches the bundled documents and reports passages with ids.",
    "run_sql": "Runs a read-only SQL query over the local stock-price database.",
}
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]{1,39}$")
DEFAULT_PROMPT = (
    "You are {name}, an agent of a team. {description}\n"
    "Use your tools to do the task you are given, then answer in a few sentences with what "
    "they returned. If your tools cannot do it, say so plainly.\n"
    "Your tools:\n{tools}"
)


def name_problem(name: str, taken: Iterable[str] = (), reserved: Iterable[str] = ()) -> str | None:
    """Why ``name`` cannot name a new user agent (None: it can). ``taken``: user agents
    already defined; ``reserved``: the built-in agents and nodes of every system."""
    if not NAME_PATTERN.match(name or ""):
        return (
            f"“{name}” is not a usable agent name: use 2 to 40 lower-case letters, digits or "
            "underscores, starting with a letter (for example clock or news_reader)."
        )
    if name in set(reserved):
        return f"“{name}” is the name of a built-in agent or node: choose another name."
    if name in set(taken):
        return f"There is already an agent named “{name}”: choose another name or edit it."
    return None


PROMPT_FIELDS = frozenset({"name", "description", "tools"})


def prompt_problem(text: str) -> str | None:
    """Why ``text`` cannot be a user agent's prompt (None: it can)."""
    try:
        names = set(PromptTemplate.from_template(text).input_variables)
    except Exception as exc:  # a brace the template cannot read: said to the writer
        log.info("user agent prompt refused: %r", exc)
        return f"The prompt cannot be read as a template: {exc} (write literal braces doubled)."
    if unknown := sorted(names - PROMPT_FIELDS):
        return (
            f"The prompt names {', '.join('{' + n + '}' for n in unknown)}, which a user agent's "
            f"prompt cannot fill; it may use {{name}}, {{description}} and {{tools}}."
        )
    return None


class UserAgent(BaseModel):
    """One user agent's definition, as stored, exported and run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    description: str = Field(min_length=10, max_length=600)
    prompt: str = DEFAULT_PROMPT
    tools: tuple[str, ...] = ()  # "builtin:<tool>" or "mcp:<server>/<tool>"

    @field_validator("name")
    @classmethod
    def _safe_name(cls, value: str) -> str:
        if problem := name_problem(value):
            raise ValueError(problem)
        return value

    @field_validator("prompt")
    @classmethod
    def _usable_prompt(cls, value: str) -> str:
        if problem := prompt_problem(value):
            raise ValueError(problem)
        return value

    @field_validator("tools")
    @classmethod
    def _known_tool_refs(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for ref in value:
            if ref.startswith(BUILTIN_PREFIX):
                if ref.removeprefix(BUILTIN_PREFIX) not in BUILTIN_TOOLS:
                    raise ValueError(
                        f"“{ref}” is no built-in tool a user agent may have (those are: "
                        f"{', '.join(BUILTIN_TOOLS)})."
                    )
            elif not (ref.startswith(MCP_PREFIX) and "/" in ref.removeprefix(MCP_PREFIX)):
                raise ValueError(
                    f"“{ref}” names no tool: write builtin:<tool> or mcp:<server>/<tool>."
                )
        return tuple(dict.fromkeys(value))

    @property
    def tool_names(self) -> tuple[str, ...]:
        """The tools' own names (what a model calls)."""
        return tuple(ref.rsplit("/", 1)[-1].removeprefix(BUILTIN_PREFIX) for ref in self.tools)


def mcp_tool_ref(server: str, tool: str) -> str:
    return f"{MCP_PREFIX}{server}/{tool}"


def split_ref(ref: str) -> tuple[str | None, str]:
    """(MCP server, tool) of a reference; the server is None for a built-in tool."""
    if ref.startswith(BUILTIN_PREFIX):
        return None, ref.removeprefix(BUILTIN_PREFIX)
    server, _, tool = ref.removeprefix(MCP_PREFIX).rpartition("/")
    return server, tool


_LOCK = threading.Lock()
_DEFINED: dict[str, UserAgent] = {}


def define(agents: Iterable[UserAgent]) -> None:
    """Let the systems' prompts read these definitions by name from now on (the latest
    definition of a name wins: names are unique in one store)."""
    with _LOCK:
        for agent in agents:
            _DEFINED[agent.name] = agent


def defined(name: str) -> UserAgent | None:
    with _LOCK:
        return _DEFINED.get(name)


PROMPT_FAMILY = "user_agents"


def prompt_name(agent: str) -> str:
    """The name its prompt's versions are kept under: ``user_agents/<agent>``."""
    return f"{PROMPT_FAMILY}/{agent}"


def agent_of_prompt(name: str) -> str | None:
    """The user agent whose prompt ``name`` is (``prompt_name``'s inverse); None for any
    other prompt."""
    family = family_of(name)
    return name.partition("/")[2] if family is not None and family.prefix == PROMPT_FAMILY else None


def _definition_prompt(name: str) -> str:
    """A user agent's prompt when no version of it is active: its definition's (the
    ``DEFAULT_PROMPT`` for a name not defined in this process)."""
    agent = defined(name)
    return agent.prompt if agent is not None else DEFAULT_PROMPT


register_family(
    PROMPT_FAMILY,
    PROMPT_FIELDS,
    "a user agent's own prompt (its ReAct worker's system prompt)",
    _definition_prompt,
)
