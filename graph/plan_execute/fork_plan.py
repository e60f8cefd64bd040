"""A plan edited for a fork (History's "Change: the plan"): typed back as rows of the
table the page draws (``COLUMNS``, ``ui/systems/plan_execute.py``) or as the JSON map,
checked like the Planner's own plan.

A table, not JSON: a teacher changing step 3's agent should not have to balance braces,
and a mistake is named by its step ("Step 3: ..."), next to the row it is about.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from graph.kernel.design import Design
from graph.plan_execute.planner import Plan, check_plan

COLUMNS = ("step", "agent", "action", "approval", "approval_reason")
MAP_SHAPE = '{"1": {"agent": "...", "action": "..."}, "2": ...}'


def read_plan(text: str, design: Design) -> dict[str, dict]:
    """A plan typed for a fork (the table's rows as JSON, or the map), as the state keeps
    it; ValueError names the step that is wrong."""
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"The plan is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})."
        ) from None
    if isinstance(data, list):  # the table's rows: their order numbers the steps
        data = {"steps": [_step(row) for row in data if _filled(row)]}
    try:
        plan = Plan.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ValueError(_where(first["loc"], first["msg"])) from None
    try:
        check_plan(plan, design.enabled_agents)
    except ValueError as exc:
        raise ValueError(f"The plan cannot run: {exc}.") from None
    return plan.as_map()


def _filled(row: Any) -> bool:
    """A row the user wrote in (a new row left blank is not a step)."""
    return not isinstance(row, dict) or any(
        row.get(c) not in (None, "", False) for c in COLUMNS if c != "step"
    )


def _step(row: Any) -> Any:
    if not isinstance(row, dict):
        return row
    step = {k: v for k, v in row.items() if k != "step" and v is not None}
    step["approval"] = bool(step.get("approval"))
    return step


def _where(loc: tuple, msg: str) -> str:
    parts = [p for p in loc if p != "root"]
    if len(parts) >= 2 and parts[0] == "steps" and isinstance(parts[1], int):
        field = f" ({parts[2]})" if len(parts) > 2 else ""
        return f"Step {parts[1] + 1}{field}: {msg}."
    where = ".".join(str(p) for p in parts) or "the plan"
    return f"The plan does not have the right shape at {where}: {msg}. Write {MAP_SHAPE}."
