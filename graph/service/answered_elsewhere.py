"""Questions of the app's server runs answered by another client.

A run the app started on a LangGraph Server waits at an approval on the server's thread;
since Stepwise asks in LangChain's standard human-in-the-loop shape, any client (Agent
Inbox, agent-chat-ui, Studio, a script) can answer it there. Before this, the app never
heard of it: the store kept the run ``waiting`` with its old question, the Approvals inbox
showed a card whose buttons then said "no longer pending", and nothing followed the rest
of the run. Now, when the inbox lists what waits, each waiting run's thread is read: a
question the server no longer asks is recorded as decided (what, by whom and why, from
the run's own ``approvals`` record when the graph has written it; else "answered
elsewhere"), so the inbox shows it in the card's place as any decision, and the run is
followed again to its next stop.
"""

from __future__ import annotations

import logging
import time
from typing import Protocol

from graph.service.store import Store

log = logging.getLogger(__name__)

CHECK_EVERY_S = 2.0  # the inbox redraws every second; the server is read at most this often
ELSEWHERE = "answered elsewhere"
ANOTHER_CLIENT = "another client of the server"


def _decided(approvals: list, item: dict) -> dict:
    """The run's own record of the decision on ``item``, or {} when none is written yet."""
    same_ask = [
        a for a in approvals if item.get("asked_at") and a.get("asked_at") == item["asked_at"]
    ]
    same_step = [
        a
        for a in approvals
        if (a.get("kind"), a.get("agent"), a.get("step"))
        == (item.get("kind"), item.get("agent"), item.get("step"))
    ]
    found = same_ask or same_step
    return found[-1] if found else {}


class Watched(Protocol):
    """What ``notice`` uses of the server run service (``ServerRunService``)."""

    store: Store
    owner: str
    lease_s: float
    elsewhere_checked_at: float

    def is_live(self, run_id: str) -> bool: ...
    def server_state(self, run_id: str, checkpoint_id: str | None = None) -> dict: ...
    def release(self, run_id: str) -> None: ...
    def follow_again(self) -> int: ...


def notice(service: Watched) -> int:
    """Record the questions of waiting runs that another client answered on the server,
    and follow those runs again; how many runs. At most every ``CHECK_EVERY_S``."""
    now = time.monotonic()
    if now - service.elsewhere_checked_at < CHECK_EVERY_S:
        return 0
    service.elsewhere_checked_at = now
    noticed = 0
    for record in service.store.runs(status="waiting", limit=1000):
        asked = service.store.pending_interrupts(record.id)
        if not asked or service.is_live(record.id):
            continue
        try:
            state = service.server_state(record.id)
        except KeyError:
            continue  # no thread on this server (deleted there)
        except Exception as exc:  # a server that is down: the inbox shows what it has
            log.warning("answered elsewhere: the server's state was not read (%s)", exc)
            return noticed
        still = {i.get("id") for i in state.get("interrupts") or []}
        gone = [item for item in asked if item.get("id") not in still]
        if not gone or not service.store.claim_run(record.id, service.owner, service.lease_s):
            continue
        try:
            now_record = service.store.run(record.id)
            if now_record is None or now_record.status != "waiting":  # decided here meanwhile
                continue
            approvals = (state.get("values") or {}).get("approvals") or []
            for item in gone:
                found = _decided(approvals, item)
                service.store.decisions.record(
                    record.id,
                    item,
                    str(found.get("decision") or ELSEWHERE),
                    str(found.get("by") or ANOTHER_CLIENT),
                    str(found.get("reason") or ""),
                )
            service.store.set_run_status(
                record.id, "running", "Answered on the server by another client."
            )
            noticed += 1
        finally:
            service.release(record.id)
    if noticed:
        service.follow_again()  # rejoins it: its stream, or its end
    return noticed
