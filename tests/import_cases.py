"""Malformed run exports, one per way a crafted or broken file has gone wrong, for the
store-level and History-page tests of imports: each is a valid export (``valid_export``)
with one thing broken, and the words the refusal must say (the field it names)."""

from __future__ import annotations

import json

VALID_QUESTION = "How did Tesla's stock do in 2008?"


def valid_export() -> dict:
    """A small run export every check accepts (the tests import it too, to show the base
    of each case is sound and the page still imports after a refusal)."""
    return {
        "format": "stepwise-run",
        "schema_version": 1,
        "exported_at": 1_764_000_100.0,
        "run": {
            "id": "imported-run-1",
            "question": VALID_QUESTION,
            "system": "plan_execute",
            "design": {"system": "plan_execute", "approval_timeout_s": 600.0},
            "prompt_versions": {},
            "status": "done",
            "reason": "Finished: the synthesizer wrote the final answer.",
            "model_label": "offline scripted model",
            "created_at": 1_764_000_000.0,
            "started_at": 1_764_000_001.0,
            "finished_at": 1_764_000_005.0,
            "final_answer": "Tesla's stock fell in 2008.",
            "step_count": 1,
            "replan_count": 0,
            "parent_run": None,
            "parent_checkpoint": None,
            "settings": {"max_replans": 3},
        },
        "snapshot": {"final_answer": "Tesla's stock fell in 2008.", "rows": []},
        "events": [
            {
                "seq": 1,
                "ts": 1_764_000_002.0,
                "kind": "update",
                "node": "planner",
                "namespace": "",
                "step": None,
                "data": {"messages": []},
            },
            {
                "seq": 2,
                "ts": 1_764_000_005.0,
                "kind": "end",
                "node": "",
                "namespace": "",
                "step": None,
                "data": {"status": "done", "reason": "Finished."},
            },
        ],
    }


def _nested(levels: int):
    value: object = "deep"
    for _ in range(levels):
        value = [value]
    return value


def _with(change) -> str:
    data = valid_export()
    change(data)
    return json.dumps(data)


def _set(path: str, value):
    """A change setting the field at dotted ``path`` (list indexes as numbers)."""

    def change(data):
        *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        target = data
        for part in parents:
            target = target[part]
        target[last] = value

    return change


def _drop(path: str):
    def change(data):
        *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        target = data
        for part in parents:
            target = target[part]
        del target[last]

    return change


def _duplicate_seq(data):
    data["events"][1]["seq"] = data["events"][0]["seq"]


# (case id, the file's text, words the refusal must hold)
MALFORMED: list[tuple[str, str, str]] = [
    ("a list, not an object", "[1, 2, 3]", "Not a Stepwise run export"),
    ("a string, not an object", '"stepwise-run"', "Not a Stepwise run export"),
    ("null", "null", "Not a Stepwise run export"),
    ("not JSON", "{format: stepwise-run", "not JSON text"),
    ("created_at yesterday", _with(_set("run.created_at", "yesterday")), "run.created_at"),
    ("created_at missing", _with(_drop("run.created_at")), "run.created_at"),
    ("created_at NaN", _with(_set("run.created_at", float("nan"))), "run.created_at"),
    ("created_at past year 9999", _with(_set("run.created_at", 1e300)), "run.created_at"),
    ("started_at a list", _with(_set("run.started_at", [1])), "run.started_at"),
    ("finished before started", _with(_set("run.finished_at", 1_764_000_000.5)), "finished"),
    ("run not an object", _with(_set("run", "r1")), "run:"),
    ("question a number", _with(_set("run.question", 42)), "run.question"),
    ("question empty", _with(_set("run.question", "  ")), "run.question"),
    ("question past the cap", _with(_set("run.question", "q" * 20_001)), "run.question"),
    ("unknown system", _with(_set("run.system", "skynet")), "run.system"),
    ("design of another system", _with(_set("run.design.system", "supervisor_bus")), "system"),
    ("design unknown agent", _with(_set("run.design.enabled_agents", ["hal"])), "enabled_agents"),
    ("design no agents", _with(_set("run.design.enabled_agents", [])), "enabled_agents"),
    (
        "design timeout Infinity",
        _with(_set("run.design.approval_timeout_s", float("inf"))),
        "Infinity",
    ),
    ("unknown status", _with(_set("run.status", "exploded")), "run.status"),
    ("step_count text", _with(_set("run.step_count", "many")), "run.step_count"),
    ("step_count negative", _with(_set("run.step_count", -3)), "run.step_count"),
    ("counts a list", _with(_set("run.counts", [1, 2])), "run.counts"),
    ("a count in words", _with(_set("run.counts", {"steps": "many"})), "run.counts.steps"),
    ("design setting out of range", _with(_set("run.design.max_replans", 99)), "max_replans"),
    ("prompt version text", _with(_set("run.prompt_versions", {"planner": "v2"})), "planner"),
    ("id with a slash", _with(_set("run.id", "../etc/passwd")), "run.id"),
    ("events not a list", _with(_set("events", {"seq": 1})), "events"),
    ("event not an object", _with(_set("events.0", "update")), "events[0]"),
    ("event without seq", _with(_drop("events.0.seq")), "events[0].seq"),
    ("event seq text", _with(_set("events.0.seq", "1")), "events[0].seq"),
    ("event seq zero", _with(_set("events.0.seq", 0)), "events[0].seq"),
    ("event seq huge", _with(_set("events.0.seq", 2**70)), "events[0].seq"),
    ("duplicate seq", _with(_duplicate_seq), "events[1].seq"),
    ("event unknown kind", _with(_set("events.0.kind", "explode")), "events[0].kind"),
    ("event ts text", _with(_set("events.0.ts", "noon")), "events[0].ts"),
    ("end event data a list", _with(_set("events.1.data", ["done"])), "events[1].data"),
    ("end interrupts not a list", _with(_set("events.1.data.interrupts", "x")), "interrupts"),
    ("state patch form", _with(_set("events.0.data", {"$delta": {"base": 9}})), "reserves"),
    ("NUL in a text", _with(_set("run.reason", "a\x00b")), "run.reason"),
    ("snapshot a list", _with(_set("snapshot", [1])), "snapshot"),
    ("nested 100 deep", _with(_set("snapshot.rows", _nested(100))), "deeper than 64"),
    (
        "nested 100000 deep",
        '{"format": "stepwise-run", "run": ' + "[" * 100_000 + "]" * 100_000 + "}",
        "deeper",
    ),
    ("NaN deep in an event", _with(_set("events.0.data.score", float("nan"))), "score"),
]
