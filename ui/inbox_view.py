"""The Approvals inbox as data: pending and recently decided questions grouped by
experiment and run, filtered, in an order that never changes under the cursor.

Why a view-model: the page only draws what this returns, so grouping, filters, the
stable order, the decided lines and the bulk actions are tested without Streamlit.
The order is by when a question was asked, then run id, then interrupt id; a decided
question keeps its place (shown as a line saying who decided what, and when) instead of
letting the next card slide up under the pointer.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

# How far back a freshly opened page shows decisions (a timeout that fired just before).
RECENT_S = 600.0
NOT_IN_EXPERIMENT = "Not in an experiment"
OUTSIDE_GROUP = "runs"  # the group key of runs outside any experiment

DECIDED_WORDS = {
    "approve": "Approved",
    "edit": "Approved with your edited query",
    "reject": "Rejected",
    "skip": "Skipped",
    "retry": "Retry asked",
}
BY_DEFAULT_WORDS = {"reject": "rejected by default", "skip": "skipped by default"}
BULK_WORDS = {"approve": "Approved", "reject": "Rejected", "skip": "Skipped"}


def order_key(item: dict) -> tuple:
    """When it was asked, then run id, then interrupt id: fixed for the question's life."""
    return (item.get("asked_at") or 0.0, item.get("run_id") or "", item.get("id") or "")


def kind_of(item: dict) -> str:
    """The kind of question, as the filter lists it: an HTTP call, a gated tool's call,
    an escalation, or an approval before a step or request."""
    if item.get("call"):
        return "HTTP call"
    if item.get("tool_call"):
        return "tool call"
    return item.get("kind") or "approval"


def experiment_name(item: dict) -> str:
    place = item.get("experiment")
    return place["experiment"] if place else NOT_IN_EXPERIMENT


def duration(seconds: float) -> str:
    """ "45 s", "1 min 12 s", "1 h 02 min": precise enough for a countdown."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def countdown(item: dict, now: float | None = None) -> str:
    """How long until the design's default decides: "deadline in 1 min 12 s (then
    rejected by default)", or "no deadline"."""
    limit = item.get("timeout_s") or 0
    if not limit:
        return "no deadline"
    now = time.time() if now is None else now
    then = BY_DEFAULT_WORDS.get(item.get("timeout_action") or "reject", "the default applies")
    left = (item.get("asked_at") or now) + limit - now
    if left <= 0 and item.get("timeout_held"):  # the store could not take it: said why
        return f"deadline passed, not {then} yet: {item['timeout_held']}"
    if left <= 0:
        return f"deadline passed: {then} any moment now"
    return f"deadline in {duration(left)} (then {then})"


def decided_line(decided: dict) -> str:
    """ "Approved by you at 05:31", "Timed out at 05:28:41: rejected by default"."""
    at = datetime.fromtimestamp(decided.get("at") or time.time())
    decision = decided.get("decision") or ""
    if decided.get("by") == "timeout":
        words = BY_DEFAULT_WORDS.get(decision, f"{decision} by default")
        return f"Timed out at {at:%H:%M:%S}: {words}"
    who = decided.get("by") or "human"
    who = "you" if who == "human" else who
    line = f"{DECIDED_WORDS.get(decision, decision.capitalize())} by {who} at {at:%H:%M}"
    reason = (decided.get("reason") or "").strip()
    return f"{line}: “{reason}”" if decision in ("reject", "retry") and reason else line


OUTCOME_KINDS = {
    "approve": "approved",
    "edit": "edited",
    "reject": "rejected",
    "skip": "skipped",
    "retry": "retried",
}


def outcome_kind(decided: dict) -> str:
    """What a decided card is styled as: a rejection, a skip and a timeout each look like
    what they are, never like a success. An unknown decision looks neutral, as a skip."""
    if decided.get("by") == "timeout":
        return "timed-out"
    return OUTCOME_KINDS.get(decided.get("decision") or "", "skipped")


def card_label(item: dict) -> str:
    """Which question, in a sentence: step 2 (report_writer) of “the run's question”."""
    return f"step {item.get('step')} ({item.get('agent')}) of “{item.get('question', 'the run')}”"


def decided_since(opened_at: float, now: float | None = None) -> float:
    """From when decisions are shown: since the page was opened in this session, and
    at least the last ``RECENT_S`` seconds."""
    now = time.time() if now is None else now
    return min(opened_at, now - RECENT_S)


def decided_before(item: dict, opened_at: float) -> bool:
    """Whether ``item`` was decided before ``opened_at`` (the page opened in this
    session): it was never shown waiting there, so its card need not keep its boxes."""
    decided = item.get("decided")
    return isinstance(decided, dict) and float(decided.get("at") or 0) < opened_at


@dataclass
class Filters:
    """What the user chose to see; an empty set lets everything through."""

    systems: set[str] = field(default_factory=set)
    agents: set[str] = field(default_factory=set)
    kinds: set[str] = field(default_factory=set)
    experiments: set[str] = field(default_factory=set)

    def matches(self, item: dict) -> bool:
        return all(
            not chosen or value in chosen
            for chosen, value in (
                (self.systems, item.get("system") or ""),
                (self.agents, item.get("agent") or ""),
                (self.kinds, kind_of(item)),
                (self.experiments, experiment_name(item)),
            )
        )


def filter_options(items: list[dict]) -> dict[str, list[str]]:
    """Each filter's choices: the values the listed questions have."""
    return {
        "systems": sorted({i.get("system") or "" for i in items} - {""}),
        "agents": sorted({i.get("agent") or "" for i in items} - {""}),
        "kinds": sorted({kind_of(i) for i in items}),
        "experiments": sorted({experiment_name(i) for i in items}),
    }


@dataclass
class RunGroup:
    """One run's questions, in the order asked."""

    run_id: str
    title: str
    cards: list[dict]


@dataclass
class Group:
    """An experiment's runs (or the runs outside experiments): the unit of bulk actions."""

    key: str
    title: str
    runs: list[RunGroup]

    @property
    def cards(self) -> list[dict]:
        return [c for run in self.runs for c in run.cards]

    @property
    def pending(self) -> list[dict]:
        """The questions still waiting: what a bulk action answers."""
        return [c for c in self.cards if not c.get("decided")]


@dataclass
class Inbox:
    groups: list[Group]
    waiting: int  # pending questions shown
    decided: int  # decided lines shown
    hidden: int  # questions the filters hide


def merge(pending: list[dict], decided: list[dict]) -> list[dict]:
    """Pending and decided questions, once each; a question in both (answered between
    the two reads) counts as decided."""
    found = {item["id"]: item for item in pending}
    found.update({item["id"]: item for item in decided})
    return sorted(found.values(), key=order_key)


def run_title(item: dict) -> str:
    place = item.get("experiment")
    question = item.get("question", "")
    if not place:
        return f"“{question}” · run {item.get('run_id', '')[:8]}"
    return (
        f"Variant “{place['variant']}” · repeat {place['repeat'] + 1} of {place['repeats']} · "
        f"question {place['question_index'] + 1}: “{question}”"
    )


def build_inbox(pending: list[dict], decided: list[dict], filters: Filters | None = None) -> Inbox:
    """The inbox: groups (an experiment's, then runs outside any) ordered by their first
    question, runs inside by theirs, questions by ``order_key``; decided ones in place."""
    filters = filters or Filters()
    items = merge(pending, decided)
    shown = [i for i in items if filters.matches(i)]
    groups: dict[str, Group] = {}
    runs: dict[str, RunGroup] = {}
    for item in shown:  # already in order, so groups and runs come in order of first item
        place = item.get("experiment")
        key = group_key(item)
        if key not in groups:
            title = f"Experiment “{place['experiment']}”" if place else "Runs outside experiments"
            groups[key] = Group(key, title, [])
        if item["run_id"] not in runs:
            runs[item["run_id"]] = RunGroup(item["run_id"], run_title(item), [])
            groups[key].runs.append(runs[item["run_id"]])
        runs[item["run_id"]].cards.append(item)
    decided_count = sum(1 for i in shown if i.get("decided"))
    return Inbox(
        list(groups.values()),
        waiting=len(shown) - decided_count,
        decided=decided_count,
        hidden=len(items) - len(shown),
    )


class Decides(Protocol):
    def decide(
        self,
        run_id: str,
        interrupt_id: str,
        decision: str,
        query: str = "",
        reason: str = "",
        by: str = "human",
    ) -> None: ...


@dataclass
class CardResult:
    item: dict
    ok: bool
    text: str  # what happened to this question, in words


def decide_all(
    service: Decides, items: list[dict], decision: str, reason: str = "", by: str = "human"
) -> list[CardResult]:
    """Answer each still-waiting question of a group the same way (one reason for all
    rejections); one answered elsewhere meanwhile is left as it is and said so."""
    if decision not in BULK_WORDS:
        raise ValueError(f"No bulk action {decision!r}: approve, reject or skip.")
    reason = reason.strip()
    if decision == "reject" and not reason:
        raise ValueError("Say why you reject them: the one reason is recorded for each run.")
    results = []
    for item in items:
        if item.get("decided"):
            continue
        try:
            service.decide(item["run_id"], item["id"], decision, reason=reason, by=by)
        except ValueError:
            results.append(CardResult(item, False, "already decided elsewhere: left as it was"))
        except KeyError:
            results.append(CardResult(item, False, "its run was deleted"))
        else:
            results.append(CardResult(item, True, f"{BULK_WORDS[decision].lower()}"))
    return results


def group_key(item: dict) -> str:
    """The key of the group a question is listed in: its experiment's id, or the runs'."""
    place = item.get("experiment")
    return place["experiment_id"] if place else OUTSIDE_GROUP


def arrived_since(
    pending: list[dict], shown: list[dict], key: str, filters: Filters | None = None
) -> list[dict]:
    """The questions of group ``key`` now waiting that were not among ``shown`` (the cards
    on screen when a bulk button was pressed): a bulk action leaves them waiting."""
    seen = {item["id"] for item in shown}
    filters = filters or Filters()
    return sorted(
        (p for p in pending if p["id"] not in seen and group_key(p) == key and filters.matches(p)),
        key=order_key,
    )


def bulk_summary(
    decision: str, results: list[CardResult], arrived: list[dict] | None = None
) -> tuple[str, str]:
    """(kind, text) for the group's message: how many were answered, which not, and which
    arrived after the page showed the group (left waiting: nobody saw them)."""
    done = sum(r.ok for r in results)
    left = (
        " Left waiting, as they arrived after the page showed this group: "
        + "; ".join(card_label(item) for item in arrived)
        + "."
        if arrived
        else ""
    )
    if not results:
        return "warning", "Nothing in this group is waiting any more." + left
    text = f"{BULK_WORDS[decision]} {done} of {len(results)}" + (
        ": their runs go on." if done else "."
    )
    missed = [f"{card_label(r.item)}: {r.text}" for r in results if not r.ok]
    if missed:
        return "warning", text + " Not answered here: " + "; ".join(missed) + "." + left
    return ("warning", text + left) if left else ("success", text)
