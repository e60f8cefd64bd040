"""The catalog of hierarchical_teams: the workers, each in its team.

A team is on when at least one of its workers is: the Design page ticks workers, and
the lead supervisor plans only for the teams that are on. The lead supervisor and each
team's own supervisor are hubs, always present. Workers with side effects (real HTTP
calls to the API) ask a human before each call by default.
"""

from __future__ import annotations

from dataclasses import dataclass

from graph.kernel.system import AgentSpec, coordination_by_size


@dataclass(frozen=True)
class TeamSpec:
    name: str
    description: str  # what the lead supervisor reads to pick the team


TEAMS: dict[str, TeamSpec] = {
    t.name: t
    for t in (
        TeamSpec(
            "request_team",
            "checks the API's health and sends site URLs to the API "
            "as data (real HTTP calls, each approved by a human first).",
        ),
        TeamSpec(
            "search_team",
            "finds reliable news sites for a topic and returns full "
            "Google News search URLs for them.",
        ),
    )
}

AGENTS: dict[str, AgentSpec] = {
    spec.name: spec
    for spec in (
        AgentSpec(
            name="health_checker",
            team="request_team",
            description="Calls the API's health endpoint (GET) and reports whether it is up.",
            tools=("http_get",),
            side_effects=True,
        ),
        AgentSpec(
            name="site_requester",
            team="request_team",
            description="Sends a list of site URLs to the API (POST /sites) and reports "
            "what it stored.",
            tools=("http_post",),
            side_effects=True,
        ),
        AgentSpec(
            name="searcher",
            team="search_team",
            description="Finds reliable news sites covering a topic (bundled list, or "
            "web search when configured).",
            tools=("find_news_sites",),
        ),
        AgentSpec(
            name="url_builder",
            team="search_team",
            description="Builds full Google News search URLs (site:<domain> + query "
            "terms) for the sites found.",
            tools=("build_news_urls",),
        ),
    )
}


def team_workers(team: str, enabled: list[str] | None = None) -> list[str]:
    """The (enabled) workers of ``team``, in catalog order."""
    return [n for n, s in AGENTS.items() if s.team == team and (enabled is None or n in enabled)]


def enabled_teams(enabled: list[str] | None) -> list[str]:
    """The teams that are on: those with at least one enabled worker."""
    on = set(AGENTS if enabled is None else enabled)
    return [t for t in TEAMS if any(w in on for w in team_workers(t))]


def format_team_list(enabled: list[str] | None) -> str:
    lines = [
        f"- {t}: {TEAMS[t].description} Workers: {', '.join(team_workers(t, enabled))}."
        for t in enabled_teams(enabled)
    ]
    return "\n".join(lines) or "- (no team is on)"


def design_warnings(enabled: list[str]) -> list[str]:
    """Why a design may not work well. Advice only: the user may run it anyway."""
    on = set(enabled)
    warnings = []
    if unknown := [a for a in enabled if a not in AGENTS]:
        warnings.append(f"Unknown agents: {', '.join(unknown)}.")
    if not on:
        warnings.append(
            "No worker enabled: no team is on, so the lead supervisor cannot delegate anything."
        )
    for team in TEAMS:
        if on and not any(w in on for w in team_workers(team)):
            warnings.append(
                f"{team} has no worker: the team is off, and subtasks only it "
                "could do cannot be planned."
            )
    if "url_builder" in on and "searcher" not in on:
        warnings.append(
            "url_builder without searcher: nobody finds the sites, so URLs can "
            "only be built for sites named in the request or a dependency."
        )
    if "searcher" in on and "url_builder" not in on:
        warnings.append(
            "searcher without url_builder: search_team returns site names, not "
            "Google News search URLs."
        )
    if "site_requester" in on and "searcher" not in on and "url_builder" not in on:
        warnings.append(
            "site_requester without search_team: it can only send site URLs "
            "written in the request itself."
        )
    if len(on) <= 2:
        warnings.append(coordination_by_size(len(on), "hierarchical_teams"))
    return warnings
