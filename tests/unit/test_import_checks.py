"""Imports checked whole before anything is stored (graph/service/import_checks.py): run
exports through the store (SQLite and PostgreSQL), design files and eval set files, each
malformed file refused in a sentence naming the field, with nothing stored."""

import json

import pytest

from graph.kernel.design import Design, DesignError, export_design
from graph.service.eval_sets import EvalSetError, import_eval_set
from graph.service.import_checks import ImportProblem, load_json
from graph.service.store import Store
from graph.settings import Settings
from tests.import_cases import MALFORMED, VALID_QUESTION, valid_export


@pytest.fixture
def store(tmp_path, database_url):
    """On SQLite and on a real PostgreSQL (which refuses a NUL in a text)."""
    s = Store.open(Settings(home=tmp_path, provider="scripted", database_url=database_url))
    yield s
    s.close()


def _count(store: Store, table: str) -> int:
    return store._query(f"SELECT COUNT(*) FROM {table}")[0][0]


# Files that parse: what reaches the store's API (the rest are refused by load_json first,
# and go through the History page's table in tests/app/test_history_imports.py).
PARSED = [case for case in MALFORMED if case[0] not in ("not JSON", "nested 100000 deep")]


@pytest.mark.parametrize("name, text, words", PARSED, ids=[c[0] for c in PARSED])
def test_a_malformed_run_export_is_refused_in_a_sentence_and_nothing_is_stored(
    store, name, text, words
):
    with pytest.raises(ImportProblem) as refused:
        store.import_run(load_json(text))
    message = str(refused.value)
    assert words in message and message.endswith("."), message
    assert len(message) < 300  # a sentence, never the file echoed back
    assert store.runs() == [] and _count(store, "events") == 0


def test_a_sound_export_imports_and_one_naming_another_model_server_without_it(store):
    run_id = store.import_run(valid_export())  # the base every malformed case breaks
    record = store.run(run_id)
    assert (record.question, record.status, record.created_at) == (
        VALID_QUESTION,
        "done",
        1_764_000_000.0,
    )
    assert [e["seq"] for e in store.events(run_id)] == [1, 2]
    data = valid_export()
    data["run"]["design"]["model"] = {"endpoint": "http://evil.example:9/v1", "model": "m"}
    run_id, notes = store.import_run_noting(data)
    assert store.run(run_id).design["model"] is None
    assert len(notes) == 1 and "evil.example" in notes[0] and "left out" in notes[0]


def test_an_export_keeps_its_counts_and_an_older_one_s_step_and_replan_counts_are_read(store):
    older = store.run(store.import_run(valid_export()))  # step_count and replan_count
    assert older.counts == {"steps": 1, "replans": 0}
    assert older.design["settings"]["plan_execute"]["max_replans"] >= 0  # settings completed
    data = valid_export()
    del data["run"]["step_count"], data["run"]["replan_count"]
    data["run"].update(system="supervisor_bus", design={"system": "supervisor_bus"})
    data["run"]["counts"] = {"steps": 2, "messages": 7}
    again = store.run(
        store.import_run(json.loads(json.dumps(store.export_run(store.import_run(data)))))
    )
    assert again.counts == {"steps": 2, "messages": 7}


# --------------------------------------------------------------------------- designs


def _design_file(**fields) -> bytes:
    document = export_design(Design())
    document["design"].update(fields)
    return json.dumps(document).encode()


DEEP_DESIGN = b'{"format": "stepwise-design", "design": ' + b"[" * 50_000 + b"]" * 50_000 + b"}"


@pytest.mark.parametrize(
    "raw, words",
    [
        (_design_file(approval_timeout_s=float("inf")), "approval_timeout_s: Infinity"),
        (_design_file(enabled_agents=[]), "no agent enabled"),
        (DEEP_DESIGN, "nested deeper than 64 levels"),
    ],
    ids=["Infinity timeout", "no agents", "nested 50000 deep"],
)
def test_a_malformed_design_file_is_refused_in_a_sentence_and_not_saved(store, raw, words):
    from ui.design_io import import_design_file

    with pytest.raises(DesignError) as refused:
        import_design_file(store, raw)
    assert words in str(refused.value), str(refused.value)
    assert store.load_design() is None  # nothing saved


def test_a_design_file_naming_a_model_server_is_saved_without_it_saying_so(store):
    from ui.design_io import import_design_file

    raw = _design_file(model={"endpoint": "http://evil.example:9/v1", "model": "m"})
    design, words = import_design_file(store, raw)
    assert design.model is None and store.load_design().model is None
    assert "evil.example" in words and "never chooses where questions are sent" in words


# --------------------------------------------------------------------------- eval sets


def test_a_deeply_nested_or_non_finite_eval_set_is_refused_in_a_sentence():
    deep = b'{"format": "stepwise-eval-set", "eval_set": ' + b"[" * 50_000 + b"]" * 50_000 + b"}"
    with pytest.raises(EvalSetError, match="deeper than"):
        import_eval_set(deep)
    body = {"name": "n", "questions": [{"question": "q?", "checks": []}], "description": "x"}
    nan = json.dumps({"format": "stepwise-eval-set", "version": 1, "eval_set": body})
    with pytest.raises(EvalSetError, match="not a finite number"):
        import_eval_set(nan.replace('"x"', "NaN"))


KEY = "sk-crafted-" + "4d2c" * 8


def _crafted(kind: str) -> str:
    """A file of ``kind`` whose refused value is a key: a refusal quotes what it refuses."""
    if kind == "run":
        data = valid_export()
        data["run"]["created_at"] = KEY
    elif kind == "design":
        data = export_design(Design())
        data["design"]["system"] = KEY
    else:
        data = {"format": "stepwise-eval-set", "version": KEY, "eval_set": {}}
    return json.dumps(data)


@pytest.mark.parametrize("kind", ["run", "design", "eval set"])
def test_a_refusal_never_quotes_a_key_the_crafted_file_holds(tmp_path, kind):
    from graph.service.import_checks import check_design_file

    settings = Settings(home=tmp_path, provider="scripted")
    store = Store.open(settings)
    attempts = {
        "run": lambda: store.import_run(load_json(_crafted("run"))),
        "design": lambda: check_design_file(load_json(_crafted("design")), settings),
        "eval set": lambda: import_eval_set(_crafted("eval set")),
    }
    with pytest.raises((ImportProblem, EvalSetError)) as refused:
        attempts[kind]()
    store.close()
    message = str(refused.value)
    assert KEY not in message and "[redacted]" in message, message
