"""A run on a LangGraph Server: the state it sends back is typed by the system's schema."""

from __future__ import annotations

from graph.kernel.design import Design
from graph.service.server_runs import ServerRunService, revive_state
from graph.supervisor_bus.state import Message


def test_a_bus_read_back_from_the_server_holds_messages_not_dicts(store, settings):
    """Found by mypy: the schema was read from ``builder.schema``, which LangGraph's
    StateGraph does not have, so every server state was left as plain data."""
    service = ServerRunService(
        store,
        settings.model_copy(update={"server_url": "http://127.0.0.1:9"}),  # never called
        timeout_tick_s=0,
        claim_orphans=False,
    )
    try:
        schema = service.schema_of(Design(system="supervisor_bus"))
        sent = {"id": "m1", "from_": "supervisor", "to": "researcher", "type": "request"}
        state = revive_state({"bus": [sent]}, schema)
    finally:
        service.shutdown()
    assert isinstance(state["bus"][0], Message)
    assert state["bus"] == [Message(**sent, sent_at=state["bus"][0].sent_at)]
