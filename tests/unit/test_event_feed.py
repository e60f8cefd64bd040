"""The Run page's event feed (issue #18 point 3): each refresh reads only the events
logged after the last one seen, and what is computed from them is kept until a new
event arrives; a run whose log shrank is read afresh; memory is bounded."""

from __future__ import annotations

import time

from graph.kernel.design import Design
from graph.service.store import Store
from ui.event_feed import EventFeed


class CountingStore(Store):
    """The real SQLite store, noting which events each read asked for."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.reads: list[int] = []

    def events(self, run_id, after_seq=0, kinds=None):
        self.reads.append(after_seq)
        return super().events(run_id, after_seq, kinds)


def _log(store: Store, run_id: str, n: int) -> None:
    for _ in range(n):
        store.append_event(
            run_id,
            {
                "seq": store.latest_seq(run_id) + 1,
                "ts": time.time(),
                "kind": "custom",
                "node": "",
                "step": 1,
                "data": {"note": "x"},
            },
        )


def _run(store: Store) -> str:
    run_id = f"run-{time.perf_counter_ns()}"
    store.create_run(run_id, "A question", Design(), "offline scripted model")
    return run_id


def test_each_refresh_reads_only_the_events_after_the_last_seen(tmp_path):
    store = CountingStore(tmp_path / "stepwise.sqlite")
    run_id = _run(store)
    _log(store, run_id, 5)
    feed = EventFeed()
    assert [e["seq"] for e in feed.events(store, run_id)] == [1, 2, 3, 4, 5]
    _log(store, run_id, 2)
    assert [e["seq"] for e in feed.events(store, run_id)] == [1, 2, 3, 4, 5, 6, 7]
    feed.events(store, run_id)  # nothing new: no read at all
    assert store.reads == [0, 5]
    assert [e["kind"] for e in feed.events(store, run_id, kinds=("state",))] == []


def test_a_builder_is_given_each_event_once_and_its_result_kept_until_a_new_one(tmp_path):
    store = Store(tmp_path / "stepwise.sqlite")
    run_id = _run(store)
    _log(store, run_id, 3)
    feed = EventFeed()
    given: list[list[int]] = []
    made: list[int] = []

    class Seqs:
        def __init__(self):
            self.seqs: list[int] = []

        def add(self, events):
            given.append([e["seq"] for e in events])
            self.seqs += [e["seq"] for e in events]

    def result(builder: Seqs) -> list[int]:
        made.append(len(builder.seqs))
        return list(builder.seqs)

    assert feed.built(store, run_id, "seqs", Seqs, result) == [1, 2, 3]
    assert feed.built(store, run_id, "seqs", Seqs, result) == [1, 2, 3]
    _log(store, run_id, 2)
    assert feed.built(store, run_id, "seqs", Seqs, result) == [1, 2, 3, 4, 5]
    assert given == [[1, 2, 3], [4, 5]]  # the new events only, each once
    assert made == [3, 5]  # computed once per new state of the log, not per refresh
    store.delete_run(run_id)  # the log shrank: a new builder reads it afresh
    store.create_run(run_id, "Imported again", Design(), "offline scripted model")
    _log(store, run_id, 1)
    assert feed.built(store, run_id, "seqs", Seqs, result) == [1]


def test_a_run_whose_log_shrank_is_read_afresh(tmp_path):
    store = Store(tmp_path / "stepwise.sqlite")
    run_id = _run(store)
    _log(store, run_id, 4)
    feed = EventFeed()
    assert len(feed.events(store, run_id)) == 4
    store.delete_run(run_id)
    run_id_again = run_id
    store.create_run(run_id_again, "Imported again", Design(), "offline scripted model")
    _log(store, run_id_again, 2)
    assert [e["seq"] for e in feed.events(store, run_id_again)] == [1, 2]


def test_the_feed_keeps_a_bounded_number_of_events_dropping_the_least_recent_run(tmp_path):
    store = CountingStore(tmp_path / "stepwise.sqlite")
    feed = EventFeed(max_events=10)
    first, second = _run(store), _run(store)
    _log(store, first, 6)
    _log(store, second, 6)
    feed.events(store, first)
    feed.events(store, second)  # 12 > 10: the first run's copy is dropped
    store.reads.clear()
    assert len(feed.events(store, first)) == 6  # read again, whole
    assert store.reads == [0]
