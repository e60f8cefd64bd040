"""What a browser session keeps once its page has been drawn (issue #18: memory grew with
every page load).

Streamlit keeps a closed tab's session for a while (``server.disconnectedSessionTTL``),
and with it its session state, widget callbacks and fragments. A function defined in a
page file keeps that page's whole namespace alive (``__globals__``), so a callback or a
``format_func`` written in a page used to keep the 200 listed runs, the opened run's
checkpoints and so on for every closed tab. Store data must be read through the
process-wide modules (``ui.*``, caches), never held by what a session keeps.
"""

from __future__ import annotations

import gc
import sys
import types

import pytest

from graph.kernel.design import Design
from tests.app.support import open_page, wait_status

WAITS = "What caused the dot-com crash? Save a report."  # asks before its report


def _held_by_session(at) -> dict[str, int]:
    """Objects reachable from the session's state and fragments, by type name; a module's
    namespace (process-wide, shared by every session) is not followed."""
    shared = {id(vars(m)) for m in list(sys.modules.values()) if m is not None}
    roots = [at._session_state, at._fragment_storage]
    seen = {id(r) for r in roots}
    found: dict[str, int] = {}
    todo = list(roots)
    while todo:
        obj = todo.pop()
        for ref in gc.get_referents(obj):
            if id(ref) in seen or id(ref) in shared or isinstance(ref, (types.ModuleType, type)):
                continue
            seen.add(id(ref))
            name = type(ref).__name__
            found[name] = found.get(name, 0) + 1
            todo.append(ref)
    return found


@pytest.mark.parametrize(
    "page",
    [
        "app_pages/run.py",
        "app_pages/history.py",
        "app_pages/evals.py",
        "app_pages/approvals.py",
        "app_pages/prompts.py",
    ],
)
def test_a_drawn_page_leaves_no_run_records_in_its_session(services, page):
    store, service = services
    for n in range(2):
        run_id = service.start(f"How did Tesla's stock do in 200{n}?", Design())
        assert service.wait(run_id, timeout=60).status == "done"
    wait_status(store, service.start(WAITS, Design()), "waiting")  # a card on Approvals

    at = open_page(page)

    held = _held_by_session(at)
    assert held.get("RunRecord", 0) == 0, f"{page} leaves {held['RunRecord']} run records"
    assert held.get("DataFrame", 0) == 0, f"{page} leaves {held['DataFrame']} data frames"
