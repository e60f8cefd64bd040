"""How the pages present a relay run: its words and one panel of legs. Registered beside
the system with ``ui.views.register_view`` (what ``ui/views.py`` does for a shipped one)."""

from __future__ import annotations

from ui.system_view import SystemView
from ui.view_models import Panel, RunFacts


class RelayView(SystemView):
    count_labels = {"steps": "Relay legs"}
    summary = "A drafter writes a first answer with the model; a checker signs it off."
    intro = "Two agents in a line: the **drafter** asks the model, the **checker** signs off."
    examples = ("Say hello to the relay.",)
    field_labels = {"draft": "Draft"}
    graph_legend = "The drafter hands its draft to the checker, which ends the run."

    def facts(self, snapshot: dict, counts: dict[str, int]) -> list[str]:
        return [f"{counts.get('steps', 0)} relay leg(s)"]

    def panels(self, snapshot: dict, facts: RunFacts) -> list[Panel]:
        rows = [
            {
                "Leg": r["step"],
                "Agent": r["agent"],
                "Status": r["status"],
                "Text": r["text"],
                **facts.step_cells(r["step"]),
            }
            for r in snapshot.get("rows") or []
        ]
        return [
            Panel(
                "legs",
                "Relay legs",
                rows,
                status_column="Status",
                empty=self.working if facts.live else "No leg ran.",
            )
        ]
