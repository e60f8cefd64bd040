"""No configured secret reaches the store, a checkpoint, an export or the logs, even when
a server's error echoes the request's ``Authorization`` header back (graph/redaction.py).

The echo comes from the project's test server over real HTTP; the run goes through the
app's own run service into real SQLite files, which are then read byte by byte.
"""

from __future__ import annotations

import json
import logging

from graph.kernel.design import Design
from graph.models.fake_server import LocalOpenAIServer
from graph.models.modes import PROCESS_MODES
from graph.models.scripted import ScriptedChatModel
from graph.service.run_service import RunService
from graph.service.store import Store
from graph.settings import Settings

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
