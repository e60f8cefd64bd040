"""Two runs side by side: their snapshots, their router's decisions and their answers
(the Evals page's two-run view, a fork against its original, the blind review)."""

from __future__ import annotations

from graph.kernel.design import Design
from graph.kernel.system import get_system
from graph.models.replies import parse_json_object
from graph.service.store import Store


def _run_view(store: Store, run_id: str) -> dict:
    record = store.run(run_id)
    if record is None:
        raise KeyError(f"No run {run_id!r}.")
    snapshot = store.snapshot(run_id) or {}
    system = get_system(record.design.get("system") or Design().system)
    decisions = []
    for message in store.messages(run_id, agent=system.shape.router) if system.shape.router else []:
        content = message.get("content") or ""
        try:
            parsed = parse_json_object(content)
        except ValueError:
            parsed = None
        decisions.append(
            {
                "step": message.get("step"),
                "content": content,
                "parsed": parsed if isinstance(parsed, dict) else None,
            }
        )
    return {
        "run_id": run_id,
        "question": record.question,
        "status": record.status,
        "reason": record.reason,
        "system": system.name,
        "router": system.shape.router,
        "snapshot": snapshot,
        "decisions": decisions,
        "human_decisions": [m.get("content") for m in store.messages(run_id, agent="human")],
        "answer": record.final_answer,
        "steps": record.counts.get("steps", 0),
        "replans": record.counts.get("replans", 0),
    }


def side_by_side(store: Store, run_a: str, run_b: str) -> dict:
    """Two runs next to each other: their snapshots (the pages show them as their system's
    panels), the decisions of its router node (parsed when they are JSON) and the answers.
    ``same_question`` says whether they are comparable as two runs of one question."""
    a, b = _run_view(store, run_a), _run_view(store, run_b)
    return {"same_question": a["question"] == b["question"], "a": a, "b": b}
