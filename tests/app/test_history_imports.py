"""The History page against hostile files and odd records: every malformed run export is
refused in a sentence naming the field, nothing is stored and the page keeps working;
any run can be deleted from the page, one whose record is odd included."""

import json

from graph.kernel.design import Design
from tests.app.support import button, open_page, watched
from tests.import_cases import MALFORMED, VALID_QUESTION, valid_export


def _history(run_id: str | None = None):
    return open_page("app_pages/history.py", **({"run": run_id} if run_id else {}))


def _upload(at, name: str, text: str):
    at.file_uploader(key="history:import").clear().upload(name, text.encode(), "application/json")
    return at.run()


def test_every_malformed_export_is_refused_in_a_sentence_and_nothing_is_stored(home, services):
    store, _ = services
    at = _history()
    wrong = []
    for name, text, words in MALFORMED:
        _upload(at, "crafted.json", text)
        errors = [e.value for e in at.error]
        refused = [e for e in errors if e.startswith("crafted.json cannot be imported: ")]
        if at.exception or not refused or words not in refused[0] or store.runs():
            wrong.append((name, [e.value for e in at.exception], errors, len(store.runs())))
    assert wrong == []
    # the page still imports a sound file after all of them
    _upload(at, "sound.json", json.dumps(valid_export()))
    assert not at.exception
    assert any(s.value.startswith("Imported sound.json as run") for s in at.success)
    assert [r.question for r in store.runs()] == [VALID_QUESTION]


def test_an_imported_design_naming_a_model_server_is_imported_without_it_saying_so(home, services):
    store, _ = services
    data = valid_export()
    data["run"]["design"]["model"] = {"endpoint": "http://evil.example:9/v1", "model": "m"}
    at = _upload(_history(), "model.json", json.dumps(data))
    assert not at.exception
    said = " ".join(s.value for s in at.success)
    assert "Imported model.json" in said and "http://evil.example:9/v1" in said
    assert store.runs()[0].design["model"] is None


def _odd_run(store) -> str:
    """A run as an unchecked import once stored it: a time in words, an unknown system,
    a design and counts of the wrong types."""
    store._write(
        "INSERT INTO runs (id, question, system, design_json, prompt_versions_json, "
        "settings_json, status, reason, model_label, created_at, started_at, finished_at, "
        "final_answer, counts_json) VALUES "
        "('odd1', 'odd question', 'skynet', '{\"enabled_agents\": 5, \"system\": 7}', "
        "'[1]', '\"x\"', 'done', '', '', 'yesterday', 'noon', 'later', NULL, "
        '\'{"steps": "many", "replans": -1}\')'
    )
    return "odd1"


def test_a_run_with_an_odd_record_is_listed_opened_and_deleted_from_the_page(home, services):
    store, service = services
    kept = service.start(VALID_QUESTION, Design())
    service.wait(kept, timeout=60)
    odd = _odd_run(store)
    at = _history(odd)
    assert not at.exception, [e.value for e in at.exception]
    assert any(md.value.startswith(f"Run `{odd}`") for md in at.markdown)
    rows = {r["Question"]: r for r in at.dataframe[0].value.to_dict("records")}
    assert rows["odd question"]["Started"] == "unknown time" and len(rows) == 2
    run_page = open_page("app_pages/run.py", run=odd)  # the Run page lists and opens it
    assert any("does not host" in w.value for w in run_page.warning)
    assert watched(run_page).value == odd
    button(at, "Delete", "history:delete").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(s.value == "Deleted run odd1." for s in at.success)
    assert store.run(odd) is None and [r.id for r in store.runs()] == [kept]


def test_a_finished_run_is_deleted_with_its_checkpoints(home, services):
    store, service = services
    run_id = service.start(VALID_QUESTION, Design())
    service.wait(run_id, timeout=60)
    at = _history(run_id)
    button(at, "Delete", "history:delete").click()
    at.run()
    assert store.run(run_id) is None and store.events(run_id) == []
    assert service.checkpointer.get_tuple({"configurable": {"thread_id": run_id}}) is None
    assert any("No runs yet" in i.value for i in at.info)
