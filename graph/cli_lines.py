"""What the command line prints of a run as it goes and when it ends, per system: a
system with no lines of its own here gets ``RunLines``, which prints each row whose
status changed and the answer with its sources."""

from __future__ import annotations


def _row_key(row: dict) -> str:
    """A row's identity across snapshots: its first field and value."""
    first = next(iter(row.items()), ("", ""))
    return f"{first[0]}={first[1]}"


class RunLines:
    def row_line(self, row: dict) -> str:
        """One row of ``snapshot["rows"]`` in one line."""
        return " | ".join(str(v) for v in list(row.values())[:4])

    def progress(self, before: dict, after: dict) -> list[str]:
        """What is printed as a run's snapshot goes from ``before`` to ``after``: each
        row whose status changed."""
        seen = {_row_key(r): r.get("status") for r in before.get("rows") or []}
        return [
            self.row_line(r)
            for r in after.get("rows") or []
            if seen.get(_row_key(r)) != r.get("status")
        ]

    def outcome_lines(self, snapshot: dict) -> list[str]:
        """What is printed of a finished run: its answer and sources."""
        lines = ["", snapshot["final_answer"]] if snapshot.get("final_answer") else []
        if citations := snapshot.get("citations"):
            lines += [
                "",
                "sources: " + "; ".join(f"[{c['id']}] {c.get('title', '')}" for c in citations),
            ]
        return lines


class PlanLines(RunLines):
    """A plan_execute run: each plan version as it is written, each step's changes, and
    the chart it made."""

    def row_line(self, row: dict) -> str:
        return (
            f"step {row['step']} | {row['agent']:<16} | {row['status']:<9} | replans "
            f"{row['replans']} | {row['action']}"
        )

    def progress(self, before: dict, after: dict) -> list[str]:
        """New plan versions, then each step whose status or replan count changed."""
        lines = []
        for version in (after.get("plan_history") or [])[len(before.get("plan_history") or []) :]:
            why = "" if version["reason"] == "initial plan" else f" ({version['reason']})"
            lines.append(f"plan v{version['version']}{why}:")
            lines += [
                f"  {key}. {block['agent']}: {block['action']}"
                for key, block in version["plan"].items()
            ]
        seen = {r["step"]: (r["status"], r["replans"]) for r in before.get("rows") or []}
        return lines + [
            self.row_line(r)
            for r in after.get("rows") or []
            if seen.get(r["step"], ("pending", 0)) != (r["status"], r["replans"])
        ]

    def outcome_lines(self, snapshot: dict) -> list[str]:
        lines = []
        if spec := snapshot.get("chart_spec"):
            lines.append(
                f"chart: Vega-Lite spec, {len(spec['data']['values'])} points, "
                f"title {spec.get('title')!r}"
            )
            if snapshot.get("chart_caption"):
                lines.append(f"caption: {snapshot['chart_caption']}")
        return lines + super().outcome_lines(snapshot)


_LINES: dict[str, RunLines] = {"plan_execute": PlanLines()}


def lines_of(system: str) -> RunLines:
    return _LINES.get(system, RunLines())
