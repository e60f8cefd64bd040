"""A run's events, read once: each refresh of a page reads only the events logged after
the last one this process has seen, and whatever is computed from them is kept until a
new event arrives; what can be (the trace) is built up from the new events alone.

The Run page redraws twice a second while a run is live; reading and decoding all of a
long run's events each time made the page's cost grow with the run (10,000 messages:
0.7 s a refresh). Events are append-only with increasing ``seq`` (``Store.append_event``),
so the feed only ever adds at the end; a run whose log shrank (deleted, imported again)
is read afresh. Process-wide and bounded by a number of events, so many sessions
watching one run share one copy. No Streamlit here.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, TypeVar

from graph.service.store import Store

MAX_EVENTS = 60_000  # kept across runs; the least recently read run is dropped first


class Builder(Protocol):
    """What ``EventFeed.built`` keeps: takes a run's events a few at a time, in order."""

    def add(self, events: list[dict]) -> Any: ...


B = TypeVar("B", bound=Builder)
T = TypeVar("T")


_NOT_MADE = object()


@dataclass
class _Built:
    builder: Any
    fed: int = 0  # how many of the feed's events it has been given
    value: Any = _NOT_MADE  # its result once all of them were given
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class _Feed:
    events: list[dict] = field(default_factory=list)
    last_seq: int = 0
    built: dict[str, _Built] = field(default_factory=dict)


class EventFeed:
    """The events of recently read runs, kept decoded, topped up from the store."""

    def __init__(self, max_events: int = MAX_EVENTS):
        self.max_events = max_events
        self._feeds: OrderedDict[tuple[int, str], _Feed] = OrderedDict()
        self._lock = threading.Lock()

    def events(self, store: Store, run_id: str, kinds: tuple[str, ...] | None = None) -> list[dict]:
        """All of the run's events in order (of ``kinds``, when given), reading from the
        store only those after the last seen."""
        feed = self._refresh(store, run_id)
        with self._lock:
            return [e for e in feed.events if kinds is None or e["kind"] in kinds]

    def built(
        self,
        store: Store,
        run_id: str,
        name: str,
        start: Callable[[], B],
        result: Callable[[B], T],
    ) -> T:
        """``result(builder)`` of a builder made once by ``start()`` and given each of the
        run's events once, as they arrive (``builder.add``); computed again only when the
        run has new events. Sessions watching one run share the builder."""
        feed = self._refresh(store, run_id)
        with self._lock:
            built = feed.built.get(name)
            if built is None:
                built = feed.built[name] = _Built(start())
        with built.lock:
            with self._lock:
                new = feed.events[built.fed :]
            if new or built.value is _NOT_MADE:
                built.builder.add(new)
                built.fed += len(new)
                built.value = result(built.builder)
            return built.value

    def _refresh(self, store: Store, run_id: str) -> _Feed:
        key = (id(store), run_id)
        latest = store.latest_seq(run_id)
        with self._lock:
            feed = self._feeds.get(key)
            if feed is None or latest < feed.last_seq:  # new to us, or its log shrank
                feed = self._feeds[key] = _Feed()
            self._feeds.move_to_end(key)
            if latest > feed.last_seq:
                new = store.events(run_id, after_seq=feed.last_seq)
                if new:
                    feed.events.extend(new)
                    feed.last_seq = new[-1]["seq"]
            self._trim(keep=key)
            return feed

    def _trim(self, keep: tuple[int, str]) -> None:
        total = sum(len(f.events) for f in self._feeds.values())
        for key in list(self._feeds):
            if total <= self.max_events:
                break
            if key != keep:
                total -= len(self._feeds.pop(key).events)


FEED = EventFeed()
