"""A PostgreSQL store that cannot be reached: every page says so in one sentence naming
the URL without its password, instead of a traceback."""

from __future__ import annotations

import socket

import pytest
from streamlit.testing.v1 import AppTest

from graph.settings import get_settings
from tests.app.support import APP, TIMEOUT

PASSWORD = "hunter2-Very-Secret"


@pytest.fixture
def unreachable(tmp_path, monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the socket is
    url = f"postgresql://stepwise:{PASSWORD}@127.0.0.1:{port}/shared"
    monkeypatch.setenv("STEPWISE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("STEPWISE_DATABASE_URL", url)
    get_settings.cache_clear()
    yield port
    get_settings.cache_clear()


@pytest.mark.parametrize("page", [None, "app_pages/run.py", "app_pages/history.py"])
def test_an_unreachable_database_is_one_sentence_on_every_page_without_its_password(
    unreachable, page
):
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    if page:
        at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    errors = [str(e.value) for e in at.error]
    expected = (
        "The store cannot be opened: Cannot use the PostgreSQL database at "
        f"postgresql://stepwise:[redacted]@127.0.0.1:{unreachable}/shared"
    )
    assert errors and all(e.startswith(expected) for e in errors), errors
    shown = "\n".join(
        str(el.value) for kind in ("markdown", "caption", "error") for el in at.get(kind)
    )
    assert PASSWORD not in shown
