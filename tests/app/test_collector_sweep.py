"""After a full script run the app collects every generation, a few seconds apart at most
(issue 33, point 3; ``ui/collector.py``, ``sweep``): the cyclic garbage of page runs and
closed sessions no longer piles up until Python's own full collection, which raised the
high-water mark of its small-object allocator for good.

A fresh interpreter per test (the collector's state belongs to the process), the app run
by AppTest on a temporary home, offline scripted model, SQLite. No timing and no memory
size: which collections ran, and whether a garbage cycle was freed."""

from __future__ import annotations

from tests.app.support import ROOT, last_json_line

# Two script runs of the app; the full collections begun during the second are counted,
# with the gap between sweeps set by the test (0: every run; an hour: none).
TWO_RUNS = """
import gc, json
from streamlit.testing.v1 import AppTest
from ui import collector
at = AppTest.from_file(%r, default_timeout=120)
at.run()
assert not at.exception, [e.value for e in at.exception]
after_first = collector.sweeps()
collector.SWEEP_GAP_S = GAP
full = []
gc.callbacks.append(lambda phase, info: full.append(1) if phase == "start" and info["generation"] == 2 else None)
at.switch_page("app_pages/history.py").run()
assert not at.exception, [e.value for e in at.exception]
print(json.dumps({"after_first": after_first, "sweeps": collector.sweeps(), "full": len(full)}))
""" % str(ROOT / "app.py")

# A garbage cycle made just before ``sweep``: freed by it, whatever Python's thresholds.
CYCLE = """
import gc, json, weakref
from ui import collector
collector.settle()
collector.SWEEP_GAP_S = GAP
class Node:
    pass
node = Node()
node.me = node
alive = weakref.ref(node)
del node
swept = collector.sweep()
print(json.dumps({"swept": swept, "freed": alive() is None}))
"""


def _last_line(home, code: str, gap: float) -> dict:
    return last_json_line(home, f"GAP = {gap!r}\n" + code)


def test_after_a_later_script_run_the_app_collects_every_generation(tmp_path):
    found = _last_line(tmp_path, TWO_RUNS, 0.0)
    assert found["after_first"] == 0  # the first run's one collection is settle's
    assert found["sweeps"] == 1 and found["full"] >= 1, found


def test_no_second_full_collection_within_the_gap(tmp_path):
    found = _last_line(tmp_path, TWO_RUNS, 3600.0)
    assert found["sweeps"] == 0, found


def test_a_sweep_frees_a_garbage_cycle(tmp_path):
    assert _last_line(tmp_path, CYCLE, 0.0) == {"swept": True, "freed": True}
