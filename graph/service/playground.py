"""The node playground: one node's model, asked again on a stored state, with other prompts.

A tuner picks a checkpoint of a past run before a model-calling node, a few prompt texts
and model profiles; each sample is one request of that node's model, built by the node's
own request function (``Prompts.node_ask``) from the state as it was saved, read through
the compiled graph's ``get_state``. Nothing else of the run executes: no other node, no
tool, no repair round (a reply that is not usable is a result too, its problem said), and
nothing is written to the run or its checkpoints.

Each sample, and what the offline scripted model's replies mean, is
``graph.service.playground_samples``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Callable, Sequence

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import StateSnapshot

from graph.errors import StepwiseError
from graph.kernel.design import Design
from graph.kernel.guardrail import classifier_ask
from graph.kernel.inner_checkpoints import namespace_of, namespaces, reader_of, subgraph_path
from graph.kernel.node_asks import NodeAsk, NotTryable
from graph.kernel.system import System, get_system
from graph.models.scripted import ScriptedChatModel
from graph.prompts import PromptError, PromptSet
from graph.service.model_profiles import ModelProfile
from graph.service.playground_samples import (
    CANCELLED,
    Sample,
    ask_sample,
    model_for,
    offline_notes,
)
from graph.stopping import stop_requested

if TYPE_CHECKING:
    from graph.service.run_service import RunService

MAX_PROMPTS = 4
MAX_SAMPLES = 10


class PlaygroundError(StepwiseError, ValueError):
    """A playground request that cannot be tried; the message says why and what to do."""


@dataclass(frozen=True)
class PromptTry:
    label: str  # "v3 (saved)", "unsaved edit", ...
    text: str
    version_id: int | None = None  # the stored version holding ``text``, when known


@dataclass
class Trial:
    run_id: str
    checkpoint_id: str
    node: str
    prompt_name: str
    samples: list[Sample]
    notes: list[str]  # said once for the whole trial (the offline model's rules)
    tries: list[PromptTry] = field(default_factory=list)  # what a result's fork starts with
    fork_from: str = ""  # the run's own checkpoint such a fork starts at
    inside: str = ""  # the subgraph (team) the tried checkpoint was saved in


@dataclass(frozen=True)
class Target:
    """A checkpoint of a run and the node after it, ready to be tried."""

    run_id: str
    checkpoint_id: str
    design: Design
    ask: NodeAsk
    fork_from: str  # the run's own checkpoint a fork of this moment starts at
    inside: str = ""  # the subgraph the checkpoint was saved in ("" for the run's own)


def target(service: RunService, run_id: str, checkpoint_id: str) -> Target:
    """The node a checkpoint of ``run_id`` (its own, or one saved inside a subgraph: a
    team) would run next and its request; PlaygroundError says why there is none (an
    unknown run or checkpoint, the end, a node that asks no model). Reads the state
    through the compiled graph's ``get_state`` only."""
    design, system, compiled = _stored_graph(service, run_id)
    namespace: str | None = ""  # the run's own checkpoints first: no list of them all
    config: RunnableConfig = {"configurable": {"thread_id": run_id, "checkpoint_id": checkpoint_id}}
    snapshot = compiled.get_state(config)
    if snapshot.created_at is None:
        namespace = namespace_of(compiled, run_id, checkpoint_id)
        if namespace:
            config["configurable"]["checkpoint_ns"] = namespace
            snapshot = reader_of(compiled, namespace, system.forks.inner_graph).get_state(config)
    if namespace is None or snapshot.created_at is None:
        raise PlaygroundError(f"Run {run_id[:8]} has no checkpoint {checkpoint_id!r}.")
    if not snapshot.next:
        where = "its team's last step" if namespace else "the run's last step"
        raise PlaygroundError(
            f"This checkpoint is after {where}: no node runs from it, so there is no model "
            "call to try. Choose an earlier checkpoint."
        )
    node = _node_name(namespace, snapshot.next[0])
    try:
        ask = _node_ask(system, design, snapshot, node, service)
    except NotTryable as exc:
        raise PlaygroundError(f"The next node here is {node}. {exc}") from None
    parents = (snapshot.metadata or {}).get("parents") or {}
    fork_from = parents.get("") or checkpoint_id if namespace else checkpoint_id
    inside = " › ".join(subgraph_path(namespace))
    return Target(run_id, checkpoint_id, design, ask, fork_from, inside)


def _node_name(namespace: str, node: str) -> str:
    """A node inside a subgraph as "<subgraph node>:<node>" (as the graph draws it)."""
    return ":".join([*subgraph_path(namespace), node])


def tryable_points(service: RunService, run_id: str) -> list[dict]:
    """The checkpoints of ``run_id`` before a node the playground can try, oldest first:
    ``checkpoint_id``, ``node``, ``prompt`` (the prompt that node sends), ``number``
    (its place in the run's timeline as the History page numbers it: "6", or "6.2" for
    the second checkpoint inside the team started at #6)."""
    design, system, compiled = _stored_graph(service, run_id)
    history = list(compiled.get_state_history({"configurable": {"thread_id": run_id}}))
    numbers = {
        s.config["configurable"]["checkpoint_id"]: n for n, s in enumerate(reversed(history))
    }
    places = [(n, "", "", s) for n, s in enumerate(reversed(history))]
    for namespace in namespaces(compiled, run_id):
        config: RunnableConfig = {"configurable": {"thread_id": run_id, "checkpoint_ns": namespace}}
        reader = reader_of(compiled, namespace, system.forks.inner_graph)
        for snapshot in reader.get_state_history(config):
            parent = ((snapshot.metadata or {}).get("parents") or {}).get("") or ""
            cid = snapshot.config["configurable"]["checkpoint_id"]
            places.append((numbers.get(parent, len(history)), cid, namespace, snapshot))
    points = []
    inside: dict[int, int] = {}  # how many inner checkpoints follow each of the run's own
    for number, _, namespace, snapshot in sorted(places, key=lambda p: p[:2]):
        k = inside[number] = inside.get(number, 0) + (1 if namespace else 0)
        if not snapshot.next:
            continue
        node = _node_name(namespace, snapshot.next[0])
        try:
            ask = _node_ask(system, design, snapshot, node, service)
        except NotTryable:
            continue
        points.append(
            {
                "checkpoint_id": snapshot.config["configurable"]["checkpoint_id"],
                "node": ask.node,
                "prompt": ask.prompt,
                "number": f"{number}.{k}" if namespace else str(number),
            }
        )
    return points


def _stored_graph(service: RunService, run_id: str) -> tuple[Design, System, CompiledStateGraph]:
    """The design, system and graph of a stored run, the graph only read (its models are
    never called); PlaygroundError when the run is gone or lives on a LangGraph Server."""
    record = service.store.run(run_id)
    if record is None:
        raise PlaygroundError(f"There is no run {run_id!r}: it may have been deleted.")
    design = Design.model_validate(record.design)
    system = get_system(design.system)
    if getattr(service, "checkpointer", None) is None:
        raise PlaygroundError(
            "The playground reads a run's checkpoints on this machine; runs on a LangGraph "
            "Server cannot be tried yet."
        )
    offline = ScriptedChatModel()
    compiled = system.build_graph(
        design,
        settings=service.settings,
        checkpointer=service.checkpointer,
        planner_model=offline,
        worker_model=offline,
    )
    return design, system, compiled


def _node_ask(
    system: System, design: Design, snapshot: StateSnapshot, node: str, service: RunService
) -> NodeAsk:
    state = dict(snapshot.values or {})
    at = datetime.fromisoformat(snapshot.created_at or "").timestamp()  # target() checked it
    if node == "guardrail" and (found := _guardrail_ask(system, state, design)):
        return found
    return system.prompts.node_ask(node, state, design, at, service.settings)


def _guardrail_ask(system: System, state: dict, design: Design) -> NodeAsk | None:
    turn = (state.get("turns") or {}).get(state.get("checking_turn") or "")
    if not (turn and design.guardrail_classifier):
        return None
    enabled = list(design.enabled_agents)
    return NodeAsk(
        "guardrail",
        "guardrail/classifier",
        "planner",
        lambda p: classifier_ask(turn["text"], system, enabled, p),
    )


def try_node(
    service: RunService,
    run_id: str,
    checkpoint_id: str,
    prompts: Sequence[PromptTry],
    profiles: Sequence[ModelProfile],
    samples: int = 1,
    *,
    on_progress: Callable[[int, int], None] | None = None,
    callbacks: list | None = None,
) -> Trial:
    """Each prompt × profile × sample, one request of the node's model each (``callbacks``
    go with each request, as LangChain callbacks). Under ``graph.stopping.stoppable`` a
    stop ends the call in flight and asks no more: the trial holds the samples so far."""
    if not 1 <= len(prompts) <= MAX_PROMPTS:
        raise PlaygroundError(f"Choose one to {MAX_PROMPTS} prompt texts to try.")
    if not profiles:
        raise PlaygroundError("Choose at least one model profile to try the prompts on.")
    if not 1 <= samples <= MAX_SAMPLES:
        raise PlaygroundError(f"The number of samples is 1 to {MAX_SAMPLES}, not {samples}.")
    found = target(service, run_id, checkpoint_id)
    ask = found.ask
    total, done = len(prompts) * len(profiles) * samples, 0
    results: list[Sample] = []
    for tried in prompts:
        try:
            texts = PromptSet({**found.design.prompts, ask.prompt: tried.text})
            request = ask.build(texts)
        except PromptError as exc:
            for profile in profiles:
                results.append(Sample(tried.label, profile.name, 1, problem=f"{exc}"))
            done += len(profiles) * samples
            _progress(on_progress, done, total)
            continue
        for profile in profiles:
            model = model_for(service, profile, ask, texts)
            for number in range(1, samples + 1):
                if stop_requested():
                    break
                results.append(
                    ask_sample(model, request, tried.label, profile, number, service, callbacks)
                )
                done += 1
                _progress(on_progress, done, total)
    notes = offline_notes(ask, profiles, results, samples)
    if stop_requested():
        cut = any(r.problem == CANCELLED for r in results)
        notes.append(
            f"Cancelled after {done} of {total} calls"
            + ("; the last was cut short" if cut else "")
            + (f"; {total - done} not asked." if total > done else ".")
        )
    return Trial(
        run_id,
        checkpoint_id,
        ask.node,
        ask.prompt,
        results,
        notes,
        list(prompts),
        found.fork_from,
        found.inside,
    )


def _progress(on_progress: Callable[[int, int], None] | None, done: int, total: int) -> None:
    if on_progress is not None:
        on_progress(done, total)
