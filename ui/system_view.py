"""The view contract: what the pages say and show of a hosted system, kept beside the pages
instead of in the engine's ``System`` (``graph/kernel/system.py``), which only builds and
runs the graph.

A system's view is a ``SystemView`` subclass (``ui/systems/<system>.py`` for the shipped
ones) registered in ``ui.views``; a system with no view of its own gets this base class,
which shows its steps from ``snapshot["rows"]`` and words everything generically, so a new
system runs in the app before it has a view. The methods return plain data
(``ui.view_models``) that the page widgets draw: a view is tested without a page.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Mapping

from ui.view_models import ApprovalView, ForkTable, Lesson, Panel, RunFacts

if TYPE_CHECKING:
    from graph.kernel.design import Design
    from graph.kernel.system import System


class SystemView:
    """How the pages present one system. Subclasses fill the words and override the parts
    they show differently; ``system`` is the engine's side, for its agents and hubs."""

    summary: ClassVar[str] = ""  # one paragraph: what makes it this system
    intro: ClassVar[str] = ""  # the Design page's introduction
    always_on: ClassVar[str] = ""  # who is always there (hubs), in a sentence
    examples: ClassVar[tuple[str, ...]] = ()  # questions the Run page offers
    # How the Design page words each approval policy of its agents.
    policy_words: ClassVar[Mapping[str, str]] = {
        "always": "always ask",
        "never": "never ask",
        "planner": "ask when the Planner flags the step",
    }
    rejected: ClassVar[str] = "reject it"  # what a rejected approval leads to
    approvals_note: ClassVar[str] = ""  # when and how its agents ask a human
    graph_legend: ClassVar[str] = ""
    working: ClassVar[str] = "Working…"  # what a live run with nothing to show yet is doing
    # What the checkpoint before the first step holds, as the History timeline says it.
    before_first_step: ClassVar[str | None] = None
    answer_pending: ClassVar[str] = "The final answer appears here when the run ends."
    lesson: ClassVar[str | None] = None  # the title of its teaching scenario, if it has one
    edited: ClassVar[str] = "the run goes on with the new text."  # what an edit does next
    field_labels: ClassVar[Mapping[str, str]] = {}  # how the timeline titles state fields
    count_labels: ClassVar[Mapping[str, str]] = {"steps": "Steps"}  # the runs list's words

    def __init__(self, system: System) -> None:
        self.system = system

    @property
    def name(self) -> str:
        return self.system.name

    @property
    def title(self) -> str:
        return self.system.title

    # ------------------------------------------------------------------ a run

    def facts(self, snapshot: dict, counts: dict[str, int]) -> list[str]:
        """The run header's figures, in words."""
        return [f"{counts.get('steps', 0)} step(s)"]

    def panels(self, snapshot: dict, facts: RunFacts) -> list[Panel]:
        """The Run page's parts for a run of this system, in order: by default its rows."""
        rows = [dict(r) for r in snapshot.get("rows") or []]
        return [Panel("steps", "Steps", rows, status_column="Status" if rows else None)]

    def limits(self, design: Design) -> str:
        """The run's limits in one line, for the Run page."""
        return ""

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

    # ------------------------------------------------------------------ forks and steps

    def fork_table(self, field: str, values: dict, design: Design) -> ForkTable | None:
        """``field`` at a checkpoint holding ``values`` as a table a fork edits (a plan
        of subtasks, one row each); None: it is typed as text."""
        return None

    def field_label(self, field: str) -> str:
        return self.field_labels.get(field) or field.replace("_", " ").capitalize()

    def node_role(self, node: str) -> str:
        """What ``node`` does with the state when it runs next (step mode explains it)."""
        return "runs next, reading the state below"

    def paused_fields(self, values: dict) -> list[tuple[str, Any]]:
        """The fields the next node reads, as step mode shows them."""
        return [("current_step", values.get("current_step"))]

    def run_lesson(self) -> Lesson:
        """Run its teaching scenario (``lesson``): no model, nothing stored as a run."""
        raise ValueError(f"{self.name} has no lesson.")

    # ------------------------------------------------------------------ its agents

    def agent_caption(self, name: str) -> str:
        spec = self.system.agents[name]
        tools = f" Tools: {', '.join(spec.tools)}." if spec.tools else ""
        return f"{spec.description}{tools}"

    def agent_groups(self) -> dict[str, list[str]]:
        """Its agents as the Design page lists them: by team, or one unnamed group."""
        teams = self.system.shape.teams
        if not teams:
            return {"": list(self.system.agents)}
        agents = self.system.agents.items()
        return {team: [n for n, s in agents if s.team == team] for team in teams}
