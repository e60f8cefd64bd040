"""The System contract: all that the engine, the run service, the command line and the
pages may ask of a hosted system.

A hosted system (``graph/plan_execute``, ``graph/supervisor_bus``,
``graph/hierarchical_teams``, or a fourth) is one package exporting one ``SYSTEM``, an
instance of a ``System`` subclass. Nothing outside the package reaches into it: a page
asks the run's system what to show (``facts``, ``panels``), the store what to count
(``counts``), the renderer how to draw a node or an edge (``node_style``,
``edge_style``), the guardrail what the agents can do (``abilities``). The texts the
pages used to hard-code per system (what a rejection does, the graph's legend, the
settings a design has) are attributes here.

``graph.registry`` names the systems, one line each, in the order the app lists them, and
registers them here; the kernel never imports a system, not even by name. The service
layer imports the registry (so the app and the command line have every system), and a
system defined elsewhere (a test's) is added with ``register``.

Over 400 lines on purpose: the whole contract in one place, so a new system's author
reads one file.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Mapping

from pydantic import BaseModel, ConfigDict

from graph.kernel.node_asks import NodeAsk, NotTryable
from graph.models.scripted import rules as scripted_rules
from graph.prompts import PromptSet, prompt_names

CLASSIFIER_PROMPT = "guardrail/classifier"  # the guardrail classifier's, for any system

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langgraph.graph.state import CompiledStateGraph
    from langgraph.types import Checkpointer

    from graph.kernel.design import Design
    from graph.settings import Settings


@dataclass(frozen=True)
class AgentSpec:
    """One agent of a system's catalog: what the Design page lists and the guardrail reads.
    A system's own catalog may extend it (routing, examples...)."""

    name: str
    description: str  # what it can do
    tools: tuple[str, ...] = ()
    side_effects: bool = False  # its tools change something outside the run: it asks first
    planned: bool = True  # False: never given work of its own (it runs inside a chain)
    team: str | None = None  # the team it belongs to, in a system with teams


class SystemSettings(BaseModel):
    """What a design sets for one system, checked by the system's own model (its
    ``settings_model``, a subclass; this empty one for a system with none). The Design page
    draws each field from the model's JSON schema: ``title`` is the label,
    ``description`` the help, the bounds (``ge``, ``le``, ``gt``) are the widget's, and
    ``json_schema_extra`` may add ``step`` (a number's step) and ``section``
    ("approvals": shown with the approval settings; else with the run settings). A
    misspelt name is refused, not dropped."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class Ability:
    """Something a user message may ask for, and the agents that can do it: the guardrail
    refuses a request whose providers all exist in this system but are switched off."""

    words: str  # "make charts"
    pattern: str  # a regular expression matched case-insensitively
    agents: tuple[str, ...]


@dataclass
class Panel:
    """One part of the Run page for a run of this system: a table, or a list of
    collapsible items (each a few lines and a table), under a title."""

    key: str
    title: str
    rows: list[dict] = field(default_factory=list)
    caption: str = ""
    empty: str = ""  # what is said when there are no rows (and no items)
    status_column: str | None = None  # a column whose words are coloured by status
    items: list[dict] = field(default_factory=list)  # {label, text, rows, messages, open}
    # The columns a class must always see on a row's first line, in a narrow column; the
    # wordiest column goes on a line of its own below, the others after it (empty: a
    # plain table).
    lead_columns: tuple[str, ...] = ()


@dataclass
class ApprovalView:
    """How an approval card shows one question a run asks a person."""

    heading: str  # markdown: what waits, and for what
    note: str = ""  # a line on what the buttons do here
    code: str = ""  # the exact thing to be done (an HTTP call, say), shown as code
    help: dict[str, str] = field(default_factory=dict)  # decision -> what it does
    # The reason box's hint and the query box's label, in this kind of question's words.
    placeholder: str = "e.g. why not, and what to do instead"
    query_label: str = "Query the agent will get (edit it, then Approve edited query)"


@dataclass
class ForkTable:
    """A state field a fork edits as a table: its columns, its rows at the checkpoint, the
    values a column may take, the columns nobody types in (ids given in code), and a
    line on what the edit does."""

    columns: list[str]
    rows: list[dict]
    choices: dict[str, list[str]] = field(default_factory=dict)
    locked: tuple[str, ...] = ()
    note: str = ""


@dataclass
class Block:
    """A piece of a lesson's side: ``markdown``, ``table`` (rows), or a verdict shown as
    ``error``, ``success`` or ``warning``."""

    kind: str
    content: Any


@dataclass
class Lesson:
    """A teaching scenario a system offers (the Run page shows it): the same task done two
    ways, side by side, and what it teaches."""

    title: str
    caption: str
    intro: str  # markdown above the two sides
    sides: list[tuple[str, list[Block]]]  # (heading, blocks)
    takeaways: list[str]


@dataclass
class RunFacts:
    """What the store knows of a run beyond its state, for a system's panels: per step,
    the human decisions, the time and the model use (as table cells), the guardrail's
    marks, and the run's update events."""

    live: bool = False
    cells: dict[int, dict[str, str]] = field(default_factory=dict)  # step -> cells
    blank: dict[str, str] = field(default_factory=dict)  # the cells of a step with none yet
    flags: dict[int, str] | None = None  # step -> guardrail mark; None: no guardrail column
    updates: list[dict] = field(default_factory=list)  # stored "update" events, in order
    paused_next: str = ""  # paused in step mode: the node that runs next

    def step_cells(self, step: int) -> dict[str, str]:
        """A copy of the step's cells (a system may reorder them)."""
        return dict(self.cells.get(step) or self.blank)

    def marks(self, step: int) -> dict[str, str]:
        """The guardrail column of a step's row, when the run has one."""
        return {} if self.flags is None else {"Guardrail": self.flags.get(step, "")}


def json_key(row: dict) -> str:
    """A row's identity across snapshots: its first field and value."""
    first = next(iter(row.items()), ("", ""))
    return f"{first[0]}={first[1]}"


def cell(text: object) -> str:
    """Text for one table cell, on one line and inert: the pages draw tables as Markdown,
    and a model's text may start with a heading or hold a pipe."""
    flat = re.sub(r"([\\`*_\[\]#<>|~$])", r"\\\1", " ".join(str(text).split()))
    return "\\" + flat if flat[:1] in ("-", "+") else flat


class System(ABC):
    """A hosted multi-agent system. Subclasses fill the class attributes and the methods."""

    name: ClassVar[str]
    title: ClassVar[str]
    summary: ClassVar[str]  # one paragraph: what makes it this system
    intro: ClassVar[str] = ""  # the Design page's introduction
    always_on: ClassVar[str] = ""  # who is always there (hubs), in a sentence
    examples: ClassVar[tuple[str, ...]] = ()  # questions the Run page offers
    entry: ClassVar[str]  # the node a conversation turn starts at
    agents: ClassVar[Mapping[str, AgentSpec]]
    teams: ClassVar[Mapping[str, str]] = {}  # team -> what it does (agents grouped by it)
    settings_model: ClassVar[type[SystemSettings]] = SystemSettings  # what a design sets for it
    count_labels: ClassVar[Mapping[str, str]] = {"steps": "Steps"}  # the runs list's words
    # How the offline scripted model plays this system (``graph.models.scripted.rules``):
    # a module with ``answer(prompt)`` and its tool tables; None: nothing of its own.
    offline_rules: ClassVar[Any] = None
    abilities: ClassVar[tuple[Ability, ...]] = ()
    timeline_fields: ClassVar[tuple[str, ...]] = ()  # what the checkpoint timeline diffs
    field_labels: ClassVar[Mapping[str, str]] = {}  # how the timeline titles those fields
    fork_fields: ClassVar[tuple[str, ...]] = ()  # state fields a fork may change by hand
    # What the timeline shows of a checkpoint inside a subgraph (a team's own state);
    # empty: every key but messages.
    inner_fields: ClassVar[tuple[str, ...]] = ()
    # The prompts an experiment's variants vary (role -> prompt name), as the Evals page
    # offers them; the other prompts are the ones runs use.
    tuned_prompts: ClassVar[Mapping[str, str]] = {}
    # The other prompts the node playground can try, so a fork may change them too
    # (``fork_prompts``).
    forked_prompts: ClassVar[Mapping[str, str]] = {}
    state_types: ClassVar[tuple[tuple[str, str], ...]] = ()  # (module, class) in its state
    hubs: ClassVar[frozenset[str]] = frozenset()  # routing nodes, drawn apart
    router: ClassVar[str | None] = None  # the node whose replies decide where work goes next
    # What the pages say of it, in words.
    policy_words: ClassVar[Mapping[str, str]] = {
        "always": "always ask",
        "never": "never ask",
        "planner": "ask when the Planner flags the step",
    }
    rejected: ClassVar[str] = "reject it"  # what a rejected approval leads to
    approvals_note: ClassVar[str] = ""  # when and how its agents ask a human
    graph_legend: ClassVar[str] = ""
    working: ClassVar[str] = "Working…"  # what a live run with nothing to show yet is doing
    # What its model calls of step 0 are (the accounting names them apart), if anything.
    before_first_step: ClassVar[str | None] = None
    answer_pending: ClassVar[str] = "The final answer appears here when the run ends."
    lesson: ClassVar[str | None] = None  # the title of its teaching scenario, if it has one
    # An edit of a run's request while it goes (``edit_request``), where the system has one.
    can_edit_request: ClassVar[bool] = False
    edit_goto: ClassVar[str | None] = None  # where an edited run goes on
    edited: ClassVar[str] = "the run goes on with the new text."  # what an edit does next

    # ------------------------------------------------------------------ the graph

    @abstractmethod
    def build_graph(
        self,
        design: Design | None = None,
        *,
        settings: Settings | None = None,
        checkpointer: Checkpointer = None,
        planner_model: BaseChatModel | None = None,
        worker_model: BaseChatModel | None = None,
    ) -> CompiledStateGraph:
        """The compiled graph of a design (this system's default one when None): only
        enabled agents become nodes."""

    @abstractmethod
    def initial_state(self, question: str, design: Design) -> dict:
        """The state a run of ``question`` starts from."""

    @abstractmethod
    def new_turn(self, state: dict, text: str, design: Design) -> dict:
        """The state update that starts a follow-up message as a new turn, same thread."""

    def edit_request(self, state: dict, text: str) -> dict:
        """The state update for a request a human edited mid-run (``can_edit_request``)."""
        raise ValueError(f"A {self.name} run has no request to edit.")

    # ------------------------------------------------------------------ what it shows

    @abstractmethod
    def snapshot(self, state: dict) -> dict:
        """What the pages show of a state: small and JSON-safe (no messages: those are
        stored with the updates that added them). Carries ``rows``."""

    @abstractmethod
    def step_rows(self, state: dict) -> list:
        """The run's table, one row (with ``as_dict``) per unit of work."""

    def counts(self, snapshot: dict) -> dict[str, int]:
        """The figures the runs table keeps of a run, named as ``count_labels`` shows
        them; ``steps`` (and ``replans``, where it replans) are what eval checks read."""
        return {"steps": len(snapshot.get("rows") or [])}

    def facts(self, snapshot: dict, counts: dict[str, int]) -> list[str]:
        """The run header's figures, in words."""
        return [f"{counts.get('steps', 0)} step(s)"]

    def panels(self, snapshot: dict, facts: RunFacts) -> list[Panel]:
        """The Run page's parts for this system's run, in order."""
        return []

    def row_line(self, row: dict) -> str:
        """One row of ``snapshot["rows"]`` in one line, for the command line."""
        return " | ".join(str(v) for v in list(row.values())[:4])

    def progress(self, before: dict, after: dict) -> list[str]:
        """What the command line prints as a run's snapshot goes from ``before`` to
        ``after``: each row whose status changed."""
        seen = {json_key(r): r.get("status") for r in before.get("rows") or []}
        return [
            self.row_line(r)
            for r in after.get("rows") or []
            if seen.get(json_key(r)) != r.get("status")
        ]

    def outcome_lines(self, snapshot: dict) -> list[str]:
        """What the command line prints of a finished run: its answer and sources."""
        lines = ["", snapshot["final_answer"]] if snapshot.get("final_answer") else []
        if citations := snapshot.get("citations"):
            lines += [
                "",
                "sources: " + "; ".join(f"[{c['id']}] {c.get('title', '')}" for c in citations),
            ]
        return lines

    def limits(self, design: Design) -> str:
        """The run's limits in one line, for the Run page."""
        return ""

    def design_warnings(self, enabled: list[str]) -> list[str]:
        """Why a design may not work well (advice: it may run anyway)."""
        return []

    def prompt_names(self) -> list[str]:
        return prompt_names(self.name)

    def fork_prompts(self, design: Design) -> dict[str, str]:
        """The prompts a fork of a run of ``design`` may change (role -> prompt name): every
        one the node playground can try on such a run, so any of its results can be forked;
        the guardrail classifier's only where the design asks that model."""
        found = {**self.tuned_prompts, **self.forked_prompts}
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
        return short if short in self.agents or short in self.hubs else None

    def preview_prompt(
        self, name: str, text: str, state: dict | None = None, design: Design | None = None
    ) -> str:
        """Prompt ``name`` as a model receives it with ``text`` as its template, for
        ``state`` (a sample one when None); PromptError names a bad placeholder."""
        return PromptSet({name: text}).render(name)

    def check_fork_change(self, field: str, text: str, design: Design) -> Any:
        """The value a fork puts in ``field``, from what a person typed; ValueError says
        what is wrong. A field holding a map or a list is typed as JSON."""
        import json

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

    def fork_table(self, field: str, values: dict, design: Design) -> ForkTable | None:
        """``field`` at a checkpoint holding ``values`` as a table a fork edits (a plan
        of subtasks, one row each); None: it is typed as text."""
        return None

    def field_label(self, field: str) -> str:
        return self.field_labels.get(field) or field.replace("_", " ").capitalize()

    def run_lesson(self) -> Lesson:
        """Run its teaching scenario (``lesson``): no model, nothing stored as a run."""
        raise ValueError(f"{self.name} has no lesson.")

    # ------------------------------------------------------------------ drawing

    def node_style(self, node: str) -> dict[str, str]:
        """Graphviz attributes of one of its nodes (its hubs are shaded)."""
        return {"fillcolor": "#fff3c4"} if node in self.hubs else {}

    def edge_style(self, source: str, target: str) -> dict[str, str]:
        """Graphviz attributes of an edge (a routing pattern's colour)."""
        return {}

    # ------------------------------------------------------------------ helpers

    def node_role(self, node: str) -> str:
        """What ``node`` does with the state when it runs next (step mode explains it)."""
        return "runs next, reading the state below"

    def paused_fields(self, values: dict) -> list[tuple[str, Any]]:
        """The fields the next node reads, as step mode shows them."""
        return [("current_step", values.get("current_step"))]

    def approval_view(self, item: dict) -> ApprovalView:
        """How the Approvals and Run pages show ``item``, a question the run waits on."""
        kind = item.get("kind") or "approval"
        what = {
            "approval": "approval before the step runs",
            "escalation": "escalation: the step reached its limit",
        }.get(kind, kind)
        return ApprovalView(
            f"**Step {item.get('step')} · {item.get('agent')}** · {what}",
            placeholder="e.g. why it should try again, or why not"
            if kind == "escalation"
            else "e.g. why not this step, and what to do instead",
        )

    def agent_caption(self, name: str) -> str:
        spec = self.agents[name]
        tools = f" Tools: {', '.join(spec.tools)}." if spec.tools else ""
        return f"{spec.description}{tools}"

    def agent_groups(self) -> dict[str, list[str]]:
        """Its agents as the Design page lists them: by team, or one unnamed group."""
        if not self.teams:
            return {"": list(self.agents)}
        return {team: [n for n, s in self.agents.items() if s.team == team] for team in self.teams}


# --------------------------------------------------------------------------- registration

_SYSTEMS: dict[str, System] = {}


def register(system: System) -> System:
    """Host ``system``: ``graph.registry`` registers the shipped ones, in the order the app
    lists them (the run service imports it, so the app and the command line have them);
    a system registered later comes after them. Its offline rules are played from now on."""
    _SYSTEMS[system.name] = system
    if system.offline_rules is not None:
        scripted_rules.add(system.offline_rules)
    return system


def unregister(name: str) -> None:
    system = _SYSTEMS.pop(name, None)
    if system is not None and system.offline_rules is not None:
        scripted_rules.remove(system.offline_rules)


def systems() -> dict[str, System]:
    """Every hosted system, in the order the app lists them."""
    if not _SYSTEMS:
        raise LookupError(
            "No system is registered: import graph.registry first (graph.service does)."
        )
    return dict(_SYSTEMS)


def get_system(name: str) -> System:
    known = systems()
    try:
        return known[name]
    except KeyError:
        raise ValueError(f"unknown system {name!r}; known: {', '.join(known)}") from None


def default_system() -> str:
    return next(iter(systems()))


def coordination_by_size(agents: int, here: str | None = None) -> str:
    """Which coordination a team of ``agents`` working agents calls for, as one sentence
    (the source design's own heuristics, docs/systems/supervisor_bus.md for choosing a
    pattern by size, not rules); with ``here`` (the system the design uses), a second
    saying how that system stands to it, so the advice never reads as about another one."""
    return _by_size(agents) + _how_here_fits(agents, here)


def _how_here_fits(agents: int, here: str | None) -> str:
    if here == "supervisor_bus":
        if 3 <= agents <= 5:
            return " This system is that pattern."
        if agents >= 6:
            return " Here one supervisor routes every step, the bottleneck that warns of."
    if here == "hierarchical_teams":
        if agents >= 6:
            return " This system is that pattern."
        return (
            " The teams here add a layer of team supervisors (model calls of their own), "
            "which pays off from about six agents."
        )
    if here == "plan_execute" and agents >= 2:
        return (
            " Here the Planner writes the steps and the Executor routes each, so the "
            "coordination is theirs, not the agents'."
        )
    return ""


def _by_size(agents: int) -> str:
    if agents <= 1:
        return (
            f"{agents} agent{'' if agents == 1 else 's'}: nothing to coordinate; a single "
            "agent with a clear state schema is enough."
        )
    if agents == 2:
        return (
            "2 agents: a direct handoff is enough: the first writes its output to a named "
            "field with a clear reducer and a conditional edge hands over to the second; "
            "a supervisor would add a model call per step for little."
        )
    if agents <= 5:
        return (
            f"{agents} agents: a supervisor with a message bus fits: agents exchange typed "
            "messages on an append-only channel, each tracks its inbox, and the "
            "supervisor's routing decisions are recorded where you can inspect them."
        )
    return (
        f"{agents} agents: consider hierarchical teams: a top supervisor delegates to "
        "team supervisors, each over a few specialised agents, so no single supervisor "
        "becomes the routing bottleneck."
    )
