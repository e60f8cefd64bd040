"""What a run asks PostgreSQL, on the real server: nothing the run's own process already
knows is read back, and the runs row is written once per event batch.

Counted, not timed: row versions by a trigger of the test's own on ``runs``, statements
by libpq's trace of the store's connection."""

from __future__ import annotations

import pytest

from graph.service.leases import LeaseLost
from graph.service.store import Store
from graph.settings import Settings
from tests.unit.test_store import design, state_record, update_record

# A row of ``runs_written`` for each row version an UPDATE of ``runs`` makes.
_COUNT_UPDATES = """
CREATE TABLE runs_written (run_id TEXT);
CREATE FUNCTION runs_written() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO runs_written VALUES (NEW.id);
    RETURN NEW;
END $$;
CREATE TRIGGER runs_written AFTER UPDATE ON runs FOR EACH ROW EXECUTE FUNCTION runs_written();
"""


@pytest.fixture
def pg_store(tmp_path, postgres_url):
    store = Store.open(Settings(home=tmp_path, provider="scripted", database_url=postgres_url))
    store.create_run("r1", "question?", design(), "offline scripted model", owner="a", lease_s=60)
    with store.database.connection() as conn:
        conn.execute(_COUNT_UPDATES)
    yield store
    store.close()


def _written(store: Store) -> int:
    return int(store.database.query("SELECT count(*) FROM runs_written")[0][0])


def test_an_event_batch_writes_the_runs_row_once(pg_store):
    """A batch of a run held by its writer locks the runs row until its commit, as the
    fence does, and writes it once: the check's UPDATE sets the snapshot its last state
    carries (it also wrote a version of its own before, ``owner = owner``). A batch with
    no state only locks it. A batch of a run held by another is refused, nothing
    stored, the row unchanged."""
    batch = [{**update_record(1, "n1", []), "key": "update:n1"}, state_record(2, 3, {})]
    assert pg_store.append_events("r1", batch, owner="a") == [1, 2]
    assert _written(pg_store) == 1
    assert pg_store.run("r1").counts == {"steps": 3, "replans": 0}  # its snapshot, set
    assert pg_store.append_events("r1", [update_record(3, "n2", [])], owner="a") == [3]
    assert _written(pg_store) == 1  # locked, not written
    with pytest.raises(LeaseLost):
        pg_store.append_events("r1", [state_record(4, 5, {})], owner="b")
    assert _written(pg_store) == 1
    assert [e["seq"] for e in pg_store.events("r1")] == [1, 2, 3]
    assert pg_store.run("r1").counts == {"steps": 3, "replans": 0}
