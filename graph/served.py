"""Every hosted system as a graph LangGraph Server serves: ``langgraph.json`` names the
factories below, so ``langgraph dev`` (or any Agent Server deployment) serves
plan_execute, supervisor_bus and hierarchical_teams unchanged, each run built from the
design it carries. Nothing here is Streamlit; the server provides persistence, so the
graphs are compiled without a checkpointer of ours.

The contract a client (the app's server runtime, a script, Studio) follows:

**Graphs.** One per system, named after it: ``plan_execute``, ``supervisor_bus``,
``hierarchical_teams``; the name also stands for its default assistant's id.

**Configuration** (``config`` of a run, or of an assistant; a run's overrides the
assistant's), built by ``run_config(design, prompt_texts, model)``:

- ``config["configurable"]["stepwise_design"]``: the whole ``Design`` as JSON
  (``Design.model_dump(mode="json")``): ``enabled_agents``, ``recursion_limit``,
  ``prompts`` (prompt name -> the full text a run uses; the app puts its active prompt
  versions there), ``approvals`` (agent -> always / never / planner), ``settings`` (each
  system's own, by system name: ``{"plan_execute": {"max_replans": 1, "escalate_at_cap":
  true}}``, ``{"supervisor_bus": {"bus_timeout_s": 30}}``; the older top-level
  ``max_replans``, ``escalate_at_cap`` and ``bus_timeout_s`` are still read),
  ``guardrail``, ``guardrail_classifier``, ``hooks``, ``approvals_by``... and ``model``: ``{"endpoint": "", "model": ""}``
  is the offline scripted model, ``{"endpoint": "http://host:port/v1", "model": "name"}``
  a model on an OpenAI-compatible server, ``null`` the model the server's own environment
  configures. Never a key: the server's ``OPENAI_API_KEY`` is used, and only for the
  endpoint its ``OPENAI_BASE_URL`` names (``ModelChoice.settings``). Absent, the system's
  default design. Its ``system`` must be the graph's own (or absent). A bad design fails
  the run with a message naming the field.
- ``config["configurable"]["stepwise_automatic_approvals"]``: set by ``run_config`` when
  ``approvals_by`` is ``"experiment"`` (the side-effecting agents): the gate answers
  itself and no run waits (``graph.kernel.approval.AUTOMATIC``).
- ``config["recursion_limit"]``: the design's ``recursion_limit`` in node runs
  (``graph.kernel.design.node_run_limit``: steps times the system's node runs per step).

An assistant made with ``assistants.create(system, config=run_config(design))`` carries a
design for every run it makes; a run's own ``stepwise_design`` replaces the assistant's
whole (configurables merge key by key). Prompt versions travel as their texts: which
stored versions those are is the client's record, as locally.

``pace_s`` is not applied on a server (it paced the app's own stream); step mode is the
client's ``interrupt_before="*"``.

**Input**: ``run_input(system, question, design)``: the system's ``initial_state`` as
JSON (messages as ``{"type": "human", ...}`` dicts, which LangGraph turns back into
messages; the bus's messages as dicts, which supervisor_bus reads back as ``Message``).
Build it with the run's design: the guardrail and the hooks shape the first turn.

**Approvals**: a step that needs a person pauses at LangGraph's ``interrupt()``; the
thread's status becomes ``interrupted`` and ``threads.get_state(thread)["interrupts"]``
(also each task's ``interrupts``) holds ``{"id": ..., "value": request}``, where
``request`` is a LangChain ``HITLRequest`` (``action_requests``, ``review_configs``
allowing approve / edit / reject) with what the Approvals page lists alongside: ``kind``
(``approval``, ``escalation``...), ``step``, ``agent``, ``query``, ``reason``... (the
system's own fields). It is answered by a new run on the same thread with
``command={"resume": decision}`` (and the same config, or an assistant carrying it),
``decision`` being LangChain's ``{"decisions": [{"type": "approve" | "edit" | "reject",
...}]}`` or Stepwise's own ``resume_value(...)``: ``{"decision": "approve" | "edit" |
"reject" | "skip" | "retry", "query": "...", "reason": "...", "by": "human"}``
(``graph.kernel.approval``: the mapping between the two). Several pending interrupts are answered at
once with LangGraph's map ``{"resume": {interrupt_id: decision, ...}}``. A malformed decision is never
taken for one: the node asks again.

**Follow-ups**: a follow-up message on a finished thread is ``runs.create(thread, graph,
command=redirect_command(update, goto), config=...)``, ``(update, goto)`` being what
``follow_up_plan(graph, design, text, system)`` plans for ``snapshot_of(state)``.

**Output**: the state's ``final_answer``, ``outcome`` (``done`` / ``failed``) and
``outcome_reason``, as in a local run. Streamed with ``stream_mode="custom"``, each model
call arrives as ``{"llm_call": {model, node, input_tokens, output_tokens, latency_s,
message_id}}`` (``graph.kernel.accounting``), and a node's own reports (a plan) as
locally; ``stream_subgraphs=True`` names a sub-agent's events by its namespace.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import OrderedDict
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command
from pydantic import BaseModel, ValidationError

import graph.registry  # noqa: F401  (registers the hosted systems)
from graph.kernel.accounting import UsageRecorder
from graph.kernel.approval import AUTOMATIC, HumanDecision
from graph.kernel.design import Design, DesignError, node_run_limit
from graph.kernel.system import get_system, systems
from graph.models.choice import ModelChoice
from graph.prompts import PromptError, PromptSet

if TYPE_CHECKING:
    from langgraph_sdk.schema import Config

    from graph.settings import Settings

DESIGN_KEY = "stepwise_design"

# Compiled graphs by (system, design JSON): the server asks for a graph at every run and
# every read of a thread; one compiled graph serves many runs (each on its own thread).
_CACHE_SIZE = 32
_built: OrderedDict[str, CompiledStateGraph] = OrderedDict()
_lock = threading.Lock()


def run_config(
    design: Design,
    prompt_texts: dict[str, str] | None = None,
    model: ModelChoice | None = None,
) -> Config:
    """The ``config`` of a server run (or assistant) of ``design``: the same design a local
    run gets. ``prompt_texts`` replace the design's prompts (the app's active versions);
    ``model`` replaces its model (None keeps the design's)."""
    update: dict[str, Any] = {}
    if prompt_texts is not None:
        update["prompts"] = dict(prompt_texts)
    if model is not None:
        update["model"] = model
    design = design.model_copy(update=update) if update else design
    configurable: dict[str, Any] = {DESIGN_KEY: design.model_dump(mode="json")}
    if design.approvals_by == "experiment":
        agents = get_system(design.system).agents
        configurable[AUTOMATIC] = sorted(a for a, spec in agents.items() if spec.side_effects)
    return {"configurable": configurable, "recursion_limit": node_run_limit(design)}


def run_input(system: str, question: str, design: Design | None = None) -> dict:
    """The input of a server run asking ``question``: the system's initial state, as JSON."""
    design = design or Design(system=system)
    if design.system != system:
        raise DesignError(f"The design is for {design.system}, not {system}.")
    question = (question or "").strip()
    if not question:
        raise ValueError("The question is empty.")
    return as_json(get_system(system).initial_state(question, design))


def resume_value(decision: str, query: str = "", reason: str = "", by: str = "human") -> dict:
    """What ``Command(resume=...)`` carries to answer an approval (checked here, so a
    typo fails in the client rather than making the run ask again)."""
    return HumanDecision(decision=decision, query=query, reason=reason, by=by).model_dump()


def redirect_command(update: dict, goto: str) -> dict:
    """What ``runs.create(thread, graph, command=...)`` carries to send a thread on with
    ``update`` at node ``goto``: a follow-up message's new turn (``update, goto`` from
    ``graph.kernel.conversation.follow_up_plan`` on ``snapshot_of(state)``), an edited
    request (``Forks.edit_request``, ``edit_goto``). Checked on a finished thread; a
    thread waiting at an interrupt is answered with a resume instead."""
    return {"update": as_json(update), "goto": goto}


def stream_payload(run_input: Any) -> dict[str, Any]:
    """What ``runs.stream(thread, graph, ...)`` carries to start or go on with a run:
    ``input`` for an initial state, ``command`` for a ``Command`` (a human's answer, an
    update and a node to go to), nothing to go on from the thread's last checkpoint."""
    if isinstance(run_input, Command):
        return {
            "command": {
                key: as_json(value)
                for key, value in (
                    ("resume", run_input.resume),
                    ("update", run_input.update),
                    ("goto", run_input.goto or None),
                )
                if value is not None
            }
        }
    if run_input is not None:
        return {"input": as_json(run_input)}
    return {}


def snapshot_of(state: dict) -> SimpleNamespace:
    """A server thread's state (``threads.get_state``) as the engine's plans read a
    LangGraph ``StateSnapshot``: ``values``, ``next``, ``tasks`` (with ``name``)."""
    return SimpleNamespace(
        values=state.get("values") or {},
        next=tuple(state.get("next") or ()),
        tasks=tuple(SimpleNamespace(**t) for t in state.get("tasks") or ()),
        interrupts=tuple(state.get("interrupts") or ()),
    )


def as_json(value: Any) -> Any:
    """A state (or part of one) as JSON a server accepts and LangGraph reads back:
    messages and other pydantic values as their dumps, sets as lists."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {str(k): as_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [as_json(v) for v in value]
        return sorted(items, key=str) if isinstance(value, (set, frozenset)) else items
    return value


def design_of(system: str, config: RunnableConfig | None) -> Design:
    """The design a served run of ``system`` carries in its config; DesignError says what
    is wrong with it."""
    data = ((config or {}).get("configurable") or {}).get(DESIGN_KEY)
    if data is None:
        return Design(system=system)
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except json.JSONDecodeError as exc:
            raise DesignError(f"{DESIGN_KEY} is not JSON: {exc.msg}.") from None
    if not isinstance(data, dict):
        raise DesignError(f"{DESIGN_KEY} must be a design (a JSON object).")
    if data.get("system", system) != system:
        raise DesignError(f"{DESIGN_KEY} is a {data['system']} design; this graph is {system}.")
    try:
        design = Design.model_validate({**data, "system": system})
        PromptSet(design.prompts)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "design"
        message = first["msg"].removeprefix("Value error, ")
        raise DesignError(f"{DESIGN_KEY}.{where}: {message}") from None
    except PromptError as exc:
        raise DesignError(f"{DESIGN_KEY}: {exc}") from None
    return design


def served_graph(system: str, config: RunnableConfig | None = None) -> CompiledStateGraph:
    """The compiled graph of the design in ``config``, without a checkpointer (the
    server's own is put in), built once per design."""
    # The server calls the factory for every run (and for its state reads): a design
    # seen before is found by the config's own text, before it is validated again
    # (validation, the prompt check and the dump took ~5 ms a call).
    raw = _raw_key(system, config)
    with _lock:
        if raw is not None and raw in _built:
            _built.move_to_end(raw)
            return _built[raw]
    design = design_of(system, config)
    key = design.model_dump_json()
    with _lock:
        if key in _built:
            _built.move_to_end(key)
            if raw is not None:
                _built[raw] = _built[key]
            return _built[key]
    spec = get_system(system)
    settings = design.model.settings(_settings()) if design.model is not None else None
    # Each model call is reported on the run's ``custom`` stream ({"llm_call": ...}), as
    # a local run logs it: a client streaming ``custom`` gets the run's accounting.
    compiled = spec.build_graph(design, settings=settings, checkpointer=False).with_config(
        callbacks=[UsageRecorder()]
    )
    with _lock:
        _built[key] = compiled
        if raw is not None:
            _built[raw] = compiled
        while len(_built) > _CACHE_SIZE:
            _built.popitem(last=False)
    return compiled


def _raw_key(system: str, config: RunnableConfig | None) -> str | None:
    """The design as the config carries it, as a cache key (None: none to key by). Only
    a design already built under this key is found by it, so a bad one is still refused
    by ``design_of``, every time."""
    data = ((config or {}).get("configurable") or {}).get(DESIGN_KEY)
    if data is None:
        return None
    try:
        text = data if isinstance(data, str) else json.dumps(data, sort_keys=True)
    except (TypeError, ValueError):
        return None  # not JSON: design_of says why
    return f"raw:{system}:{text}"


def _settings() -> Settings:
    from graph.settings import get_settings

    return get_settings()


async def _served(system: str, config: RunnableConfig) -> CompiledStateGraph:
    # Building reads prompt files and opens databases: off the server's event loop.
    return await asyncio.to_thread(served_graph, system, config)


async def plan_execute(config: RunnableConfig) -> CompiledStateGraph:
    """plan_execute, as the run's design says (``langgraph.json``)."""
    return await _served("plan_execute", config)


async def supervisor_bus(config: RunnableConfig) -> CompiledStateGraph:
    """supervisor_bus, as the run's design says (``langgraph.json``)."""
    return await _served("supervisor_bus", config)


async def hierarchical_teams(config: RunnableConfig) -> CompiledStateGraph:
    """hierarchical_teams, as the run's design says (``langgraph.json``)."""
    return await _served("hierarchical_teams", config)


def served_systems() -> list[str]:
    """The graphs ``langgraph.json`` must name: every hosted system."""
    return list(systems())
