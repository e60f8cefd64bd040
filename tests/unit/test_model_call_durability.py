"""A model call the store cannot take stops its node (``UsageRecorder.raise_error``).

Every model call is stored as an llm_call event as the call ends, before its node's writes
can be checkpointed: a crash then cannot lose a call that happened. LangChain catches what
a callback raises and only logs it unless the handler asks otherwise, so a store that
refused the event (full, unreachable, the run's lease lost) used to leave the node going
on, its writes checkpointed while the event waited in memory. Here a real run on real
SQLite whose store refuses every batch holding a model call after the second: no model
call may be made after the one the store refused, and the run does not end done.
"""

from __future__ import annotations

from graph.kernel.design import Design
from graph.models.scripted import ScriptedChatModel
from graph.service.run_service import RunService
from graph.service.store import Store
from graph.settings import Settings

QUESTION = "Which stock in the database grew the most between 2005 and 2009? Chart the prices."
STORED_CALLS = 2  # model calls the store takes before it refuses


class RefusedByStore(RuntimeError):
    pass


def _holds_a_call(records: list[dict]) -> bool:
    return any(isinstance(r.get("data"), dict) and "llm_call" in r["data"] for r in records)


def test_no_model_call_is_made_after_one_the_store_refused(tmp_path):
    settings = Settings(home=tmp_path, provider="scripted")
    store = Store.open(settings)
    calls: list[str] = []

    class CountingModel(ScriptedChatModel):
        def _generate(self, *args, **kwargs):
            result = super()._generate(*args, **kwargs)
            calls.append("call")
            return result

    taken = []
    append = store.append_events

    def refusing(run_id, records, owner=None):
        if _holds_a_call(records):
            if len(taken) >= STORED_CALLS:
                raise RefusedByStore("the store refused a model call's event")
            taken.append(records)
        return append(run_id, records, owner)

    store.append_events = refusing  # type: ignore[method-assign]
    service = RunService(
        store, settings, timeout_tick_s=0, model_factory=lambda role: CountingModel()
    )
    try:
        run_id = service.start(QUESTION, Design(max_replans=2, recursion_limit=60))
        record = service.wait(run_id, timeout=60)
    finally:
        service.shutdown()
    assert len(taken) == STORED_CALLS
    assert len(calls) == STORED_CALLS + 1, f"{len(calls)} model calls made"
    assert record.status != "done", record
