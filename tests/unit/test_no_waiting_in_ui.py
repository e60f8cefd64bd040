"""Nothing in the UI or the pages sleeps or retries (issue 32.5): a page script that sleeps
holds its Streamlit session (every click waits behind it), and a read retried in a loop
hides a failure the engine should say in words. A page that must see something later
reruns (``st.fragment(run_every=...)``); a read that fails is said once, and read again at
the next refresh.

Found by reading the code (AST): a call to ``time.sleep`` / ``asyncio.sleep`` / a bare
``sleep``; an import of a retry library; a retry loop, that is a ``while`` loop or a
``for`` over ``range(...)`` whose body tries something that leaves the loop when it works
(``return`` or ``break`` inside the ``try``) and goes round again when it fails."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RETRY_LIBRARIES = {"tenacity", "backoff", "retrying", "retry"}


def _is_sleep(call: ast.Call) -> bool:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id == "sleep"
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "sleep"
        and isinstance(func.value, ast.Name)
        and func.value.id in ("time", "asyncio", "trio", "anyio")
    )


def _leaves_on_success(body: list[ast.stmt]) -> bool:
    return any(
        isinstance(node, (ast.Return, ast.Break))
        for stmt in body
        for node in ast.walk(stmt)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
    )


def _is_retry_loop(loop: ast.stmt) -> bool:
    if isinstance(loop, ast.For):
        counted = (
            isinstance(loop.iter, ast.Call)
            and isinstance(loop.iter.func, ast.Name)
            and loop.iter.func.id == "range"
        )
        if not counted:
            return False  # a loop over items, each tried: not a retry
    elif not isinstance(loop, ast.While):
        return False
    tries = [s for s in loop.body if isinstance(s, ast.Try)]
    return any(_leaves_on_success(t.body) and t.handlers for t in tries)


def waits_and_retries(*folders: str, root: Path = ROOT) -> list[str]:
    found = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            where = path.relative_to(root)
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call) and _is_sleep(node):
                    found.append(f"{where}:{node.lineno} sleeps")
                elif isinstance(node, (ast.Import, ast.ImportFrom)):
                    names = (
                        [a.name for a in node.names]
                        if isinstance(node, ast.Import)
                        else [node.module or ""]
                    )
                    if any(n.split(".")[0] in RETRY_LIBRARIES for n in names):
                        found.append(f"{where}:{node.lineno} imports a retry library")
                elif isinstance(node, (ast.For, ast.While)) and _is_retry_loop(node):
                    found.append(f"{where}:{node.lineno} retries")
    return found


def test_nothing_in_the_ui_or_the_pages_sleeps_or_retries():
    assert waits_and_retries("ui", "app_pages") == []


def test_the_check_finds_the_run_pages_old_sleeping_retry_and_passes_a_loop_over_items(
    tmp_path,
):
    (tmp_path / "ui").mkdir()
    # The Run page's checkpoint read before issue 32.6 (commit 8446d5a), as it was.
    (tmp_path / "ui" / "old.py").write_text(
        "import time\n"
        "def checkpoint(compiled, run_id):\n"
        "    for attempt in range(3):\n"
        "        try:\n"
        "            snap = compiled.get_state({})\n"
        "            return snap.next, dict(snap.values or {})\n"
        "        except Exception:\n"
        "            time.sleep(0.1 * (attempt + 1))\n"
        "    return None, {}\n"
    )
    (tmp_path / "ui" / "other.py").write_text(
        "import tenacity\n"
        "from time import sleep\n"
        "def poll(read):\n"
        "    while True:\n"
        "        try:\n"
        "            return read()\n"
        "        except OSError:\n"
        "            sleep(1)\n"
    )
    (tmp_path / "ui" / "fine.py").write_text(
        "import logging\n"
        "log = logging.getLogger(__name__)\n"
        "def rows(items, read):\n"
        "    out = []\n"
        "    for item in items:\n"
        "        try:\n"
        "            out.append(read(item))\n"
        "        except ValueError:\n"
        "            log.warning('unreadable %s', item)\n"
        "            continue\n"
        "    return out\n"
    )
    assert waits_and_retries("ui", root=tmp_path) == [
        "ui/old.py:3 retries",
        "ui/old.py:8 sleeps",
        "ui/other.py:1 imports a retry library",
        "ui/other.py:4 retries",
        "ui/other.py:8 sleeps",
    ]
