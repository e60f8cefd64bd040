"""The System contract stays small and the engine free of page types (issue 32): a new
member of the kernel's ``System`` or a view-model class under ``graph/`` fails here, with
where it belongs said in the message."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from graph.kernel.system import get_system
from ui.views import view_of

ROOT = Path(__file__).resolve().parents[2]
VIEW_MODELS = {"Panel", "ApprovalView", "ForkTable", "Block", "Lesson", "RunFacts"}


def _members(cls: ast.ClassDef) -> list[str]:
    names: list[str] = []
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.append(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
    return [n for n in names if not n.startswith("_")]


def test_the_kernel_system_has_at_most_a_dozen_public_members():
    tree = ast.parse((ROOT / "graph/kernel/system.py").read_text())
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "System"]
    members = _members(cls)
    assert len(members) <= 12, (
        f"System has {len(members)} public members ({', '.join(members)}): what the pages "
        "show goes in ui/system_view.py, a graph's layout in Shape, forks in Forks, prompts "
        "in Prompts (graph/kernel/system_parts.py)."
    )


def test_no_view_model_class_is_defined_under_graph():
    found = [
        f"{path.relative_to(ROOT)}: {node.name}"
        for path in (ROOT / "graph").rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef) and node.name in VIEW_MODELS
    ]
    assert not found, f"view models belong in ui/view_models.py: {found}"


@pytest.mark.parametrize("name", ["plan_execute", "supervisor_bus", "hierarchical_teams"])
def test_each_shipped_system_has_a_view_of_its_own_and_counts_in_its_snapshot(name):
    system, view = get_system(name), view_of(name)
    assert type(view).__module__ == f"ui.systems.{name}"
    assert view.system is system and view.examples and view.graph_legend
    snapshot = system.snapshot({})
    assert "steps" in snapshot["counts"] and set(snapshot["counts"]) <= set(view.count_labels)


def test_a_system_without_a_view_is_shown_by_the_generic_one():
    from ui.system_view import SystemView
    from ui.view_models import RunFacts

    generic = SystemView(get_system("plan_execute"))
    (steps,) = generic.panels({"rows": [{"step": 1, "status": "done"}]}, RunFacts())
    assert steps.rows == [{"step": 1, "status": "done"}] and steps.title == "Steps"
