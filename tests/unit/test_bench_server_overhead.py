"""The server overhead bench (issue 33.8) reads when the server's queue took each run from
``langgraph dev``'s own log: a line as langgraph-api 0.16.7 writes it, colours and all."""

from __future__ import annotations

from bench.server_overhead import started_runs

# One "Starting background run" line of a real ``langgraph dev`` log (2026-12-04), with a
# line before it that names a run but is not a start.
LOG = (
    "\x1b[2m2026-12-04T19:41:14.949Z\x1b[0m [\x1b[32m\x1b[1minfo     \x1b[0m] \x1b[1mCreated run"
    "\x1b[0m \x1b[36mrun_id\x1b[0m=\x1b[35m01a24293-3b22-717d-be65-ba2881448c3f\x1b[0m\n"
    "\x1b[2m2026-12-04T19:41:14.951135Z\x1b[0m [\x1b[32m\x1b[1minfo     \x1b[0m] \x1b[1mStarting "
    "background run       \x1b[0m [\x1b[0m\x1b[1m\x1b[34mlanggraph_api.worker\x1b[0m]\x1b[0m "
    "\x1b[36mapi_variant\x1b[0m=\x1b[35mlocal_dev\x1b[0m \x1b[36mgraph_id\x1b[0m=\x1b[35mthree_steps"
    "\x1b[0m \x1b[36mrun_attempt\x1b[0m=\x1b[35m1\x1b[0m \x1b[36mrun_creation_ms\x1b[0m=\x1b[35m1"
    "\x1b[0m \x1b[36mrun_id\x1b[0m=\x1b[35m01a24293-3b22-717d-be65-ba2881448c3f\x1b[0m "
    "\x1b[36mrun_queue_ms\x1b[0m=\x1b[35m731\x1b[0m \x1b[36mrun_started_at\x1b[0m=\x1b[35m"
    "2026-12-04T19:41:14.945640+00:00\x1b[0m \x1b[36mthread_name\x1b[0m=\x1b[35muvloop_1\x1b[0m\n"
)


def test_each_started_run_is_found_by_its_id_with_its_queue_time():
    runs = started_runs(LOG)

    assert list(runs) == ["01a24293-3b22-717d-be65-ba2881448c3f"]
    started = runs["01a24293-3b22-717d-be65-ba2881448c3f"]
    assert started["run_queue_ms"] == "731"
    assert started["run_started_at"] == "2026-12-04T19:41:14.945640+00:00"
    assert started_runs("no run started yet\n") == {}
