"""How a run on a LangGraph Server stands once its stream stopped, in the words a local
run ends with (``continue_run``): cancelled, failed (and why), waiting for a human (what
it asks), paused (step mode), or its system's own outcome. ``ServerExecutor`` reads the
server's thread and writes the "end" event from it.
"""

from __future__ import annotations

from graph.settings import Settings


def server_ending(
    snap: dict, values: dict, cancelled: bool, failure: str, settings: Settings
) -> tuple[str, str, dict]:
    """The status, reason and the end event's extra fields (the pending interrupts, the
    next nodes) of a server run: ``snap`` is its thread's state (``threads.get_state``),
    ``values`` its state revived (or the last one streamed), ``failure`` the stream's
    error message ("" for none)."""
    extra: dict = {}
    status, reason = "", ""
    if cancelled:
        status, reason = "cancelled", "Cancelled by the user; everything so far is kept."
    elif failure:
        status, reason = (
            "failed",
            settings.redact(f"The server run failed: {failure}"),
        )
    elif snap.get("interrupts"):
        pending = [
            {
                "id": i["id"],
                **(i["value"] if isinstance(i.get("value"), dict) else {"value": i.get("value")}),
            }
            for i in snap["interrupts"]
        ]
        status = "waiting"
        reason = "Waiting for a human: " + "; ".join(
            f"step {p.get('step')} ({p.get('agent')}): {p.get('reason', '')}" for p in pending
        )
        extra["interrupts"] = pending
    elif snap.get("next"):
        status, reason = "paused", f"Paused before {', '.join(snap['next'])} (step mode)."
        extra["next"] = list(snap["next"])
    if not status:
        status = values.get("outcome") or "failed"
        reason = values.get("outcome_reason") or "The server run ended without an outcome."
    return status, reason, extra
