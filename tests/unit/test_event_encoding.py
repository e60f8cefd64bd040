"""How a run's events are encoded for the store, once each (issue 33.2): the JSON text
``event_record`` makes is the one the store searches for secrets and writes; long texts
are found in that text, however JSON escapes them; a state's patch is logged as it was
encoded; a batch's states set the runs row once. Real SQLite files in tmp_path."""

from __future__ import annotations

import json
import sqlite3

from langchain_core.messages import AIMessage

from graph.kernel.design import Design
from graph.kernel.records import plain
from graph.redaction import REDACTED
from graph.service.repositories.events import _may_hold_long_text
from graph.service.repositories.shared import SHELVED_TEXT, dumps
from graph.service.run_records import RunEvent, event_record
from graph.service.state_deltas import StateLog
from graph.service.store import Store
from graph.settings import Settings


def _event(kind: str, data: object, seq: int = 1) -> RunEvent:
    return RunEvent(seq, 1000.0 + seq, kind, "n" if kind == "update" else "", "", 1, data)


def test_an_events_data_is_encoded_once_as_the_store_writes_it():
    """Data that is JSON already is kept as it is (not copied) with its text; data holding
    a message is made plain first; data that is not JSON alone (NaN) carries no text."""
    call = {"llm_call": {"request": {"messages": [{"content": 'caf\u00e9 "q"', "n": (1, 2)}]}}}
    record = event_record(_event("custom", call), "plan_execute")
    assert record["data"] is call
    assert record["data_json"] == dumps(plain(call))  # the very text the store wrote before

    update = {"messages": [AIMessage(content="hello", id="m1")], "current_step": 2}
    record = event_record(_event("update", update), "plan_execute")
    assert record["data"]["messages"][0]["content"] == "hello"  # a message record
    assert record["data_json"] == dumps(plain(update))

    assert "data_json" not in event_record(_event("custom", {"x": float("nan")}), "plan_execute")


def test_an_events_own_json_is_searched_for_a_secret_before_it_is_stored(tmp_path):
    """The text ``event_record`` made is written as it is only when it holds no secret:
    one that does is redacted (with a secret in a field besides, too), and the key is
    nowhere in the store's files."""
    secret = 'pass"w\u00f6rd-4471'
    store = Store.open(Settings(home=tmp_path, openai_api_key=secret))  # remembered
    try:
        store.create_run("r1", "Q?", Design(), "m")
        records = [
            event_record(_event("custom", {"note": f"echoed {secret}"}, 1), "plan_execute"),
            event_record(_event("custom", {"note": "clean"}, 2), "plan_execute"),
            event_record(
                RunEvent(3, 1003.0, "update", "n", f"ns {secret}", 1, {"note": f"also {secret}"}),
                "plan_execute",
            ),
        ]
        assert all("data_json" in r for r in records)
        store.append_events("r1", records)
        events = store.events("r1")
    finally:
        store.close()
    assert [e["data"] for e in events] == [
        {"note": f"echoed {REDACTED}"},
        {"note": "clean"},
        {"note": f"also {REDACTED}"},  # a secret in a field and in the data
    ]
    assert events[2]["namespace"] == f"ns {REDACTED}"
    escaped = json.dumps(secret, ensure_ascii=False)[1:-1].encode()
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert escaped not in path.read_bytes(), f"the key is in {path.name}"


LONG_TEXTS = {
    "plain": "a" * SHELVED_TEXT,
    "quotes": '"' * SHELVED_TEXT,  # every one escaped: \" \" ... in the JSON
    "quote at the end": "a" * (SHELVED_TEXT - 1) + '"',
    "backslashes and quotes": '\\"' * (SHELVED_TEXT // 2),
    "non-ASCII": "\u00e9" * SHELVED_TEXT,
    "newlines": "\n" * SHELVED_TEXT,
}


def test_a_long_text_is_found_in_its_json_however_it_is_escaped(tmp_path):
    """A text of ``SHELVED_TEXT`` characters or more is stored once whatever JSON makes
    of its characters (escaped quotes counted as characters, not as its end); a value
    whose JSON is long but whose strings are all short is not walked for one."""
    for name, text in LONG_TEXTS.items():
        value = {"request": {"messages": [{"content": text}]}, "n": 1}
        assert _may_hold_long_text(dumps(value)), name
    short = {"rows": [{"result": "x" * 500, "quote": '"' * 100} for _ in range(40)]}
    assert len(dumps(short)) > 4 * SHELVED_TEXT
    assert not _may_hold_long_text(dumps(short))
    assert not _may_hold_long_text(dumps({"t": "a" * (SHELVED_TEXT - 1)}))

    store = Store.open(Settings(home=tmp_path))
    try:
        store.create_run("r1", "Q?", Design(), "m")
        records = [
            event_record(_event("custom", {"text": text, "short": short}, i), "plan_execute")
            for i, text in enumerate(LONG_TEXTS.values(), 1)
        ]
        store.append_events("r1", records)
        events = store.events("r1")
        assert store.path is not None
        conn = sqlite3.connect(store.path)
        try:
            stored = [r[0] for r in conn.execute("SELECT data_json FROM events ORDER BY seq")]
            shelved = conn.execute("SELECT COUNT(*) FROM event_texts").fetchone()[0]
        finally:
            conn.close()
    finally:
        store.close()
    assert [e["data"]["text"] for e in events] == list(LONG_TEXTS.values())
    assert all('"$text"' in s and len(s) < len(dumps(short)) + 200 for s in stored)
    assert shelved == len(LONG_TEXTS)


def test_a_states_patch_is_logged_as_encoded_and_shares_nothing_with_the_run():
    """A later state is logged as a patch whose text is the JSON of what is logged; the
    whole snapshot it stands for is a copy: a run's value changed in place later does not
    change the base of the next patch (which would then miss the change)."""
    states = StateLog()
    first = {"rows": [{"step": 1, "status": "running"}], "final_answer": None}
    logged, whole, text = states.to_store("r1", first)
    states.stored("r1", 1, whole)
    second = {"rows": [{"step": 1, "status": "done"}, {"step": 2}], "final_answer": "caf\u00e9"}
    logged, whole, text = states.to_store("r1", second)
    assert text == json.dumps(logged, ensure_ascii=False)
    assert whole == second
    second["rows"][1]["status"] = "changed in place"
    assert whole["rows"][1] == {"step": 2}


def test_a_batch_of_states_sets_the_runs_row_once_with_its_last(tmp_path):
    """Two states in one transaction: the runs row is written once, with the last one's
    snapshot and counts and the last final answer given (a reader sees only the
    transaction's end); each state is still in the log."""
    store = Store.open(Settings(home=tmp_path))
    assert store.path is not None
    watch = sqlite3.connect(store.path)
    try:
        watch.executescript(
            "CREATE TABLE snapshot_writes (n INTEGER);"
            "CREATE TRIGGER counted AFTER UPDATE OF snapshot_json ON runs "
            "BEGIN INSERT INTO snapshot_writes VALUES (1); END;"
        )
        store.create_run("r1", "Q?", Design(), "m")

        def state(seq: int, rows: int, final: str | None) -> dict:
            data = {"rows": [{"step": i} for i in range(rows)], "final_answer": final}
            return {"seq": seq, "ts": 1.0 + seq, "kind": "state", "node": "", "data": data}

        store.append_events("r1", [state(1, 1, "42"), state(2, 2, None)])
        writes = watch.execute("SELECT COUNT(*) FROM snapshot_writes").fetchone()[0]
        row = store.run("r1")
        snapshot = store.snapshot("r1")
        logged = [e["data"]["rows"] for e in store.events("r1", kinds=("state",))]
    finally:
        watch.close()
        store.close()
    assert writes == 1
    assert snapshot is not None and len(snapshot["rows"]) == 2
    assert row is not None and row.final_answer == "42" and row.counts == {"steps": 2}
    assert [len(rows) for rows in logged] == [1, 2]
