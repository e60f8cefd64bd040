"""Word of approvals outside the app: a JSON POST to STEPWISE_WEBHOOK_URL for each new
question a run waits on, and for each one a timeout answered.

Why a thread of its own: an operator who is not watching the Approvals page learns that
a run waits only from here, but a chat server that is slow or down must never hold a
run. The run service only puts a note in a bounded queue (``RunService.on_approval``);
this thread reads the store, writes the message and sends it, retrying a failed POST a
bounded number of times, 1 s, 2 s, 4 s... apart, then giving up with a warning.

The URL is a secret (Slack's and most chat servers' carry the token in the path or the
query): a log line names its host only (``shown_url``), and ``Settings`` remembers its
token so that any text quoting it is redacted.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import urllib.error
import urllib.request
from collections import OrderedDict
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

from graph.kernel.design import Design
from graph.settings import Settings

if TYPE_CHECKING:
    from graph.service.run_service import RunService

log = logging.getLogger(__name__)

POST_TIMEOUT_S = 10.0
QUEUE_SIZE = 1000  # notes waiting to be sent; past it a note is dropped, saying so
REMEMBERED = 10_000  # question ids already announced (a run that waits again on one)


def shown_url(url: str) -> str:
    """The webhook's address as a log may show it: scheme and host, never the token."""
    parts = urlsplit(url)
    hidden = "/[redacted]" if parts.path.strip("/") or parts.query else ""
    return f"{parts.scheme}://{parts.hostname}{f':{parts.port}' if parts.port else ''}{hidden}"


def _when(seconds: float | None) -> str | None:
    if not seconds:
        return None
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="seconds")


def card_link(app_url: str, item: dict) -> str:
    """Where the question's card is: the Approvals page, opened on it."""
    return f"{app_url.rstrip('/')}/approvals?{urlencode({'card': item['id']})}"


def message(event: str, item: dict, record: Any, app_url: str) -> dict:
    """Stepwise's own JSON for one question (``event``: "approval.waiting" or
    "approval.timed_out"): which run and system, which agent, what it asks, until when,
    and the link to its card."""
    design = record.design or {}
    limit = float(design.get("approval_timeout_s", Design().approval_timeout_s) or 0)
    asked_at = item.get("asked_at")
    words = {
        "approval.waiting": "waits for a decision",
        "approval.timed_out": "was decided by its timeout",
    }[event]
    step = f"step {item.get('step')} ({item.get('agent')})"
    body = {
        "event": event,
        "run_id": record.id,
        "system": record.system,
        "question": record.question,
        "interrupt_id": item["id"],
        "kind": item.get("kind") or "approval",
        "step": item.get("step"),
        "agent": item.get("agent"),
        "asks": item.get("query") or "",
        "why": item.get("reason") or "",
        "asked_at": _when(asked_at),
        "deadline": _when(asked_at + limit) if asked_at and limit else None,
        "timeout_action": design.get("timeout_action") or "reject",
        "link": card_link(app_url, item),
        "text": f"Stepwise: {step} of “{record.question}” {words}.",
    }
    if event == "approval.timed_out":
        body["decided"] = {"decision": body["timeout_action"], "by": "timeout"}
    return body


def slack(body: dict) -> dict:
    """The same news as Slack's incoming webhooks take it: one text, the link in it."""
    deadline = f" Deadline {body['deadline']}." if body.get("deadline") else ""
    asks = f"\n> {body['asks'][:300]}" if body.get("asks") else ""
    return {"text": f"{body['text']}{deadline} <{body['link']}|Open the card>{asks}"}


class Webhooks:
    """The sender of one run service: its queue, its thread, the ids it announced."""

    def __init__(self, service: RunService, settings: Settings | None = None):
        self.settings = settings or service.settings
        assert self.settings.webhook_url is not None, "no STEPWISE_WEBHOOK_URL"
        self.url = self.settings.webhook_url.get_secret_value()
        self.store = service.store
        self._notes: queue.Queue = queue.Queue(maxsize=QUEUE_SIZE)
        self._announced: OrderedDict[str, None] = OrderedDict()
        self._stop = threading.Event()
        self.backoff_s = 1.0
        self._thread = threading.Thread(
            target=self._send_all, name="stepwise-webhooks", daemon=True
        )
        self._thread.start()

    @classmethod
    def attach(cls, service: RunService, settings: Settings | None = None) -> Webhooks:
        """Tell the webhook of ``service``'s approvals, and stop with it."""
        hooks = cls(service, settings)
        service.on_approval(hooks.note)
        service.on_shutdown(hooks.close)
        return hooks

    def note(self, kind: str, run_id: str, item: dict | None = None) -> None:
        """Called on a run's worker: queue it and return (a full queue drops, saying so)."""
        try:
            self._notes.put_nowait((kind, run_id, item))
        except queue.Full:
            log.warning("run %s: webhook queue full, %s not sent", run_id, kind)

    def drain(self, timeout: float = 30.0) -> bool:
        """Wait until every note queued so far is sent or given up; whether it was."""
        done = threading.Event()

        def join() -> None:
            self._notes.join()
            done.set()

        threading.Thread(target=join, daemon=True).start()
        return done.wait(timeout)

    def close(self, wait: bool = True, cancel: bool = True) -> None:
        self._stop.set()
        self.note("stop", "")  # wakes the thread
        if wait:
            self._thread.join(timeout=POST_TIMEOUT_S + 1)

    # ------------------------------------------------------------- the thread

    def _send_all(self) -> None:
        while True:
            kind, run_id, item = self._notes.get()
            try:
                if kind == "stop" and self._stop.is_set():
                    return
                for body in self._bodies(kind, run_id, item):
                    self._send(body)
            except Exception:
                log.exception("run %s: webhook for %s not sent", run_id, kind)
            finally:
                self._notes.task_done()

    def _bodies(self, kind: str, run_id: str, item: dict | None) -> list[dict]:
        """What to send for a note: a message per question not announced yet ("waiting"),
        or the one a timeout answered."""
        record = self.store.run(run_id)
        if record is None:
            return []  # deleted meanwhile
        app_url = self.settings.app_url
        if kind == "timeout" and item is not None:
            return [message("approval.timed_out", item, record, app_url)]
        if kind != "waiting":
            return []
        bodies = []
        for asked in self.store.pending_interrupts(run_id):
            if asked["id"] in self._announced:
                continue  # a run that waits again on a question it asked before
            self._announced[asked["id"]] = None
            if len(self._announced) > REMEMBERED:
                self._announced.popitem(last=False)
            bodies.append(message("approval.waiting", asked, record, app_url))
        return bodies

    def _send(self, body: dict) -> None:
        payload = slack(body) if self.settings.webhook_format == "slack" else body
        tries = self.settings.webhook_retries + 1
        for attempt in range(1, tries + 1):
            request = urllib.request.Request(
                self.url,
                data=json.dumps(payload).encode(),
                headers={"Content-Type": "application/json", "User-Agent": "Stepwise"},
                method="POST",
            )
            try:  # urllib, not httpx: httpx logs each request's whole URL, token and all
                with urllib.request.urlopen(request, timeout=POST_TIMEOUT_S):
                    return
            except (OSError, ValueError) as exc:  # URLError and HTTPError are OSErrors
                problem = self.settings.redact(str(exc).replace(self.url, shown_url(self.url)))
                log.warning(
                    "run %s: webhook to %s failed (attempt %d of %d): %s",
                    body["run_id"],
                    shown_url(self.url),
                    attempt,
                    tries,
                    problem,
                )
            if attempt < tries and self._stop.wait(self.backoff_s * 2 ** (attempt - 1)):
                return  # shutting down: no more tries
        log.warning(
            "run %s: webhook for %s given up after %d attempts",
            body["run_id"],
            body["interrupt_id"],
            tries,
        )
