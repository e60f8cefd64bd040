"""A fork of a teams run with its subtask plan edited by hand (History page, Fork tab).

The plan is shown as rows (id, team, instruction, status, depends_on); the edited rows
are checked against the state at the checkpoint and become the state a fork starts from,
at the lead supervisor, which dispatches from them as from its own plan. Checked, in
words a person can act on: teams that are on in the run's design, dependencies on
subtasks that exist, no cycle, no pending subtask waiting on one that can never finish.
Done subtasks stay done, with their results, and are never run again; a subtask left
out of the edit is cancelled, not lost; a new one gets the next id.
"""

from __future__ import annotations

import math
import time

from graph.hierarchical_teams.lead_asks import fold_results
from graph.hierarchical_teams.state import STATUSES

COLUMNS = ("id", "team", "instruction", "status", "depends_on")
# What a fork may set a subtask to; done and failed are kept only as they were.
SETTABLE = ("pending", "cancelled")
CANCELLED_BY_EDIT = "Cancelled in the fork's edit of the subtask plan."


def plan_rows(values: dict) -> list[dict]:
    """The subtask plan at a checkpoint as rows to edit (results a team handed back
    applied, so a finished subtask reads done); ``depends_on`` as "s1, s2"."""
    return [
        {
            "id": s["id"],
            "team": s["team"],
            "instruction": s["instruction"],
            "status": s["status"],
            "depends_on": ", ".join(s.get("depends_on") or []),
        }
        for s in fold_results(values)
    ]


def _text(value: object) -> str:
    """A cell as text: a blank cell of a table editor (None, NaN) is empty."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value).strip()


def parse_rows(rows: object) -> list[dict]:
    """Rows as typed (JSON or a table editor) in one shape: text cells, ``depends_on`` a
    list of ids (from "s1, s2" or a list). ValueError says what is wrong."""
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ValueError(
            "The subtask plan must be a list of subtasks, each with "
            + ", ".join(COLUMNS)
            + '; e.g. [{"id": "s1", "team": "search_team", "instruction": "...", '
            '"status": "pending", "depends_on": []}].'
        )
    parsed = []
    for n, row in enumerate(rows, 1):
        if all(not _text(row.get(c)) for c in COLUMNS if not isinstance(row.get(c), list)) and (
            not row.get("depends_on")
        ):
            continue  # an empty row a table editor added
        deps = row.get("depends_on")
        if isinstance(deps, (list, tuple)):
            deps = [_text(d) for d in deps]
        else:
            deps = _text(deps).replace(";", ",").split(",")
        parsed.append(
            {
                "id": _text(row.get("id")),
                "team": _text(row.get("team")),
                "instruction": _text(row.get("instruction")),
                "status": _text(row.get("status")).lower() or "pending",
                "depends_on": list(dict.fromkeys(d for d in deps if d)),
                "row": n,
            }
        )
    return parsed


def _number(sid: str) -> int:
    return int(sid[1:]) if sid[:1] == "s" and sid[1:].isdigit() else 0


def _check_row(row: dict, before: dict | None, teams: list[str]) -> None:
    sid = row["id"]
    if row["status"] not in STATUSES:
        raise ValueError(
            f"{sid} has status {row['status']!r}: set a subtask {' or '.join(SETTABLE)}."
        )
    if before is not None and before["status"] == "done":
        same = (
            row["team"] == before["team"]
            and row["instruction"] == before["instruction"]
            and row["depends_on"] == list(before.get("depends_on") or [])
            and row["status"] == "done"
        )
        if not same:
            raise ValueError(
                f"{sid} is done: a fork keeps its result and does not run it again, so its "
                "team, instruction, dependencies and status stay as they were (add a new "
                "subtask to do it differently)."
            )
        return
    if row["status"] == "done":
        raise ValueError(
            f"{sid} is not done: a fork cannot mark it done; set it pending (to run) or cancelled."
        )
    if row["status"] == "failed" and (before is None or before["status"] != "failed"):
        raise ValueError(f"{sid}: a fork sets a subtask pending (to run) or cancelled.")
    if row["team"] not in teams:
        what = f"team {row['team']!r}" if row["team"] else "no team"
        raise ValueError(
            f"{sid} goes to {what}, which is not on in this run's design; use one of: "
            f"{', '.join(teams) or 'no team is on'}."
        )
    if not row["instruction"]:
        raise ValueError(f"{sid} has no instruction: say what its team should do.")


def _check_dependencies(plan: list[dict]) -> None:
    by_id = {s["id"]: s for s in plan}
    for s in plan:
        for dep in s["depends_on"]:
            if dep == s["id"]:
                raise ValueError(f"{s['id']} depends on itself.")
            if dep not in by_id:
                raise ValueError(
                    f"{s['id']} depends on {dep!r}, which is no subtask of the plan "
                    f"(its subtasks: {', '.join(by_id)})."
                )
    state: dict[str, int] = {}

    def visit(sid: str, path: list[str]) -> None:
        state[sid] = 1
        for dep in by_id[sid]["depends_on"]:
            if state.get(dep) == 1:
                cycle = path[path.index(dep) :] + [dep]
                raise ValueError(
                    "The dependencies form a cycle, so none of them could ever run: "
                    + " → ".join(cycle)
                    + " (read → as 'depends on')."
                )
            if dep not in state:
                visit(dep, [*path, dep])
        state[sid] = 2

    for s in plan:
        if s["id"] not in state:
            visit(s["id"], [s["id"]])
    for s in plan:
        if s["status"] != "pending":
            continue
        for dep in s["depends_on"]:
            if by_id[dep]["status"] in ("cancelled", "failed"):
                raise ValueError(
                    f"{s['id']} depends on {dep}, which is {by_id[dep]['status']}: it could "
                    f"never run. Cancel {s['id']} too, set {dep} pending, or drop the "
                    "dependency."
                )


def edited_plan(values: dict, rows: object, teams: list[str], now: float | None = None) -> dict:
    """The state update a fork writes for ``rows`` (the edited plan) at a checkpoint
    holding ``values``, ``teams`` being those on in the run's design. ValueError says
    what is wrong; nothing is written then."""
    now = time.time() if now is None else now
    current = fold_results(values)
    before = {s["id"]: s for s in current}
    edited = parse_rows(rows)
    if not edited:
        raise ValueError(
            "The subtask plan is empty: add a subtask, or replay the run unchanged instead."
        )
    given = [r["id"] for r in edited if r["id"]]
    if twice := sorted({sid for sid in given if given.count(sid) > 1}):
        raise ValueError(f"{', '.join(twice)} appears more than once in the plan.")
    first_free = int(values.get("next_subtask_number") or 1)
    for sid in given:
        if sid not in before and _number(sid) < first_free:
            raise ValueError(
                f"{sid!r} is no subtask of this plan: leave a new subtask's id empty (it "
                f"gets the next one), or name it s<number> from s{first_free} on (ids are "
                "never reused in a run)."
            )
    taken = {*before, *given}
    next_number = max(
        int(values.get("next_subtask_number") or 1), *(_number(s) + 1 for s in taken), 1
    )
    for r in edited:
        if not r["id"]:
            r["id"] = f"s{next_number}"
            next_number += 1
    for r in edited:
        if r["status"] == "delegated":  # its team had not finished: it is dispatched again
            r["status"] = "pending"
        _check_row(r, before.get(r["id"]), teams)
    kept_ids = {r["id"] for r in edited}
    for sid, s in before.items():
        if sid not in kept_ids and s["status"] == "done":
            raise ValueError(
                f"{sid} is done and a fork keeps finished work: it cannot be removed from the plan."
            )
    plan, changed, cancelled, added, kept = [], [], [], [], []
    for r in edited:
        old = before.get(r["id"])
        if old is None:
            record = {
                "id": r["id"],
                "team": r["team"],
                "instruction": r["instruction"],
                "status": r["status"],
                "depends_on": r["depends_on"],
                "request_id": values.get("request_id") or "",
                "result": None,
                "reason": None,
                "started_at": None,
                "ended_at": None,
            }
            added.append(r["id"])
        else:
            record = dict(old)
            if old["status"] == "done":
                plan.append(record)
                continue
            edits = {k: r[k] for k in ("team", "instruction", "depends_on")}
            if any(record.get(k) != v for k, v in edits.items()):
                changed.append(r["id"])
            else:
                kept.append(r["id"])
            record.update(edits)
            if r["status"] != old["status"] or old["status"] == "delegated":
                record.update(status=r["status"], result=None, reason=None, started_at=None)
                record["ended_at"] = None
        if record["status"] == "cancelled" and (old is None or old["status"] != "cancelled"):
            record.update(reason=CANCELLED_BY_EDIT, ended_at=now)
            cancelled.append({"id": r["id"], "reason": CANCELLED_BY_EDIT})
        plan.append(record)
    for sid, s in before.items():  # left out of the edit: cancelled, kept in the record
        if sid not in kept_ids:
            record = dict(s)
            if s["status"] not in ("cancelled", "failed"):
                record.update(status="cancelled", reason=CANCELLED_BY_EDIT, ended_at=now)
                cancelled.append({"id": sid, "reason": CANCELLED_BY_EDIT})
            plan.append(record)
    _check_dependencies(plan)
    record_of_plan = {
        "revision": int(values.get("request_revision") or 0),
        "request_id": values.get("request_id"),
        "kind": "fork",
        "request": values.get("request"),
        "at": now,
        "subtasks": [dict(s) for s in plan],
        "kept": kept,
        "changed": changed,
        "cancelled": cancelled,
        "added": added,
    }
    return {
        "subtasks": plan,
        "subtasks_planned": True,
        "next_subtask_number": next_number,
        "plans": [*(values.get("plans") or []), record_of_plan],
        "current_subtask_id": None,
        "current_team": None,
        "current_instruction": None,
        "current_inputs": [],
        "final_answer": None,
        "outcome": None,
        "outcome_reason": None,
    }
