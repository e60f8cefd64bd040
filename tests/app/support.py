"""Helpers for the AppTest tests: open a page, read what the user would see."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
TIMEOUT = 30


def open_page(page: str | None = None, **query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update(query)
    at.run()
    if page:
        at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def graph_dots(at: AppTest) -> list[str]:
    return [el.proto.spec for el in at.get("graphviz_chart")]


def texts(at: AppTest) -> str:
    """Every piece of text on the page, to look for words the user would read."""
    parts = []
    for kind in ("markdown", "caption", "error", "warning", "info", "success", "code", "text"):
        parts += [str(el.value) for el in getattr(at, kind)]
    return "\n".join(parts)


def button(at: AppTest, label: str, key_part: str = ""):
    """The button with this label (and, if given, a key containing ``key_part``)."""
    return next(b for b in at.button if b.label == label and key_part in (b.key or ""))


def try_it(at: AppTest) -> AppTest:
    """Click the playground's *Try it* and let the page poll its calls, which run in the
    background, until it shows their result."""
    button(at, "Try it").click().run()
    for _ in range(600):
        if "playground:call" not in at.session_state:
            return at
        time.sleep(0.05)
        at.run()
    raise AssertionError("the playground's calls never ended")


def wait_status(store, run_id: str, *statuses: str, timeout: float = 60):
    """Block until the run has one of ``statuses``; its record."""
    import time

    deadline = time.time() + timeout
    while time.time() < deadline:
        record = store.run(run_id)
        if record is not None and record.status in statuses:
            return record
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} is {store.run(run_id).status}, not {statuses}")


def killed_mid_run(home, question: str, nodes: int = 3, delay: float = 0.3) -> str:
    """Start a run in a separate app-like process on ``home`` and SIGKILL that process
    once ``nodes`` nodes have run: what a crash leaves behind. Returns the run id."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from graph.service.store import Store
    from graph.settings import Settings

    host = Path(__file__).resolve().parents[1] / "support_procs" / "service_host.py"
    env = {**os.environ, "STEPWISE_HOME": str(home), "STEPWISE_SCRIPTED_DELAY": str(delay)}
    proc = subprocess.Popen(
        [sys.executable, str(host), question], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        run_id = proc.stdout.readline().strip()
        watch = Store.open(Settings(home=home))
        deadline = time.time() + 60
        while len(watch.nodes_run(run_id)) < nodes:
            assert time.time() < deadline, "the run did not get going"
            time.sleep(0.05)
        watch.close()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    return run_id


def watched(at: AppTest):
    """The Run page's "Run to watch" box (its key names the run it shows)."""
    return next(s for s in at.selectbox if s.label == "Run to watch")


def replace_rows(at: AppTest, key: str, rows: list[dict]) -> None:
    """Put ``rows`` in the data editor ``key`` in place of its rows, as a person deleting
    them and typing new ones would (Streamlit's editing state: edited/added/deleted)."""
    count = len(at.data_editor(key=key).value)
    at.session_state[key] = {
        "edited_rows": {},
        "added_rows": rows,
        "deleted_rows": list(range(count)),
    }


def last_json_line(home, code: str, env: dict[str, str] | None = None):
    """What ``code``, run in a fresh interpreter on ``home`` (what is imported, the
    collector's and malloc's state are per process), printed last, as JSON. The
    environment's model, tracing, Stepwise and malloc settings are left out, ``env``
    added."""
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "OTEL_", "STEPWISE_", "MALLOC_"))
    }
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        text=True,
        capture_output=True,
        timeout=300,
        env={**clean, "STEPWISE_HOME": str(home), **(env or {})},
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])
