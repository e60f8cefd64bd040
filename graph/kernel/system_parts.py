"""The three parts a ``System`` names besides its graph and its state, each a small object
the system fills (or subclasses, to override a method):

- ``Shape``: how its graph is laid out — the node a turn starts at, its hubs and router,
  its teams, what its agents can do (for the guardrail), the classes in its state, how it
  is drawn, and advice on a design;
- ``Forks``: what its checkpoint timeline shows and what a fork (or an edited request)
  may change, checked against the state there;
- ``Prompts``: its prompts — which ones experiments vary, which the playground tries, the
  request a node would send from a stored state, and a prompt previewed on a state.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping

from graph.kernel.node_asks import NodeAsk, NotTryable
from graph.prompts import PromptError, PromptSet, prompt_names

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph

    from graph.kernel.design import Design
    from graph.settings import Settings

CLASSIFIER_PROMPT = "guardrail/classifier"  # the guardrail classifier's, for any system
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Ability:
    """Something a user message may ask for, and the agents that can do it: the guardrail
    refuses a request whose providers all exist in this system but are switched off."""

    words: str  # "make charts"
    pattern: str  # a regular expression matched case-insensitively
    agents: tuple[str, ...]


@dataclass(frozen=True)
class Shape:
    entry: str  # the node a conversation turn starts at
    hubs: frozenset[str] = frozenset()  # routing nodes, drawn apart
    router: str | None = None  # the node whose replies decide where work goes next
    teams: Mapping[str, str] = field(default_factory=dict)  # team -> what it does
    abilities: tuple[Ability, ...] = ()
    state_types: tuple[tuple[str, str], ...] = ()  # (module, class) in its state
    # LangGraph node runs one step of its work may take (a plan step, a subtask, a bus
    # round), with room for a replan or a chained agent: a design's recursion limit counts
    # steps, and LangGraph is given that many times this in node runs (``node_run_limit``).
    node_runs_per_step: int = 3
    # Whether agents defined in the browser (``graph.agents``) can be workers of its graph.
    takes_user_agents: bool = False

    def node_style(self, node: str) -> dict[str, str]:
        """Graphviz attributes of one of its nodes (its hubs are shaded)."""
        return {"fillcolor": "#fff3c4"} if node in self.hubs else {}

    def edge_style(self, source: str, target: str) -> dict[str, str]:
        """Graphviz attributes of an edge (a routing pattern's colour)."""
        return {}

    def design_warnings(self, enabled: list[str]) -> list[str]:
        """Why a design may not work well (advice: it may run anyway)."""
        return []


@dataclass(frozen=True)
class Forks:
    timeline_fields: tuple[str, ...] = ()  # what the checkpoint timeline diffs
    fork_fields: tuple[str, ...] = ()  # state fields a fork may change by hand
    # What the timeline shows of a checkpoint inside a subgraph (a team's own state);
    # empty: every key but messages.
    inner_fields: tuple[str, ...] = ()
    edit_goto: str | None = None  # where a run whose request was edited goes on; None: none

    def inner_graph(self, path: list[str]) -> CompiledStateGraph | None:
        """A graph of the shape of the subgraph at ``path`` (its node names, e.g.
        ``["web_researcher"]``) to read its checkpoints with, asked only for a subgraph
        LangGraph cannot find from the top graph: a graph a node's function invokes,
        which in Stepwise is a ReAct agent (plan_execute's sub-agents, any system's user
        agents). None: read with the top graph's channels."""
        from graph.agents.agent_checkpoints import sub_agent_reader

        return sub_agent_reader()

    def edit_request(self, state: dict, text: str) -> dict:
        """The state update for a request a human edited mid-run (``edit_goto``)."""
        raise ValueError("This run has no request to edit.")

    def check_fork_change(self, field: str, text: str, design: Design) -> Any:
        """The value a fork puts in ``field``, from what a person typed; ValueError says
        what is wrong. A field holding a map or a list is typed as JSON."""
        if field not in self.fork_fields:
            raise ValueError(
                f"A fork cannot change {field!r}; it can change: "
                f"{', '.join(self.fork_fields) or 'nothing'}."
            )
        stripped = text.strip()
        if stripped[:1] in ("{", "["):
            try:
                return json.loads(stripped)
            except json.JSONDecodeError as exc:
                raise ValueError(
                    f"{field} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})."
                ) from None
        return stripped

    def fork_changes(self, values: dict, changes: dict, design: Design) -> tuple[dict, str | None]:
        """What a fork writes for ``changes`` at a checkpoint holding ``values``, and the
        node it goes on at (None: where the original went). A system whose edited field
        others follow (a plan's counters, its record) completes and checks it here;
        ValueError says what is wrong."""
        return changes, None


@dataclass(frozen=True)
class Prompts:
    system: str  # the system's name: its prompts are prompts/<system>/
    # The prompts an experiment's variants vary (role -> prompt name), as the Evals page
    # offers them; the other prompts are the ones runs use.
    tuned: Mapping[str, str] = field(default_factory=dict)
    # The other prompts the node playground can try, so a fork may change them too.
    forked: Mapping[str, str] = field(default_factory=dict)
    nodes: frozenset[str] = frozenset()  # the nodes named like the prompt they send

    def names(self) -> list[str]:
        return prompt_names(self.system)

    def fork_prompts(self, design: Design) -> dict[str, str]:
        """The prompts a fork of a run of ``design`` may change (role -> prompt name): every
        one the node playground can try on such a run, so any of its results can be forked;
        the guardrail classifier's only where the design asks that model."""
        found = {**self.tuned, **self.forked}
        if design.guardrail and design.guardrail_classifier:
            found["guardrail classifier"] = CLASSIFIER_PROMPT
        return found

    def node_ask(
        self, node: str, state: dict, design: Design, at: float, settings: Settings | None = None
    ) -> NodeAsk:
        """The request ``node`` would send its model from ``state`` (``at``: the time the
        state was saved, for prompts that say how long ago something happened; ``settings``:
        the run service's, for what a request names from them), for the node playground;
        NotTryable says why it sends none the playground can try. ``node`` inside a
        subgraph is "<subgraph node>:<inner node>"."""
        raise NotTryable(
            f"{node} does not ask a model for a plan or a routing decision, so the "
            "playground cannot try it: choose a checkpoint before a node that does."
        )

    def prompt_node(self, name: str) -> str | None:
        """The node that sends prompt ``name`` (to preview it on a state that node read)."""
        short = name.split("/", 1)[-1]
        return short if short in self.nodes else None

    def preview_prompt(
        self, name: str, text: str, state: dict | None = None, design: Design | None = None
    ) -> str:
        """Prompt ``name`` as a model receives it with ``text`` as its template, for
        ``state`` (a sample one when None); PromptError names a bad placeholder."""
        return PromptSet({name: text}).render(name)


def preview_or_sample(
    render: Callable[[str, str, dict | None], str], name: str, text: str, state: dict | None
) -> str:
    """``render(name, text, state)``, or on its sample state when ``state`` is not one it
    can read (another system's, an older one's); a bad placeholder (PromptError) is still
    the writer's to fix, so it is raised."""
    try:
        return render(name, text, state)
    except PromptError:
        raise
    except Exception as exc:  # another system's state: the sample instead
        log.debug("preview of %s on the given state failed, sample shown: %r", name, exc)
        return render(name, text, None)
