"""Helpers for the AppTest tests: open a page, read what the user would see."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")
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
