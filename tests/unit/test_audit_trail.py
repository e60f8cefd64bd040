"""The audit trail (issue 29): decisions and changes of prompts and the design, each with
who made it, filtered and exported as CSV."""

from __future__ import annotations

import csv
import io

from graph.kernel.design import Design
from graph.prompts import default_text
from graph.service.repositories.audit import design_changes
from graph.service.store import Store
from ui import audit_view

PLANNER = "plan_execute/planner"
TEXT = default_text(PLANNER) + "\nPlan briefly."
ANA = "ana@example.org"


def _item(run_id: str, interrupt_id: str) -> dict:
    return {
        "id": interrupt_id,
        "run_id": run_id,
        "step": 2,
        "agent": "report_writer",
        "question": "Save a report.",
    }


def test_prompt_and_design_changes_record_who_made_them(tmp_path):
    store = Store(tmp_path / "store.db")
    version = store.save_prompt_version(PLANNER, "short plans", TEXT, by=ANA)
    store.set_active_prompt(PLANNER, version.id, by=ANA)
    store.set_active_prompt(PLANNER, None)  # single-user: recorded as "human"
    store.save_design(Design(), by=ANA)
    store.save_design(Design(), by=ANA)  # nothing changed: nothing recorded
    store.save_design(Design(pace_s=0.5), by=ANA)
    entries = [(e["by"], e["action"], e["subject"], e["detail"]) for e in store.audit.entries()]
    assert entries == [
        (ANA, "prompt version saved", PLANNER, "“short plans”"),
        (ANA, "prompt activated", PLANNER, "“short plans”"),
        ("human", "prompt activated", PLANNER, "the shipped default"),
        (ANA, "design changed", "current", "first saved (plan_execute)"),
        (ANA, "design changed", "current", "pace_s: 0.0 → 0.5"),
    ]


def test_a_design_change_names_each_field_and_only_the_name_of_a_table(tmp_path):
    before = Design()
    after = before.model_copy(update={"approval_timeout_s": 60.0, "approvals": {"x": "always"}})
    assert design_changes(before, after) == "approvals; approval_timeout_s: 600.0 → 60.0"
    assert design_changes(after, after) == ""


def test_the_trail_names_who_decided_filters_and_exports_csv(tmp_path):
    store = Store(tmp_path / "store.db")
    store.decisions.record("r" * 32, _item("r" * 32, "i1"), "approve", "human")
    store.decisions.record("s" * 32, _item("s" * 32, "i2"), "reject", ANA, "not now")
    store.decisions.record("t" * 32, _item("t" * 32, "i3"), "skip", "timeout", "no decision")
    store.save_prompt_version(PLANNER, "v", TEXT, by=ANA)
    rows = audit_view.trail(store)
    assert [(audit_view.who_words(r["by"]), r["what"]) for r in rows] == [
        (ANA, "Prompt version saved"),
        ("nobody: timed out", "Skipped (the design's default)"),
        (ANA, "Rejected"),
        ("you", "Approved"),
    ]
    assert rows[2]["details"] == "not now"
    assert rows[2]["about"] == "run ssssssss · step 2 (report_writer) · “Save a report.”"
    mine = audit_view.filtered(rows, [ANA], ["Rejected"])
    assert [r["what"] for r in mine] == ["Rejected"]
    assert len(audit_view.filtered(rows, [], [])) == 4
    exported = list(csv.DictReader(io.StringIO(audit_view.csv_text(mine))))
    assert [(r["Who"], r["What"], r["Details"]) for r in exported] == [(ANA, "Rejected", "not now")]
    assert list(exported[0]) == audit_view.COLUMNS
