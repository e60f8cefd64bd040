"""No broad ``except`` swallows an error unseen (issue 32.6): each ``except Exception`` (or
``BaseException``, or a bare ``except``) in the engine, the UI and the pages logs, raises,
or hands the exception object itself to the thread that waits for it (which raises it
there); a handler whose ``except`` line says "logged" (by a helper it calls, or by the log
line right after it) is taken at its word, the word being there for a reviewer to check. A handler that only turns the error into words on the page still logs it: the
page's words are gone at the next rerun, the log is what an operator reads later."""

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOGGING = {"exception", "error", "warning", "info", "debug", "critical", "log"}


def _broad(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(k, ast.Name) and k.id in ("Exception", "BaseException") for k in kinds)


def _seen(handler: ast.ExceptHandler) -> bool:
    for node in ast.walk(ast.Module(body=handler.body, type_ignores=[])):
        if isinstance(node, ast.Raise):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in LOGGING:
                return True
            handed = node.func.attr == "set_exception"  # a future's waiter raises it
            if handed and any(isinstance(a, ast.Name) and a.id == handler.name for a in node.args):
                return True
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name):
            if handler.name and node.value.id == handler.name:  # outcome["error"] = exc
                return True
    return False


def silent_handlers(*folders: str) -> list[str]:
    found = []
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            lines = text.splitlines()
            for node in ast.walk(ast.parse(text)):
                if not isinstance(node, ast.ExceptHandler) or not _broad(node):
                    continue
                _, hash_, comment = lines[node.lineno - 1].partition("#")
                if _seen(node) or (hash_ and "logged" in comment):
                    continue
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_no_broad_except_in_the_engine_the_ui_or_the_pages_is_silent():
    assert silent_handlers("graph", "ui", "app_pages") == []


def test_the_check_finds_a_silent_handler_and_passes_a_logged_one(tmp_path, monkeypatch):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(
        "import logging\nlog = logging.getLogger(__name__)\n"
        "def quiet():\n    try:\n        f()\n    except Exception:\n        pass\n"
        "def told():\n    try:\n        f()\n    except Exception:\n"
        "        log.exception('f failed')\n"
        "def narrow():\n    try:\n        f()\n    except KeyError:\n        pass\n"
        "def said():\n    try:\n        f()\n    except Exception as e:  # logged by h\n"
        "        h(e)\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert silent_handlers("pkg") == ["pkg/m.py:6"]
