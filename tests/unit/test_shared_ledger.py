"""The side-effect ledger lives where the store lives: with ``STEPWISE_DATABASE_URL`` set,
in the shared PostgreSQL database, so an app process on another machine (another
``STEPWISE_HOME``) taking a run over finds the effects its first owner carried out and does
not repeat them. Real PostgreSQL server, real run on the scripted model."""

from __future__ import annotations

from graph.kernel.design import Design
from graph.kernel.ledger import side_effect_ledger
from graph.service.run_service import RunService
from graph.service.store import Store
from graph.settings import Settings


def test_a_side_effect_recorded_on_one_machine_is_found_from_another(tmp_path, postgres_url):
    first_home, second_home = tmp_path / "machine-a", tmp_path / "machine-b"
    settings = Settings(home=first_home, provider="scripted", database_url=postgres_url)
    service = RunService(Store.open(settings), settings, timeout_tick_s=0)
    try:
        run_id = service.start(
            "What caused the dot-com crash? Save a report.",
            Design(approvals={"report_writer": "never"}),
        )
        finished = service.wait(run_id, timeout=120)
        assert finished.status == "done", finished.reason
    finally:
        service.shutdown()
    assert len(list((first_home / "reports").glob("*.md"))) == 1
    assert not (first_home / "side_effects.sqlite").exists()

    elsewhere = Settings(home=second_home, provider="scripted", database_url=postgres_url)
    ledger = side_effect_ledger(elsewhere)
    assert ledger.count(run_id, finished_only=True) == 1
    (key,) = [
        row[0]
        for row in ledger.conn.execute(
            "SELECT key FROM side_effects WHERE key LIKE %s", (run_id + "%",)
        ).fetchall()
    ]
    assert ledger.recorded(key).startswith("Report saved to")


def test_without_a_database_url_the_ledger_stays_in_the_home(tmp_path):
    settings = Settings(home=tmp_path, provider="scripted")
    ledger = side_effect_ledger(settings)
    ledger.begin("run-1/step-1", "intent", "a file")
    ledger.finish("run-1/step-1", "done: a file")
    assert (tmp_path / "side_effects.sqlite").exists()
    assert ledger.recorded("run-1/step-1") == "done: a file"
    assert side_effect_ledger(Settings(home=tmp_path / "other")).recorded("run-1/step-1") is None
