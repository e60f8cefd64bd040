"""Tests for the store (graph/service/store.py), each on a real SQLite file in tmp_path and
on a real PostgreSQL database (the ``database_url`` fixture)."""

from __future__ import annotations

import json
import threading

import pytest

from graph.kernel.design import Design
from graph.prompts import PromptError
from graph.service.store import INTERRUPTED_REASON, SCHEMA_VERSION, Store
from graph.settings import Settings

PLANNER = "plan_execute/planner"


@pytest.fixture
def store_settings(tmp_path, database_url) -> Settings:
    return Settings(home=tmp_path, provider="scripted", database_url=database_url)


@pytest.fixture
def store(store_settings) -> Store:
    s = Store.open(store_settings)
    assert s.dialect == ("postgresql" if store_settings.database_url else "sqlite")
    yield s
    s.close()


def design(**fields) -> Design:
    return Design(max_replans=2, recursion_limit=60, **fields)


def state_record(
    seq: int, rows: int, attempts: dict, final: str | None = None, chart: dict | None = None
) -> dict:
    data = {
        "rows": [{"step": i + 1} for i in range(rows)],
        "replan_attempts": attempts,
        "final_answer": final,
        "chart_spec": chart,
        "plan": {},
        "counts": {"steps": rows, "replans": sum(attempts.values())},
    }
    return {
        "seq": seq,
        "ts": 1000.0 + seq,
        "kind": "state",
        "node": "",
        "namespace": "",
        "step": 1,
        "data": data,
    }


def message(mid: str, step: int, agent: str, content: str = "") -> dict:
    return {
        "id": mid,
        "type": "ai",
        "name": agent,
        "content": content or mid,
        "tool_calls": [],
        "tool_call_id": None,
        "step": step,
        "agent": agent,
        "usage": None,
    }


def update_record(seq: int, node: str, messages: list[dict], namespace: str = "") -> dict:
    return {
        "seq": seq,
        "ts": 1000.0 + seq,
        "kind": "update",
        "node": node,
        "namespace": namespace,
        "step": None,
        "data": {"messages": messages},
    }


def test_design_round_trips_and_survives_a_new_store_on_the_same_database(store_settings):
    saved = design(enabled_agents=["data_researcher", "synthesizer"], prompts={})
    first = Store.open(store_settings)
    assert first.dialect == ("postgresql" if store_settings.database_url else "sqlite")
    assert first.load_design() is None
    first.save_design(saved)
    first.save_design(design(), name="other")
    assert first.load_design() == saved
    first.close()
    second = Store.open(store_settings)
    assert second.load_design() == saved
    assert second.load_design("other") == design()
    assert second.schema_version == SCHEMA_VERSION
    second.close()


def test_open_uses_the_file_under_settings_home(tmp_path):
    home = tmp_path / "nested" / "home"
    s = Store.open(Settings(home=home))
    s.save_design(design())
    assert (home / "stepwise.sqlite").exists()
    s.close()


def test_a_stored_design_that_no_longer_validates_loads_as_none(store):
    store.save_design(design())
    bad = json.dumps(
        {
            "system": "plan_execute",
            "enabled_agents": ["retired_agent"],
            "max_replans": 2,
            "recursion_limit": 60,
            "prompts": {},
        }
    )
    store._write("UPDATE designs SET design_json = ? WHERE name = 'current'", (bad,))
    assert store.load_design() is None
    store._write("UPDATE designs SET design_json = '{not json' WHERE name = 'current'")
    assert store.load_design() is None


def test_prompt_versions_save_list_activate_and_reset(store):
    text = "Plan for: {user_query}\nAgents:\n{agent_list}\n{replan_section}\n"
    first = store.save_prompt_version(PLANNER, "", text)
    assert first.label == "v1"
    second = store.save_prompt_version(PLANNER, "  shorter  ", text + "Be brief.")
    assert second.label == "shorter"
    third = store.save_prompt_version(PLANNER, "", text + "Be very brief.")
    assert third.label == "v3"
    assert [v.id for v in store.prompt_versions(PLANNER)] == [third.id, second.id, first.id]
    assert store.prompt_versions("plan_execute/executor") == []
    assert store.prompt_version(second.id) == second
    assert store.active_prompts() == {}

    store.set_active_prompt(PLANNER, second.id)
    assert store.active_prompts()[PLANNER].id == second.id
    assert store.active_prompt_texts() == {PLANNER: second.text}
    Design(prompts=store.active_prompt_texts())  # what a run is started with validates

    with pytest.raises(ValueError, match="belongs to"):
        store.set_active_prompt("plan_execute/executor", second.id)
    with pytest.raises(ValueError, match="No prompt version"):
        store.set_active_prompt(PLANNER, 99999)

    store.set_active_prompt(PLANNER, None)
    assert store.active_prompts() == {}
    assert store.active_prompt_texts() == {}


def test_an_invalid_template_is_refused_naming_the_placeholder_and_not_stored(store):
    with pytest.raises(PromptError, match=r"\{user_qeury\}"):
        store.save_prompt_version(PLANNER, "typo", "Plan for: {user_qeury}")
    assert store.prompt_versions(PLANNER) == []
    assert store._query("SELECT COUNT(*) AS n FROM prompt_versions")[0]["n"] == 0


def test_events_are_appended_in_order_and_read_after_a_seq(store):
    store.create_run("r1", "question?", design(), "offline scripted model")
    for seq in range(1, 6):
        store.append_event("r1", update_record(seq, f"node{seq}", []))
    store.append_event(
        "r1",
        {
            "seq": 6,
            "ts": 2000.0,
            "kind": "custom",
            "node": "",
            "namespace": "x:1",
            "step": 2,
            "data": {"note": "hi"},
        },
    )
    assert [e["seq"] for e in store.events("r1")] == [1, 2, 3, 4, 5, 6]
    after = store.events("r1", after_seq=4)
    assert [e["seq"] for e in after] == [5, 6]
    assert after[1] == {
        "seq": 6,
        "ts": 2000.0,
        "kind": "custom",
        "node": "",
        "namespace": "x:1",
        "step": 2,
        "data": {"note": "hi"},
    }
    assert [e["seq"] for e in store.events("r1", kinds=("custom",))] == [6]
    assert store.latest_seq("r1") == 6
    assert store.latest_seq("nope") == 0
    assert store.nodes_run("r1") == [f"node{i}" for i in range(1, 6)]
    # a resumed run counts from 1 again: it continues the log instead of colliding
    assert store.append_event("r1", update_record(1, "again", [])) == 7


def test_a_keyed_event_appended_again_keeps_its_first_seq_and_is_stored_once(store):
    """A node update a resumed run replays (same key), in a later batch or twice in one,
    is not stored again; the seq it was stored under is returned."""
    store.create_run("r1", "question?", design(), "offline scripted model")
    first = {**update_record(1, "planner", []), "key": "update:task-1"}
    assert store.append_events("r1", [first, update_record(2, "executor", [])]) == [1, 2]
    again = {**update_record(1, "planner", []), "key": "update:task-1"}
    other = {**update_record(2, "executor", []), "key": "update:task-2"}
    assert store.append_events("r1", [again, other, {**other, "seq": 3}]) == [1, 3, 3]
    assert store.nodes_run("r1") == ["planner", "executor", "executor"]
    assert store.update_keys("r1") is None  # one update without a key


def test_an_event_write_is_fenced_by_the_lease_and_stores_nothing_for_another_owner(store):
    from graph.service.leases import LeaseLost

    store.create_run("r1", "question?", design(), "offline scripted model", owner="a", lease_s=60)
    assert store.append_events("r1", [update_record(1, "planner", [])], owner="a") == [1]
    with pytest.raises(LeaseLost):
        store.append_events("r1", [update_record(2, "executor", [])], owner="b")
    assert store.nodes_run("r1") == ["planner"]
    assert store.append_events("r1", [update_record(1, "executor", [])], owner="a") == [2]
    # a run that is not there is not anyone's: its events are stored (as before leases)
    assert store.append_events("gone", [update_record(1, "x", [])], owner="a") == [1]


def test_an_owned_batch_of_events_costs_one_round_trip_on_postgresql(tmp_path, postgres_url):
    """Each round trip to PostgreSQL is a wait (and a chance for the run's other threads
    to take the interpreter): a running run's batch is sent whole as one message, its
    first statement checking on the server that the run is held and its seqs and keys
    are new, whatever its size. Counted in libpq's own trace of the messages sent: each
    Query, Sync or Flush is a wait for the server."""
    from psycopg import pq

    store = Store.open(Settings(home=tmp_path, provider="scripted", database_url=postgres_url))
    store.create_run("r1", "question?", design(), "offline scripted model", owner="a", lease_s=60)
    batch = [{**update_record(i, f"n{i}", []), "key": f"update:{i}"} for i in (1, 2, 3)]
    batch.append(state_record(4, 2, {}))
    trace = tmp_path / "libpq.trace"
    with store.database.connection() as conn, trace.open("w") as sink:  # the append's too
        conn.pgconn.trace(sink.fileno())
        conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            assert store.append_events("r1", batch, owner="a") == [1, 2, 3, 4]
        finally:
            conn.pgconn.untrace()
    messages = [
        (m[0], m[2].split()[0]) for m in (x.split("\t") for x in trace.read_text().splitlines())
    ]
    waits = [
        name
        for i, (side, name) in enumerate(messages)
        if side == "F"
        and name in ("Query", "Sync", "Flush")
        and messages[i - 1] != ("F", "Sync")  # a Flush right after a Sync: the same wait
    ]
    assert waits == ["Query"], waits
    assert store.nodes_run("r1") == ["n1", "n2", "n3"]
    assert store.run("r1").counts == {"steps": 2, "replans": 0}
    store.close()


def test_a_batch_postgresql_refuses_at_once_is_stored_the_way_that_reads_first(
    tmp_path, postgres_url
):
    """A batch whose seqs are behind the log (another writer logged meanwhile) is refused
    by the server and stored as before: moved to the end, nothing of the refused try
    kept. A state event of the refused try is not the base of the next state's patch:
    every state reads back whole in another process."""
    store = Store.open(Settings(home=tmp_path, provider="scripted", database_url=postgres_url))
    store.create_run("r1", "question?", design(), "offline scripted model", owner="a", lease_s=60)
    first = [update_record(1, "n1", []), state_record(2, 1, {})]
    assert store.append_events("r1", first, owner="a") == [1, 2]
    note = {**update_record(3, "", []), "kind": "custom", "data": {"note": "from elsewhere"}}
    assert store.append_events("r1", [note], owner="a") == [3]
    behind = [{**update_record(3, "n2", []), "key": "update:2"}, state_record(4, 2, {})]
    assert store.append_events("r1", behind, owner="a") == [4, 5]
    assert store.append_events("r1", [state_record(5, 3, {}, final="done")], owner="a") == [6]
    store.close()
    reader = Store.open(Settings(home=tmp_path, provider="scripted", database_url=postgres_url))
    states = reader.events("r1", kinds=("state",))  # as another process reads them
    assert [(e["seq"], len(e["data"]["rows"])) for e in states] == [(2, 1), (5, 2), (6, 3)]
    assert states[-1]["data"]["final_answer"] == "done"
    assert [e["seq"] for e in reader.events("r1")] == [1, 2, 3, 4, 5, 6]
    reader.close()


def test_a_pipelined_transaction_postgresql_refused_is_rolled_back_and_the_store_goes_on(
    tmp_path, postgres_url
):
    """A statement refused in a pipeline makes the server skip the rest, COMMIT
    included, leaving the transaction open and aborted: it is rolled back, nothing of
    it is kept, and the connection serves the next read and write."""
    import psycopg

    store = Store.open(Settings(home=tmp_path, provider="scripted", database_url=postgres_url))
    store.create_run("r1", "question?", design(), "offline scripted model")
    with pytest.raises(psycopg.errors.NotNullViolation):
        with store.database.transaction(pipelined=True) as tx:
            tx.execute("UPDATE runs SET reason = ? WHERE id = ?", ("half-way", "r1"))
            tx.execute(
                "INSERT INTO events (run_id, seq, ts, kind, data_json) VALUES (?, 1, 1.0, ?, NULL)",
                ("r1", "update"),
            )
    assert store.run("r1").reason == ""
    assert store.append_event("r1", update_record(1, "planner", [])) == 1
    assert store.nodes_run("r1") == ["planner"]
    store.close()


def test_a_state_event_updates_the_run_counts_and_the_latest_snapshot(store):
    store.create_run("r1", "question?", design(), "offline scripted model")
    chart = {"mark": "line", "data": {"values": [1, 2, 3]}}
    store.append_event("r1", state_record(1, 2, {}))
    run = store.run("r1")
    assert (run.counts, run.final_answer) == ({"steps": 2, "replans": 0}, None)
    store.append_event("r1", state_record(2, 3, {"1": 1, "2": 2}, final="42", chart=chart))
    run = store.run("r1")
    assert (run.counts, run.final_answer) == ({"steps": 3, "replans": 3}, "42")
    assert store.snapshot("r1")["chart_spec"] == chart
    logged = store.events("r1", kinds=("state",))
    assert all("chart_spec" not in e["data"] for e in logged)
    assert logged[-1]["data"]["final_answer"] == "42"

    store.append_event(
        "r1",
        {
            "seq": 3,
            "ts": 5000.0,
            "kind": "end",
            "node": "",
            "namespace": "",
            "step": 3,
            "data": {"status": "done", "reason": "Finished."},
        },
    )
    run = store.run("r1")
    assert (run.status, run.reason, run.finished_at) == ("done", "Finished.", 5000.0)


def test_messages_are_filtered_by_step_and_agent_and_deduplicated(store):
    store.create_run("r1", "question?", design(), "offline scripted model")
    store.append_event("r1", update_record(1, "planner", [message("p1", 1, "planner")]))
    # a sub-agent's own copy (inside its namespace) is not the top-level record
    store.append_event(
        "r1",
        update_record(2, "model", [message("d1", None, None)], namespace="data_researcher:abc"),
    )
    store.append_event(
        "r1",
        update_record(
            3,
            "data_researcher",
            [message("d1", 1, "data_researcher"), message("d2", 1, "data_researcher")],
        ),
    )
    store.append_event(
        "r1",
        update_record(
            4,
            "data_researcher",
            [message("d2", 1, "data_researcher"), message("d3", 2, "data_researcher")],
        ),
    )
    store.append_event("r1", update_record(5, "executor", [message("e1", 2, "executor")]))

    assert [m["id"] for m in store.messages("r1")] == ["p1", "d1", "d2", "d3", "e1"]
    assert [m["id"] for m in store.messages("r1", step=1)] == ["p1", "d1", "d2"]
    assert [m["id"] for m in store.messages("r1", agent="data_researcher")] == ["d1", "d2", "d3"]
    assert [m["id"] for m in store.messages("r1", step=2, agent="data_researcher")] == ["d3"]
    assert store.messages("r1")[1]["step"] == 1  # the top-level copy, with its step


def test_mark_interrupted_ends_queued_and_running_runs_only(store):
    for run_id in ("q", "r", "d"):
        store.create_run(run_id, f"question {run_id}", design(), "offline scripted model")
    store.set_run_status("r", "running")
    store.set_run_status("d", "done", "Finished.")
    assert store.run("r").started_at is not None

    assert store.mark_interrupted() == 2
    for run_id in ("q", "r"):
        run = store.run(run_id)
        assert (run.status, run.reason) == ("interrupted", INTERRUPTED_REASON)
        assert run.finished_at is not None
    assert store.run("d").status == "done"
    assert store.mark_interrupted() == 0


def test_runs_filters_by_status_and_text_newest_first(store):
    store.create_run("a", "Which stock grew the most?", design(), "m")
    store.create_run("b", "Chart MSFT prices", design(), "m")
    store.create_run("c", "Which STOCK fell 100%_x?", design(), "m")
    store.set_run_status("a", "done")
    assert [r.id for r in store.runs()] == ["c", "b", "a"]
    assert [r.id for r in store.runs(status="done")] == ["a"]
    assert [r.id for r in store.runs(text="stock")] == ["c", "a"]
    assert [r.id for r in store.runs(status="queued", text="stock")] == ["c"]
    assert [r.id for r in store.runs(text="100%_")] == ["c"]
    assert [r.id for r in store.runs(text="0%_x")] == ["c"]
    assert store.runs(text="st%k") == []  # a literal %, not a wildcard
    assert [r.id for r in store.runs(limit=1)] == ["c"]

    store.append_event("b", update_record(1, "planner", []))
    store.delete_run("b")
    assert store.run("b") is None and store.events("b") == []


def test_duration_is_measured_from_start_to_finish(store):
    run = store.create_run("a", "q", design(), "m")
    assert run.duration_s is None
    store.set_run_status("a", "running")
    store._write("UPDATE runs SET started_at = 100.0 WHERE id = 'a'")
    store.append_event(
        "a",
        {
            "seq": 1,
            "ts": 112.5,
            "kind": "end",
            "node": "",
            "namespace": "",
            "step": None,
            "data": {"status": "failed", "reason": "x"},
        },
    )
    assert store.run("a").duration_s == pytest.approx(12.5)


def test_an_export_contains_no_api_key_and_imports_under_a_new_id(store, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-SECRET")
    settings = Settings(home=tmp_path)
    assert settings.openai_api_key.get_secret_value() == "sk-test-SECRET"
    store.create_run("r1", "question?", design(), settings.model_label, settings=settings)
    store.append_event("r1", update_record(1, "planner", [message("p1", 1, "planner")]))
    store.append_event("r1", state_record(2, 1, {}, final="answer", chart={"mark": "bar"}))

    exported = store.export_run("r1")
    text = json.dumps(exported)
    assert "sk-test-SECRET" not in text
    assert exported["run"]["settings"]["openai_api_key"] == "set"
    assert exported["snapshot"]["chart_spec"] == {"mark": "bar"}
    assert [e["seq"] for e in exported["events"]] == [1, 2]

    new_id = store.import_run(json.loads(text))
    assert new_id != "r1"
    copy = store.run(new_id)
    assert (copy.question, copy.final_answer, copy.counts["steps"]) == ("question?", "answer", 1)
    assert copy.settings == store.run("r1").settings == exported["run"]["settings"]
    assert "settings_json" not in exported["run"]  # the export's shape: settings decoded
    assert store.events(new_id) == store.events("r1")
    assert store.snapshot(new_id) == store.snapshot("r1")

    other = Store(tmp_path / "other.sqlite")  # from either database into a file
    assert other.import_run(exported) == "r1"  # a free id is kept
    other.close()


def test_four_threads_appending_200_events_each_to_different_runs_all_stored(store):
    runs = [f"run{i}" for i in range(4)]
    for run_id in runs:
        store.create_run(run_id, "q", design(), "m")
    errors: list[BaseException] = []

    def write(run_id: str) -> None:
        try:
            for seq in range(1, 201):
                if seq % 10 == 0:
                    store.append_event(run_id, state_record(seq, seq // 10, {}))
                else:
                    store.append_event(
                        run_id, update_record(seq, "executor", [message(f"{run_id}-{seq}", 1, "x")])
                    )
                if seq % 50 == 0:
                    store.events(run_id, after_seq=seq - 5)  # a page reading meanwhile
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(r,)) for r in runs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for run_id in runs:
        assert [e["seq"] for e in store.events(run_id)] == list(range(1, 201))
        assert store.run(run_id).counts["steps"] == 20
        assert len(store.messages(run_id)) == 180


def test_a_long_text_repeated_in_every_state_event_is_stored_once(store, tmp_path):
    """#14 item 6: each state event repeats the run's results; a long one is kept once."""
    from graph.service.store import SHELVED_TEXT

    run_id = "r1"
    store.create_run(run_id, "q", design(), "offline scripted model")
    long_text = "finding " * 40_000  # 320 KB
    for seq in range(1, 21):
        store.append_event(
            run_id,
            {
                "seq": seq,
                "kind": "state",
                "data": {"rows": [], "step_results": {"1": long_text}, "n": seq},
            },
        )
    store.append_event(
        run_id,
        {"seq": 21, "kind": "update", "node": "w", "data": {"messages": [{"content": long_text}]}},
    )
    states = store.events(run_id, kinds=("state",))
    assert len(states) == 20 and all(e["data"]["step_results"]["1"] == long_text for e in states)
    assert store.messages(run_id)[0]["content"] == long_text
    assert store.snapshot(run_id)["step_results"]["1"] == long_text
    stored = sum(
        store._query(sql)[0][0] or 0
        for sql in (
            "SELECT SUM(LENGTH(data_json)) FROM events",
            "SELECT SUM(LENGTH(text)) FROM event_texts",
            "SELECT SUM(LENGTH(snapshot_json)) FROM runs",
        )
    )
    assert stored < 5 * len(long_text), stored  # the text, the snapshot: not 21 copies
    if store.path is not None:
        store.close()
        size = sum(p.stat().st_size for p in tmp_path.iterdir())
        assert size < 5 * len(long_text), size  # (6.7 MB before)
    assert len("short") < SHELVED_TEXT


def test_a_long_text_in_many_events_is_stored_once_and_a_short_one_inline(store):
    """Updates repeat what a node returned: a long text is shelved (kept once), a short
    one stays in its event; both read back as written."""
    from graph.service.store import SHELVED_TEXT

    store.create_run("r", "q", design(), "offline scripted model")
    long_text, short_text = "x" * SHELVED_TEXT, "y" * (SHELVED_TEXT // 2)
    for seq in range(1, 11):
        store.append_event(
            "r",
            {
                "seq": seq,
                "kind": "update",
                "node": "w",
                "data": {"messages": [{"content": long_text}, {"content": short_text}]},
            },
        )
    read = [e["data"]["messages"] for e in store.events("r")]
    assert read == [[{"content": long_text}, {"content": short_text}]] * 10
    in_events = store._query("SELECT SUM(LENGTH(data_json)) FROM events")[0][0]
    shelved = store._query("SELECT COUNT(*), SUM(LENGTH(text)) FROM event_texts")[0]
    assert (shelved[0], shelved[1]) == (1, SHELVED_TEXT)
    assert 10 * len(short_text) <= in_events < 10 * len(short_text) + 2_000


def test_a_nul_character_in_a_question_or_an_answer_does_not_fail_the_write(store):
    """PostgreSQL text cannot hold NUL; a model's stray one must not fail the run."""
    store.create_run("r", "before\x00after", design(), "m")
    store.append_event("r", state_record(1, 1, {}, final="answer\x00end"))
    record = store.run("r")
    expected = "\x00" if store.dialect == "sqlite" else "\ufffd"
    assert record.question == f"before{expected}after"
    assert record.final_answer == f"answer{expected}end"
    assert store.snapshot("r")["final_answer"] == "answer\x00end"  # JSON keeps it escaped


def test_a_lost_postgresql_connection_is_opened_again_for_the_next_read_and_write(
    tmp_path, postgres, postgres_url
):
    """A server restart or a proxy cutting an idle connection: the store goes on."""
    import psycopg

    store = Store.open(Settings(home=tmp_path, database_url=postgres_url))
    store.create_run("r", "q", design(), "m")
    pid = store._query("SELECT pg_backend_pid()")[0][0]
    with psycopg.connect(postgres.admin_url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    assert store.run("r").question == "q"
    store.set_run_status("r", "running")
    assert store.run("r").status == "running"
    store.close()


def test_idle_events_are_the_ends_with_the_next_events_time_and_the_pace_holds(store):
    """What the History list reads a run's time at work from (a wait for a person, a
    pace hold), without reading every event of every listed run."""

    def event(seq, ts, kind, data):
        keys = {"node": "", "namespace": "", "step": None}
        return {"seq": seq, "ts": ts, "kind": kind, "data": data, **keys}

    store.create_run("r1", "question?", design(), "offline scripted model")
    store.append_event("r1", update_record(1, "planner", []))
    store.append_event("r1", event(2, 10.0, "custom", {"paced": {"from": 10.0, "seconds": 1}}))
    store.append_event("r1", event(3, 11.0, "custom", {"note": "not a hold"}))
    store.append_event("r1", event(4, 12.0, "end", {"status": "waiting"}))
    store.append_event("r1", event(5, 30.0, "custom", {"note": "decided"}))
    store.append_event("r1", event(6, 31.0, "end", {"status": "done"}))
    found = store.idle_events(["r1", "none"])
    assert found["none"] == []
    assert [(e["kind"], e["ts"]) for e in found["r1"]] == [
        ("custom", 10.0),
        ("end", 12.0),
        ("next", 30.0),
        ("end", 31.0),
    ]
