"""An approval answered the moment its run shows "waiting": the run's worker writes the
status, tells the approval callbacks (webhooks, notifiers) and only then lets go of the
run. An answer in that moment claimed the run, and the ending leg's letting go then took
the new leg's lease away: the run stopped with "lost its lease (now held by nobody)" and
stayed waiting (seen once in a whole suite at load 7)."""

from __future__ import annotations

import time

from graph.kernel.design import Design
from graph.service.run_service import RunService
from tests.inbox_support import REPORT
from tests.unit.conftest import wait_status


def test_an_approval_answered_as_the_run_starts_waiting_goes_on_to_done(service: RunService):
    told = []

    def slow_notifier(kind: str, run_id: str, item: dict | None) -> None:
        told.append(kind)
        time.sleep(1.0)  # a slow callback widens the moment between "waiting" and letting go

    service.on_approval(slow_notifier)
    run_id = service.start(REPORT, Design())
    wait_status(service, run_id, "waiting")
    (item,) = service.pending_approvals()
    service.decide(run_id, item["id"], "approve")  # within that moment
    assert told == ["waiting"]
    wait_status(service, run_id, "done")
    assert not service.leases.is_lost(run_id)
