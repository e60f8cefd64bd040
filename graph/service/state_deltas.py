"""A run's "state" events stored as what changed since the one before.

Every state event holds the run's whole snapshot (its rows, plan, sources, results...),
which grows with each step: storing each whole made a run's event log grow with the
square of its length. The store keeps the first state event of a run (and the first
after a restart) whole and each later one as a patch on the previous; readers get whole
snapshots back, the same data as before (``StateLog.resolve``).

A patch is a dict with one of these shapes, so it can never be mistaken for data:
``{"$value": v}`` (replaced), ``{"$keys": {k: patch}, "$drop": [k]}`` (a dict's
changed and removed keys), ``{"$items": {i: patch}, "$len": n}`` (a list's changed or
added items, and its new length). A stored patch event is ``{"$delta": {"base": seq,
"patch": patch}}``.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any, Callable

from graph.redaction import clean_json, redact_data

DELTA = "$delta"
_SAME = object()
_KEPT = 512  # whole snapshots kept in memory: the bases of the next patches and reads


def diff(old: Any, new: Any) -> Any:
    """The patch that turns ``old`` into ``new`` (``_SAME`` when they are equal)."""
    if type(old) is type(new) and old == new:
        return _SAME
    if isinstance(old, dict) and isinstance(new, dict):
        keys = {}
        for k, v in new.items():
            if k not in old:
                keys[k] = {"$value": v}
            elif (p := diff(old[k], v)) is not _SAME:
                keys[k] = p
        patch: dict = {"$keys": keys}
        if dropped := [k for k in old if k not in new]:
            patch["$drop"] = dropped
        return patch
    if isinstance(old, list) and isinstance(new, list):
        items = {}
        for i, v in enumerate(new):
            if i >= len(old):
                items[str(i)] = {"$value": v}
            elif (p := diff(old[i], v)) is not _SAME:
                items[str(i)] = p
        return {"$items": items, "$len": len(new)}
    return {"$value": new}


def apply(old: Any, patch: dict) -> Any:
    """``old`` with ``patch`` applied; unchanged parts are shared, not copied."""
    if "$value" in patch:
        return patch["$value"]
    if "$keys" in patch:
        new = dict(old or {})
        for k in patch.get("$drop") or ():
            new.pop(k, None)
        for k, p in patch["$keys"].items():
            new[k] = apply(new.get(k), p)
        return new
    size = int(patch["$len"])
    items = list((old or [])[:size])
    items.extend([None] * (size - len(items)))
    for i, p in patch["$items"].items():
        items[int(i)] = apply(items[int(i)], p)
    return items


def is_delta(data: Any) -> bool:
    return isinstance(data, dict) and len(data) == 1 and isinstance(data.get(DELTA), dict)


class StateLog:
    """The whole snapshots of recently written or read state events, by (run, seq): what
    a new state event is stored as a patch on, and what a read patch is applied to."""

    def __init__(self) -> None:
        self._whole: OrderedDict[tuple[str, int], Any] = OrderedDict()
        # run -> (seq, snapshot) of the last state event written here: the next one's base,
        # kept apart from what readers are handed.
        self._written: OrderedDict[str, tuple[int, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def _keep(self, run_id: str, seq: int, data: Any) -> None:
        with self._lock:
            self._whole[(run_id, seq)] = data
            self._whole.move_to_end((run_id, seq))
            while len(self._whole) > _KEPT:
                self._whole.popitem(last=False)

    def _get(self, run_id: str, seq: int) -> Any:
        with self._lock:
            return self._whole.get((run_id, seq), _SAME)

    def to_store(self, run_id: str, data: dict) -> tuple[Any, dict, str | None]:
        """What to store for a new state event, the whole snapshot it stands for, both
        with secrets taken out (``redact_data``), and the JSON text of what to store when
        it was made here (a patch's: encoded once, for the secret search and the log). A
        patch on the run's last state event written by this process is redacted alone:
        the snapshot is not walked again for each step. The run's first state event (or
        the first after a restart) is stored whole."""
        with self._lock:
            base_seq, base = self._written.get(run_id, (None, _SAME))
        if base is _SAME:
            whole = redact_data(data)
            return whole, whole, None
        # Compared with the redacted base: a text that held a secret differs, so it is
        # in the patch and redacted there.
        patch = diff(base, data)
        text: str | None
        if patch is _SAME:
            patch, text = {"$keys": {}}, '{"$keys": {}}'
        else:  # a copy either way (read back from its text when clean): the base of the
            # next patch shares nothing with the run's live values
            text = clean_json(patch)
            patch = json.loads(text) if text is not None else redact_data(patch)
        logged = {DELTA: {"base": base_seq, "patch": patch}}
        if text is not None:  # as ``json.dumps(logged, ensure_ascii=False)`` writes it
            text = f'{{"{DELTA}": {{"base": {base_seq}, "patch": {text}}}}}'
        return logged, apply(base, patch), text

    def stored(self, run_id: str, seq: int, data: dict) -> None:
        """The state event ``seq`` (whole: ``data``) is committed: the base of the next."""
        self._keep(run_id, seq, data)
        with self._lock:
            self._written[run_id] = (seq, data)
            self._written.move_to_end(run_id)
            while len(self._written) > _KEPT:  # a run not written for long starts whole again
                self._written.popitem(last=False)

    def forget(self, run_id: str) -> None:
        """The run's events were deleted."""
        with self._lock:
            self._written.pop(run_id, None)
            for key in [k for k in self._whole if k[0] == run_id]:
                del self._whole[key]

    def resolve(
        self,
        run_id: str,
        events: list[dict],
        earlier: Callable[[str, int], list[tuple[int, Any]]],
    ) -> list[dict]:
        """``events`` (in order) with each patched state event made whole again.
        ``earlier(run_id, seq)`` reads the run's state events up to ``seq``, newest first
        (only on a miss: a base neither in these events nor kept in memory)."""
        for event in events:
            if event["kind"] != "state":
                continue
            data = event["data"]
            if is_delta(data):
                base_seq = int(data[DELTA]["base"])
                base = self._get(run_id, base_seq)
                if base is _SAME:
                    base = self._rebuild(run_id, base_seq, earlier)
                data = event["data"] = apply(base, data[DELTA]["patch"])
            self._keep(run_id, event["seq"], data)
        return events

    def _rebuild(
        self, run_id: str, seq: int, earlier: Callable[[str, int], list[tuple[int, Any]]]
    ) -> Any:
        chain = []
        for _seq, data in earlier(run_id, seq):
            if not is_delta(data):
                whole = data
                break
            chain.append(data)
            if (kept := self._get(run_id, int(data[DELTA]["base"]))) is not _SAME:
                whole = kept
                break
        else:
            raise ValueError(
                f"Run {run_id}: a state event builds on event {seq}, which the store does "
                "not hold: the file was changed outside Stepwise."
            )
        for data in reversed(chain):
            whole = apply(whole, data[DELTA]["patch"])
        self._keep(run_id, seq, whole)
        return whole
