"""What the Run page shows of a supervisor_bus run, from its snapshot: the message bus,
the outstanding requests with their time left, dead letters, the supervisor's decisions.

Kept free of ``st.*`` so the rules are testable without a page.
"""

from __future__ import annotations

import re
import time

BUS_COLUMNS = ("Id", "From", "To", "Type", "Payload", "Consumed by", "Time to answer")


def is_bus(snapshot: dict | None, design: dict | None = None) -> bool:
    return ((snapshot or {}).get("system") == "supervisor_bus"
            or (design or {}).get("system") == "supervisor_bus")


def plain(text: str) -> str:
    """A payload as one line of plain text: st.table draws Markdown, and a writer's draft
    starts with a heading."""
    text = re.sub(r"([\\`*_\[\]#<>|~$])", r"\\\1", " ".join(str(text).split()))
    return "\\" + text if text[:1] in ("-", "+") else text


def bus_rows(snapshot: dict) -> list[dict]:
    return [{"Id": m["id"], "From": m["from"], "To": m["to"], "Type": m["type"],
             "Payload": plain(m["payload"]), "Consumed by": ", ".join(m.get("consumed_by") or []) or "—",
             "Time to answer": "" if m.get("time_to_answer_s") is None
             else f"{m['time_to_answer_s']:.2f} s"}
            for m in snapshot.get("bus") or []]


def outstanding_rows(snapshot: dict, now: float | None = None, live: bool = True) -> list[dict]:
    """Time left is recomputed from ``sent_at`` while the run goes, so it counts down
    between snapshots; a run that stopped shows what was left when it stopped."""
    now = now or time.time()
    rows = []
    for o in snapshot.get("outstanding") or []:
        left = (max(0.0, o["sent_at"] + o["timeout_s"] - now) if live
                else o.get("time_left_s", 0.0))
        rows.append({"Request": o["message_id"], "To": o["to"],
                     "Timeout": f"{o['timeout_s']:g} s", "Time left": f"{left:.1f} s"})
    return rows


def dead_letter_rows(snapshot: dict) -> list[dict]:
    return [{"Request": d.get("message_id"), "To": d.get("to"), "Task": plain(d.get("task", "")),
             "Why": d.get("reason", ""), "Resolution": d.get("resolution", "")}
            for d in snapshot.get("dead_letters") or []]


def decision_rows(snapshot: dict) -> list[dict]:
    return [{"Round": d.get("round"), "Next": d.get("next_agent", d.get("next", "")),
             "Task": plain(d.get("task", "")), "Reason": plain(d.get("reason", "")),
             "Request": d.get("request_id") or ""}
            for d in snapshot.get("decisions") or []]
