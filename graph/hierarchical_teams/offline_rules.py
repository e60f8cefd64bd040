"""The scripted model's rules for hierarchical_teams: the lead supervisor's plan, replan and
routing, each team supervisor's choice of worker, and the workers' tool calls.

A request is cut into clauses at the verbs that start a new intent ("check ... and find
..."); each clause becomes one subtask for the team its words call for, with an
instruction written from that clause alone.
"""

from __future__ import annotations

import re

from graph.models.scripted.common import allowed_values

_TEAM_VERBS = (
    r"(?:check|verify|confirm|ensure|make sure|find|search|look|list|get|give|"
    r"build|return|send|post|submit|register|upload|provide|tell)"
)

_API_WORDS = re.compile(r"\b(api|endpoint|server|service)\b", re.I)

_SEND_WORDS = re.compile(r"\b(send|post|submit|register|upload|provide)\b", re.I)

_HEALTH_WORDS = re.compile(
    r"\b(health|healthy|up|alive|status|available|availability|"
    r"reachable|running)\b",
    re.I,
)

_SEARCH_WORDS = re.compile(r"\b(news|sites?|sources|outlets|urls?|links?|search|find|look)\b", re.I)

_REFERS_BACK = re.compile(r"\b(their|them|those|these|the sites|the urls|found)\b", re.I)

_URL = re.compile(r"https?://[^\s,\"'<>)]+")


def teams_answer(prompt: str) -> dict | None:
    """The reply to a hierarchical_teams supervisor prompt, or None for any other prompt."""
    if '"next_subtask_id"' in prompt:
        return teams_route(prompt)
    if '"next_worker"' in prompt:
        return teams_team_decision(prompt)
    if '"keep"' in prompt and '"cancel"' in prompt:
        return teams_replan_for(prompt)
    if '"subtasks"' in prompt and '"depends_on"' in prompt:
        return teams_plan_for(prompt)
    return None


def _request_clauses(text: str) -> list[str]:
    parts = re.split(
        rf"(?<=[.?!;])\s+|,\s*(?:and\s+)?(?:then\s+)?(?={_TEAM_VERBS}\b)|"
        rf"\s+(?:and\s+then|then|and)\s+(?={_TEAM_VERBS}\b)",
        text.strip(),
        flags=re.I,
    )
    return [p.strip(" .?!;,") for p in parts if p and p.strip(" .?!;,")]


def _clause_kind(clause: str) -> str:
    if _SEND_WORDS.search(clause) and _API_WORDS.search(clause):
        return "send"
    if _HEALTH_WORDS.search(clause) and _API_WORDS.search(clause):
        return "health"
    if _SEARCH_WORDS.search(clause) or not _API_WORDS.search(clause):
        return "search"
    return "health"


def _news_topic(text: str) -> str:
    found = re.search(
        r"\b(?:about|on|covering|regarding)\s+(.+?)(?:\s+and return\b|,| with "
        r"query terms\b|\.\s|\.?$)",
        text,
        re.I,
    )
    topic = (
        found.group(1)
        if found
        else re.sub(
            r"^(?:please\s+)?(?:find|search|look up|look for|list|get|give me)\s+(?:some\s+|the\s+)?"
            r"(?:reliable\s+|trusted\s+)?(?:news\s+)?(?:sites|sources|outlets)?\s*",
            "",
            text,
            flags=re.I,
        )
    )
    return topic.strip(" .?!\"'") or text.strip(" .?!")


def _teams_drafts(request: str) -> list[dict]:
    """One draft subtask per clause: {label, team, kind, instruction, depends_on}."""
    drafts: list[dict] = []
    for clause in _request_clauses(request):
        kind = _clause_kind(clause)
        label = str(len(drafts) + 1)
        if kind == "health":
            drafts.append(
                {
                    "id": label,
                    "team": "request_team",
                    "depends_on": [],
                    "instruction": "Check the API's health endpoint and report whether "
                    "the API is healthy and available.",
                }
            )
        elif kind == "send":
            urls = _URL.findall(clause)
            searches = [d["id"] for d in drafts if d["team"] == "search_team"]
            depends = (
                [searches[-1]] if searches and (_REFERS_BACK.search(clause) or not urls) else []
            )
            what = (
                f"these site URLs: {', '.join(urls)}"
                if urls
                else "the site URLs found by the subtask it depends on"
            )
            drafts.append(
                {
                    "id": label,
                    "team": "request_team",
                    "depends_on": depends,
                    "instruction": f"Send {what} to the API's /sites endpoint and report "
                    "what it stored.",
                }
            )
        else:
            topic = _news_topic(clause)
            drafts.append(
                {
                    "id": label,
                    "team": "search_team",
                    "depends_on": [],
                    "instruction": f"Find reliable news sites about {topic} and return "
                    "full Google News search URLs for each site, with "
                    f"query terms about {topic}.",
                }
            )
    return drafts


def _offered_teams(prompt: str) -> list[str]:
    return allowed_values(prompt, "team") or []


def teams_plan_for(prompt: str) -> dict:
    """The lead supervisor's plan: a subtask per clause, for the teams that are on (a
    clause whose team is off is left out rather than handed to the wrong team)."""
    asked = re.search(r'^User request: "(.*)"\s*$', prompt, re.M)
    offered = _offered_teams(prompt)
    drafts = [d for d in _teams_drafts(asked.group(1) if asked else "") if d["team"] in offered]
    kept = {d["id"] for d in drafts}
    for d in drafts:
        d["depends_on"] = [x for x in d["depends_on"] if x in kept]
        d["status"] = "pending"
    return {"subtasks": drafts}


_SUBTASK_LINE = re.compile(
    r"^- (s\d+) \[(\w+)\] status=(\w+)(?: depends_on=[\w,]+)?: "
    r"(.*?)(?: \| result: .*?)?(?: \| reason: .*)?$",
    re.M,
)


def teams_replan_for(prompt: str) -> dict:
    """Keep the open subtasks the edited request still asks for word for word, cancel the
    other open ones, add what no done or kept subtask covers."""
    asked = re.search(r'^Edited request \(revision \d+\): "(.*)"\s*$', prompt, re.M)
    offered = _offered_teams(prompt)
    fresh = [d for d in _teams_drafts(asked.group(1) if asked else "") if d["team"] in offered]
    existing = [
        (sid, team, status, text) for sid, team, status, text in _SUBTASK_LINE.findall(prompt)
    ]
    matched: dict[str, str] = {}  # fresh label -> existing id covering it
    keep, cancel = [], []
    for sid, team, status, text in existing:
        twin = next(
            (
                d
                for d in fresh
                if (d["team"], d["instruction"]) == (team, text) and d["id"] not in matched
            ),
            None,
        )
        if status in ("pending", "delegated"):
            if twin:
                keep.append(sid)
                matched[twin["id"]] = sid
            else:
                cancel.append({"id": sid, "reason": "the edited request no longer asks for it"})
        elif status == "done" and twin:
            matched[twin["id"]] = sid
    add: list[dict] = []
    positions: dict[str, int] = {}
    for d in fresh:
        if d["id"] in matched:
            continue
        positions[d["id"]] = len(add) + 1
        add.append(d)
    for d in add:
        d["depends_on"] = [
            matched.get(x) or f"new:{positions[x]}"
            for x in d["depends_on"]
            if x in matched or x in positions
        ]
        d.pop("id")
    return {"keep": keep, "cancel": cancel, "add": add}


def teams_route(prompt: str) -> dict:
    ids = re.findall(r"^- id=(\S+) ", prompt, re.M)
    if not ids:
        return {"next_subtask_id": "FINISH", "reason": "No subtask is listed."}
    return {"next_subtask_id": ids[0], "reason": f"{ids[0]} comes first in the plan."}


def teams_team_decision(prompt: str) -> dict:
    supervised = re.search(r"^You supervise (\w+)", prompt, re.M)
    team = supervised.group(1) if supervised else ""
    offered = [w for w in allowed_values(prompt, "next_worker") or [] if w != "FINISH"]
    found = re.search(r"^Your subtask, the only work you have: (.*)$", prompt, re.M)
    instruction = found.group(1) if found else ""
    reported = dict(re.findall(r"^- (\w+) \((ok|failed)\):", prompt, re.M))
    if "failed" in reported.values():
        return {
            "next_worker": "FINISH",
            "task": "",
            "reason": "A worker failed; the team reports what it has.",
        }
    wanted: list[tuple[str, str]] = []
    if team == "request_team":
        if _HEALTH_WORDS.search(instruction) and not _SEND_WORDS.search(instruction):
            wanted.append(
                (
                    "health_checker",
                    "Call the API's health endpoint once and report whether the API is healthy.",
                )
            )
        if _SEND_WORDS.search(instruction):
            urls = _URL.findall(instruction)
            wanted.append(
                (
                    "site_requester",
                    f"Send these site URLs to the API: {', '.join(urls)}"
                    if urls
                    else "Send the site URLs in the results handed to your team to the "
                    "API's /sites endpoint and report what it stored.",
                )
            )
        if not wanted:
            wanted.append(
                (
                    "health_checker",
                    "Call the API's health endpoint once and report whether the API is healthy.",
                )
            )
    else:
        topic = _news_topic(instruction)
        wanted = [
            ("searcher", f"Find reliable news sites about {topic}."),
            (
                "url_builder",
                f"Build Google News search URLs for the sites found, with the query terms: {topic}",
            ),
        ]
    for worker, task in wanted:
        if worker in offered and worker not in reported:
            return {
                "next_worker": worker,
                "task": task,
                "reason": f"{worker} has not reported yet; its part comes next.",
            }
    return {
        "next_worker": "FINISH",
        "task": "",
        "reason": "Every worker this subtask needs has reported.",
    }


def _api_base_in(system: str) -> str:
    found = re.search(r"API base URL: (\S+)", system)
    return found.group(1).rstrip("/") if found else ""


def _http_post_args(request: str, system: str) -> dict | str:
    base = _api_base_in(system)
    urls = [u for u in dict.fromkeys(_URL.findall(request)) if not u.startswith(base or "\0")]
    if not urls:
        return "No usable results: no site URLs were given to send."
    return {"url": f"{base}/sites", "body": {"sites": urls}}


def _build_urls_args(request: str, system: str) -> dict | str:
    sites = re.findall(r"^\s*-\s+([a-z0-9.-]+\.[a-z]{2,})\s+\(", request, re.M)
    query = re.search(r"query terms: (.+?)\.?\s*$", request, re.M)
    if not sites:
        return "No usable results: no sites were given to build URLs for."
    return {"sites": list(dict.fromkeys(sites)), "query": query.group(1) if query else ""}


def answer(prompt: str) -> dict | None:
    return teams_answer(prompt)


TOOL_RULES = {
    "http_get": lambda request, system: {"url": f"{_api_base_in(system)}/health"},
    "http_post": _http_post_args,
    "find_news_sites": lambda request, system: {
        "topic": _news_topic(request.splitlines()[0] if request else "")
    },
    "build_news_urls": _build_urls_args,
}
