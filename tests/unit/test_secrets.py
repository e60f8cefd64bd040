"""No configured secret reaches the store, a checkpoint, an export or the logs, even when
a server's error echoes the request's ``Authorization`` header back (graph/redaction.py).

The echo comes from the project's test server over real HTTP; the run goes through the
app's own run service into real SQLite files, which are then read byte by byte.
"""

from __future__ import annotations

import json
import logging

from graph.kernel.design import Design
from graph.models.modes import PROCESS_MODES
from graph.models.scripted import ScriptedChatModel
from graph.service.run_service import RunService
from graph.service.store import Store
from graph.settings import Settings
from tests.support_procs.fake_server import LocalOpenAIServer

QUESTION = "How did Apple's stock price change in 2007?"
# Not shaped like any known key: only its being configured can keep it out.
CANARY = "canary-Zq81-local-gateway-token"
REDACTED = "[redacted]"


def test_a_key_echoed_in_a_server_error_is_stored_and_shown_nowhere(tmp_path, caplog):
    caplog.set_level(logging.DEBUG)  # every logger, every level
    PROCESS_MODES.forget()
    with LocalOpenAIServer(ScriptedChatModel) as server:
        server.inject("echo_auth")  # HTTP 400 "... Authorization: Bearer <the key>"
        settings = Settings(
            home=tmp_path,
            openai_base_url=server.base_url,
            openai_api_key=CANARY,
            max_retries=0,
            request_timeout_s=10,
        )
        store = Store.open(settings)
        service = RunService(store, settings, timeout_tick_s=0)
        try:
            run_id = service.start(QUESTION, Design())
            record = service.wait(run_id, timeout=60)
            export = json.dumps(store.export_run(run_id))
            events = json.dumps(store.events(run_id))
        finally:
            service.shutdown()
            store.close()
    PROCESS_MODES.forget()
    assert record.status == "failed"
    assert record.reason.endswith(f"Authorization: Bearer {REDACTED}"), record.reason
    assert CANARY not in record.reason and CANARY not in events and CANARY not in export
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name.startswith("checkpoints.sqlite") for p in files)
    for path in files:  # the store, the checkpoints, their WAL files
        assert CANARY.encode() not in path.read_bytes(), f"the key is in {path.name}"
    assert CANARY not in caplog.text


def test_configured_secrets_and_key_shaped_text_are_redacted():
    from graph.redaction import redact, redact_data

    settings = Settings(openai_api_key="my-local-key-42", tavily_api_key="tvly-abcdef123")
    text = (
        "auth failed for my-local-key-42 (tvly-abcdef123); echoed: Authorization: Bearer "
        "eyJhbGciOiJIUzI1NiJ9.payload.sig and sk-proj-AbCdEf0123456789"
    )
    cleaned = settings.redact(text)
    for secret in ("my-local-key-42", "tvly-abcdef123", "eyJhbGci", "sk-proj-AbCdEf"):
        assert secret not in cleaned
    assert cleaned.startswith(f"auth failed for {REDACTED} ({REDACTED}); echoed:")
    assert "Bearer [redacted]" in cleaned
    # Remembered process-wide once configured: the store redacts without the settings.
    assert redact("key my-local-key-42 in JSON") == f"key {REDACTED} in JSON"
    assert redact_data({"reason": ["x my-local-key-42"], 3: None}) == {
        "reason": [f"x {REDACTED}"],
        3: None,
    }
    # Ordinary words stay: a short placeholder key is not a secret worth blanking text for.
    assert Settings(openai_api_key="x").redact("x marks the spot") == "x marks the spot"


def test_the_store_keeps_no_configured_secret_whoever_hands_it_text(tmp_path):
    """The store's write boundary redacts too: text from any layer (a tool's error, a
    node's report) never lands in the file with a key in it."""
    secret = "store-canary-991122"
    settings = Settings(home=tmp_path, openai_api_key=secret)  # configured: remembered
    store = Store.open(settings)
    try:
        store.create_run("r1", QUESTION, Design(), "m")
        store.append_event(
            "r1", {"seq": 1, "kind": "custom", "node": "", "data": {"note": f"key {secret}"}}
        )
        store.append_event(
            "r1",
            {"seq": 2, "kind": "end", "node": "", "data": {"status": "failed", "reason": secret}},
        )
        store.set_run_status("r1", "failed", f"the server said: {secret}")
        export = json.dumps(store.export_run("r1"))
        reason = store.run("r1").reason
    finally:
        store.close()
    assert reason == f"the server said: {REDACTED}"
    assert secret not in export and REDACTED in export
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), f"the key is in {path.name}"


def test_a_secret_anywhere_in_a_large_value_is_found_however_json_escapes_it():
    """``redact_data`` skips the walk when a value's JSON text shows no secret: a secret
    holding characters JSON escapes, or a key shape after an escaped character, must still
    be found."""
    from graph.redaction import redact_data, remember_secrets

    odd = 'pa"ss\\word-77\u00e9'
    remember_secrets([odd])
    rows = [{"step": i, "result": f"plain text {i}", "tags": ("a", "b")} for i in range(200)]
    value = {
        "rows": rows,
        "deep": [{"x": [f"before {odd} after"]}],
        "shape": "line\nsk-proj-AbCdEf0123456789",
        "bearer": "Authorization: Bearer\tabcdefghijklmnop1234",
    }
    cleaned = redact_data(value)
    assert cleaned["deep"] == [{"x": [f"before {REDACTED} after"]}]
    assert cleaned["shape"] == f"line\n{REDACTED}"
    assert cleaned["bearer"] == f"Authorization: Bearer {REDACTED}"
    assert cleaned["rows"][5] == {"step": 5, "result": "plain text 5", "tags": ["a", "b"]}

    clean = {"rows": rows, "note": "nothing secret here"}
    copy = redact_data(clean)
    assert copy == {"rows": [{**r, "tags": ["a", "b"]} for r in rows], "note": clean["note"]}
    copy["rows"][0]["result"] = "changed"
    assert rows[0]["result"] == "plain text 0"  # a copy, never the caller's value


def test_an_event_is_encoded_once_and_only_when_it_holds_no_secret_in_either_escaping():
    """The store encodes a clean event's data once (``clean_json``, non-ASCII kept, as it
    writes it) instead of redacting a copy and encoding that; a secret is seen however
    the text escapes it, and a value that is not JSON alone is left to ``redact_data``."""
    from graph.redaction import clean_json, remember_secrets
    from graph.service.repositories.shared import dumps

    odd = 'k\u00e9y"with-quote-5521'
    remember_secrets([odd])
    clean = {"note": 'caf\u00e9 "quoted"', "rows": [1, 2.5, None, True], "k": {"n": "x"}}
    assert clean_json(clean) == dumps(clean)  # the very text the store writes
    assert clean_json({"note": f"before {odd} after"}) is None  # é kept, quote escaped
    assert clean_json({"shape": "sk-proj-AbCdEf0123456789"}) is None
    assert clean_json({"ratio": float("nan")}) is None  # not JSON: walked instead


def test_the_store_keeps_out_a_secret_with_characters_json_escapes(tmp_path):
    """A clean event is stored from its one JSON text; a secret holding a quote and a
    non-ASCII letter sits in that text in a form neither plain nor ASCII-escaped, and
    must still be found there."""
    secret = 'pass"w\u00f6rd-8812'
    settings = Settings(home=tmp_path, openai_api_key=secret)  # configured: remembered
    store = Store.open(settings)
    try:
        store.create_run("r1", QUESTION, Design(), "m")
        store.append_events(
            "r1",
            [
                {"seq": 1, "kind": "custom", "node": "", "data": {"note": f"key {secret}"}},
                {"seq": 2, "kind": "update", "node": "n", "data": {"messages": ["clean"]}},
                {"seq": 3, "kind": "custom", "node": "", "namespace": secret, "data": {}},
            ],
        )
        events = store.events("r1")
    finally:
        store.close()
    assert events[0]["data"] == {"note": f"key {REDACTED}"}
    assert events[1]["data"] == {"messages": ["clean"]}
    assert events[2]["namespace"] == REDACTED  # a field besides the data is checked too
    escaped = json.dumps(secret, ensure_ascii=False)[1:-1].encode()  # as clean_json writes
    for path in tmp_path.rglob("*"):  # the store and its WAL file
        if path.is_file():
            assert escaped not in path.read_bytes(), f"the key is in {path.name}"


def test_secrets_remembered_while_another_thread_redacts_break_nothing(monkeypatch):
    """Settings made on one thread (a page, a run's model) remember their keys while a run
    writes its events on another: the set of secrets is never changed under a reader."""
    import threading

    from graph import redaction

    monkeypatch.setattr(redaction, "_known", redaction._known)  # restored afterwards
    monkeypatch.setattr(redaction, "_known_pattern", redaction._known_pattern)
    value = {"rows": [{"step": i, "result": f"text {i}"} for i in range(50)]}
    errors: list[BaseException] = []
    done = threading.Event()

    def redacting() -> None:
        try:
            while not done.is_set():
                redaction.redact_data(value)
        except BaseException as exc:  # noqa: BLE001 - the failure under test
            errors.append(exc)

    reader = threading.Thread(target=redacting)
    reader.start()
    try:
        for i in range(300):
            redaction.remember_secrets([f"concurrent-secret-{i:06d}"])
    finally:
        done.set()
        reader.join(timeout=30)
    assert errors == []
    assert redaction.redact("x concurrent-secret-000042 y") == f"x {REDACTED} y"
