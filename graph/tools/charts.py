"""Charts as Vega-Lite specs built with Altair from data the run already holds.

No model-written code runs: the model only names a dataset, columns and a mark; the
spec is built here, kept with the run, and rendered by the browser.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from langchain_core.tools import StructuredTool

from graph.errors import StepwiseError

Mark = Literal["line", "bar", "point"]


class ChartRefused(StepwiseError, ValueError):
    """The requested chart does not fit the data; the message says what would."""


def chart_spec(
    dataset: dict, x: str, y: str, color: str | None = None, mark: Mark = "line", title: str = ""
) -> dict:
    """A Vega-Lite spec (dict) with the dataset's rows inlined."""
    columns = dataset.get("columns") or []
    for name in (x, y, color):
        if name and name not in columns:
            raise ChartRefused(
                f"Column {name!r} is not in dataset {dataset.get('id')}: "
                f"columns are {', '.join(columns)}."
            )
    if not dataset.get("rows"):
        raise ChartRefused(f"Dataset {dataset.get('id')} has no rows to chart.")
    import altair as alt  # ~0.7 s to import: only a run that charts pays for it

    records = [dict(zip(columns, row)) for row in dataset["rows"]]
    x_type: Literal["temporal", "nominal"] = (
        "temporal" if x.lower() in ("date", "month", "day", "time") else "nominal"
    )
    encoding: dict[str, Any] = {"x": alt.X(x, type=x_type), "y": alt.Y(y, type="quantitative")}
    if color:
        encoding["color"] = alt.Color(color, type="nominal")
    # The spec is checked against Vega-Lite's schema with no rows in it, and the rows put
    # in after: checking each row (SQL scalars, which the schema takes anyway) cost
    # altair's validator ~15 ms per chart, more than the rest of the run's own work.
    chart = getattr(alt.Chart(alt.Data(values=[])), f"mark_{mark}")()
    chart = chart.encode(**encoding).properties(title=title or f"{y} by {x}", width="container")
    spec = chart.to_dict()
    spec["data"] = {"values": records}
    spec["usermeta"] = {"dataset": dataset.get("id"), "x": x, "y": y, "color": color}
    return spec


def chart_stats(spec: dict) -> list[dict]:
    """Figures read back from a spec's own data: per series first, last, min and max."""
    meta: dict[str, Any] = spec.get("usermeta") or {}
    x, y, color = meta.get("x"), meta.get("y"), meta.get("color")
    values = (spec.get("data") or {}).get("values") or []
    series: dict[str | None, list[dict]] = {}
    for row in values:
        series.setdefault(str(row.get(color)) if color else y, []).append(row)
    stats = []
    for name, rows in series.items():
        rows = sorted(rows, key=lambda r: r[x])
        lo = min(rows, key=lambda r: r[y])
        hi = max(rows, key=lambda r: r[y])
        stats.append(
            {
                "series": name,
                "first": (rows[0][x], rows[0][y]),
                "last": (rows[-1][x], rows[-1][y]),
                "min": (lo[x], lo[y]),
                "max": (hi[x], hi[y]),
                "points": len(rows),
            }
        )
    return stats


def _stats_text(stats: list[dict]) -> str:
    """One line per series. A series of one point says so: a caption must not describe a
    change (first → last) that a single bar does not show."""
    return "\n".join(
        f"{s['series']}: a single point, {s['first'][1]} at {s['first'][0]} (1 point)"
        if s["points"] == 1
        else f"{s['series']}: first {s['first'][1]} at {s['first'][0]}, last {s['last'][1]} at "
        f"{s['last'][0]}, min {s['min'][1]} at {s['min'][0]}, max {s['max'][1]} at "
        f"{s['max'][0]} ({s['points']} points)"
        for s in stats
    )


def make_chart_tool(datasets: list[dict]) -> StructuredTool:
    """``make_chart`` over the datasets of this run (bound per call, never global)."""
    by_id = {d["id"]: d for d in datasets}

    def make_chart(
        dataset_id: str,
        x: str,
        y: str,
        color: str | None = None,
        mark: Mark = "line",
        title: str = "",
    ) -> tuple[str, dict | None]:
        dataset = by_id.get(dataset_id)
        if dataset is None:
            return (
                f"ERROR: no dataset {dataset_id!r}; available: {', '.join(by_id) or 'none'}."
            ), None
        try:
            spec = chart_spec(dataset, x, y, color, mark, title)
        except ChartRefused as exc:
            return f"ERROR: {exc}", None
        points = len(spec["data"]["values"])
        return f"Chart made: {mark} of {y} by {x} from {dataset_id} ({points} points).", spec

    return StructuredTool.from_function(
        make_chart,
        name="make_chart",
        response_format="content_and_artifact",
        description="Build a chart (Vega-Lite) from a dataset of this run: choose dataset_id, "
        "x and y columns, an optional color column, and mark line|bar|point.",
    )


def describe_chart_tool(spec: dict | None) -> StructuredTool:
    """``describe_chart``: the figures of the chart just made, so captions cite real numbers."""

    def describe_chart() -> str:
        if not spec:
            return "NO RESULTS: there is no chart to describe."
        meta = spec.get("usermeta") or {}
        head = f"Chart of {meta.get('y')} by {meta.get('x')} from {meta.get('dataset')}:"
        return head + "\n" + _stats_text(chart_stats(spec))

    return StructuredTool.from_function(
        describe_chart,
        name="describe_chart",
        description="Read the figures (first, last, min, max per series) of the chart just made.",
    )


def spec_json(spec: dict) -> str:
    return json.dumps(spec, indent=2, default=str)
