"""A run's state events are stored as what changed since the previous one, and every
reader still gets whole snapshots (issue #18, point 2).

Real parts: the SQLite store on a file, the run service and the scripted model.
"""

from __future__ import annotations

import copy
import sqlite3

from graph.kernel.design import Design
from graph.service.run_service import RunService
from graph.service.state_deltas import apply, diff
from graph.service.store import Store

QUESTION = "Which stock in the database grew the most between 2005 and 2009? Chart the prices."


def _snapshot(steps: int, done: int) -> dict:
    """A plan_execute-like snapshot: ``steps`` rows, the first ``done`` of them done."""
    return {
        "system": "plan_execute",
        "rows": [
            {
                "step": i,
                "agent": "web_researcher",
                "status": "done" if i <= done else "pending",
                "result": f"finding {i}: " + "text " * 150 if i <= done else "",
            }
            for i in range(1, steps + 1)
        ],
        "sources": [{"title": f"doc {i}", "snippet": "s" * 200} for i in range(done)],
        "current_step": done + 1,
        "counts": {"steps": steps, "replans": 0},
    }


def _log_states(store: Store, run_id: str, steps: int) -> list[dict]:
    store.create_run(run_id, "q", Design(), "scripted")
    written = []
    for done in range(steps + 1):
        data = _snapshot(steps, done)
        written.append(copy.deepcopy(data))
        store.append_event(
            run_id, {"seq": 2 * done + 1, "ts": 1.0 + done, "kind": "state", "data": data}
        )
        store.append_event(
            run_id,
            {"seq": 2 * done + 2, "ts": 1.5 + done, "kind": "update", "node": "executor"},
        )
    return written


def _event_bytes(path, run_id: str) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute(
            "SELECT SUM(LENGTH(data_json)) FROM events WHERE run_id = ?", (run_id,)
        ).fetchone()[0]


def test_a_runs_state_events_grow_with_its_length_not_its_square(store):
    _log_states(store, "short", 10)
    _log_states(store, "long", 40)
    short, long = _event_bytes(store.path, "short"), _event_bytes(store.path, "long")
    # Linear is about 4x; each state event holding the whole snapshot was about 15x.
    assert long < 6 * short, (short, long)


def _states(events: list[dict]) -> list:
    return [e["data"] for e in events if e["kind"] == "state"]


def test_every_reader_gets_the_whole_snapshots_back(store):
    written = _log_states(store, "r", 12)
    assert _states(store.events("r")) == written
    assert _states(store.events("r", kinds=("state",))) == written
    assert store.snapshot("r") == written[-1]
    cold = Store(store.path)  # another process: nothing kept in memory
    try:
        assert _states(cold.events("r", after_seq=10)) == written[5:]
        assert _states(cold.events("r", kinds=("state",))) == written
        exported = cold.export_run("r")
        assert _states(exported["events"]) == written
        imported = cold.import_run(exported)
        assert _states(cold.events(imported)) == written
    finally:
        cold.close()
    again = _log_states(store, "r2", 3)  # appended after reads: the patches still apply
    assert _states(Store(store.path).events("r2", after_seq=3)) == again[2:]


def test_a_patch_rebuilds_what_changed_in_dicts_lists_and_values():
    old = {"a": [1, {"x": 1}], "b": "keep", "c": {"gone": 1, "n": 2}, "d": [1, 2, 3]}
    new = {"a": [1, {"x": 2}, 3], "b": "keep", "c": {"n": 3}, "d": [1], "e": None}
    assert apply(copy.deepcopy(old), diff(old, new)) == new
    assert apply(old, diff(old, new)) == new and old["c"] == {"gone": 1, "n": 2}  # untouched


def test_a_real_runs_state_events_read_back_as_they_were_logged(settings):
    class Recording(Store):
        logged: list = []

        def append_events(self, run_id, records, **kwargs):
            for record in records:
                if record["kind"] == "state":
                    self.logged.append(
                        {
                            k: v
                            for k, v in copy.deepcopy(record["data"]).items()
                            if k != "chart_spec"
                        }
                    )
            return super().append_events(run_id, records, **kwargs)

    store = Recording.open(settings)
    service = RunService(store, settings, timeout_tick_s=0)
    try:
        run_id = service.start(QUESTION, Design(max_replans=2, recursion_limit=60))
        record = service.wait(run_id, timeout=120)
    finally:
        service.shutdown()
    assert record.status == "done", record.reason
    assert len(store.logged) > 5
    cold = Store(store.path)
    try:
        read = _states(cold.events(run_id))
    finally:
        cold.close()
        store.close()
    # Stored as JSON: tuples come back as lists, as before.
    import json

    assert read == json.loads(json.dumps(store.logged, default=str))


def test_a_secret_in_a_later_state_is_kept_out_of_the_patch_and_the_snapshot(tmp_path):
    from graph.redaction import REDACTED
    from graph.settings import Settings

    secret = "state-canary-553311"
    settings = Settings(home=tmp_path, openai_api_key=secret)  # configured: remembered
    store = Store.open(settings)
    try:
        store.create_run("r", "q", Design(), "scripted")
        first, second = _snapshot(3, 0), _snapshot(3, 1)
        second["rows"][0]["result"] = f"the server said: {secret}"
        second[f"key {secret}"] = secret
        for seq, data in ((1, first), (2, second)):
            store.append_event("r", {"seq": seq, "ts": 1.0, "kind": "state", "data": data})
        read = _states(Store(store.path).events("r"))[-1]
        snapshot = store.snapshot("r")
    finally:
        store.close()
    assert read == snapshot
    assert read["rows"][0]["result"] == f"the server said: {REDACTED}"
    assert read[f"key {REDACTED}"] == REDACTED
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), f"the key is in {path.name}"


def test_a_batch_of_events_is_stored_whole_or_not_at_all(store):
    """``append_events`` writes a batch in one transaction. A failed batch leaves nothing
    behind, and the next state event is not stored as a patch on one rolled back."""
    store.create_run("r", "q", Design(), "scripted")
    first, second, third = (copy.deepcopy(_snapshot(3, done)) for done in range(3))
    assert store.append_events(
        "r",
        [
            {"seq": 1, "ts": 1.0, "kind": "state", "data": first},
            {"seq": 2, "ts": 1.1, "kind": "update", "node": "planner", "data": {"a": 1}},
        ],
    ) == [1, 2]
    broken = {"seq": "not a number", "ts": 2.1, "kind": "update", "node": "executor"}
    try:
        store.append_events("r", [{"seq": 3, "ts": 2.0, "kind": "state", "data": second}, broken])
    except ValueError:
        pass
    else:
        raise AssertionError("a record without a number seq was stored")
    assert [e["seq"] for e in store.events("r")] == [1, 2]  # nothing of the failed batch
    assert store.append_events("r", [{"seq": 3, "ts": 3.0, "kind": "state", "data": third}]) == [3]
    cold = Store(store.path)
    try:
        assert _states(cold.events("r")) == [_snapshot(3, 0), _snapshot(3, 2)]
    finally:
        cold.close()
