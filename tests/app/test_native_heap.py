"""The app process's malloc gives freed memory back (issue 33, point 3;
``ui/native_heap.py``).

glibc raises its mmap and trim thresholds each time a large mapped block is freed, after
which large blocks come from the heaps and the heaps' free tops are kept: the app's
resident memory grew with page loads while the memory in use did not. Once the app's
script has run, the thresholds are fixed: a large block is mapped again after one was
freed, and a heap's free top is given back; after each script run, ``malloc_trim``.

A fresh interpreter per test (malloc's settings belong to the process), the app run by
AppTest on a temporary home, offline scripted model, SQLite. No timing and no resident
memory: what glibc's ``mallinfo2`` counts, mapped blocks and the heap's bytes."""

from __future__ import annotations

import platform

import pytest

from tests.app.support import ROOT, last_json_line

pytestmark = pytest.mark.skipif(
    platform.libc_ver()[0] != "glibc", reason="malloc's thresholds are glibc's"
)

MiB = 2**20
# After a 30 MiB block was mapped and freed (which raises glibc's thresholds when they are
# its own): twice a 2 MiB block, whether each was mapped; then how far the main heap grew
# for 200 blocks of 100 KB and how much of that it kept once they were freed.
HEAP_AFTER_FREES = """
import ctypes, json
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks",
        "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
big = bytearray(30 * 2**20)
del big
mapped = []
for _ in range(2):
    before = libc.mallinfo2().hblks
    block = bytearray(2 * 2**20)
    mapped.append(libc.mallinfo2().hblks - before)
    del block
start = libc.mallinfo2().arena
blocks = [bytearray(100_000) for _ in range(200)]
grown = libc.mallinfo2().arena - start
del blocks
kept = libc.mallinfo2().arena - start
print(json.dumps({"mapped": mapped, "grown": grown, "kept": kept}))
"""

APP_FIRST = """
from streamlit.testing.v1 import AppTest
at = AppTest.from_file(%r, default_timeout=120)
at.run()
assert not at.exception, [e.value for e in at.exception]
""" % str(ROOT / "app.py")


def _heap(home, first: str = "", env: dict[str, str] | None = None) -> dict:
    return last_json_line(home, first + HEAP_AFTER_FREES, env)


def test_once_the_app_has_run_large_blocks_stay_mapped_and_freed_heap_is_given_back(tmp_path):
    found = _heap(tmp_path, APP_FIRST)
    assert found["mapped"] == [1, 1], found
    assert found["grown"] >= 10 * MiB, found  # the 100 KB blocks came from the heap
    assert found["kept"] < found["grown"] // 4, found


def test_the_check_sees_glibcs_own_thresholds_move_without_the_app(tmp_path):
    found = _heap(tmp_path)
    # both 2 MiB blocks came from the heap: freeing the 30 MiB one raised the threshold
    assert found["mapped"] == [0, 0], found
    assert found["grown"] >= 10 * MiB and found["kept"] == found["grown"], found


def test_thresholds_chosen_in_the_environment_are_left_alone(tmp_path):
    found = _heap(
        tmp_path,
        "from ui import native_heap\nassert native_heap.fix_thresholds() == {}\n",
        env={"MALLOC_MMAP_THRESHOLD_": str(4 * MiB)},
    )
    # glibc's 4 MiB threshold from the environment, fixed: no 2 MiB block mapped, where
    # the app's would map both; a trim threshold glibc does not move, 128 KiB: heap given back
    assert found["mapped"] == [0, 0], found
    assert found["grown"] >= 10 * MiB and found["kept"] < found["grown"] // 4, found


def test_after_each_script_run_the_app_gives_freed_pages_back(tmp_path):
    trims = last_json_line(
        tmp_path,
        APP_FIRST + "at.run()\nimport json\nfrom ui import native_heap\n"
        "print(json.dumps(native_heap.trims()))\n",
    )
    assert trims == 2  # malloc_trim once after each of the two runs
