"""AppTest fixtures: each test gets its own STEPWISE_HOME, store and run service.

The app's services are ``st.cache_resource`` singletons keyed by the store's folder,
so pointing STEPWISE_HOME at a fresh folder gives a test fresh ones; the teardown
stops that test's worker threads.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from graph.settings import get_settings


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("STEPWISE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("STEPWISE_SCRIPTED_DELAY", raising=False)
    get_settings.cache_clear()
    yield tmp_path / "home"
    from ui import services

    key = str((tmp_path / "home").resolve())
    if (tmp_path / "home").exists():
        services._service(key).shutdown(wait=True)
    services._service.clear()
    services._store.clear()
    services._compiled.clear()
    get_settings.cache_clear()


@pytest.fixture
def services(home):
    """The store and run service the app under test uses."""
    from ui import services as ui_services

    key = str(Path(home).resolve())
    return ui_services._store(key), ui_services._service(key)


@pytest.fixture
def downloads(monkeypatch):
    """What a page's download buttons would hand the browser: ``downloads(button)`` is the
    file's bytes (AppTest keeps them in a media storage it creates for each script run)."""
    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
    from streamlit.testing.v1 import app_test

    kept: list[MemoryMediaFileStorage] = []

    class Keeping(MemoryMediaFileStorage):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            kept.append(self)

    monkeypatch.setattr(app_test, "MemoryMediaFileStorage", Keeping)

    def content(download_button) -> bytes:
        file_id = download_button.proto.url.rsplit("/", 1)[-1].split(".")[0]
        return kept[-1].get_file(file_id).content

    return content
