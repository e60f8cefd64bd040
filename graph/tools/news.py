"""search_team's tools: reliable news sites for a topic, and Google News search URLs.

Offline, the sites come from a bundled list (``data/news_sites.json``: domain, name,
topics), ranked by how many of the topic's words their topics match; with
``TAVILY_API_KEY`` set, from a real web search (the domains of its results). The URLs
are built with ``urllib.parse`` so the query string survives whatever the topic holds
(spaces, ``&``, ``#``, quotes, non-ASCII): ``parse_qs`` of the URL gives it back intact.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from pathlib import Path
from typing import Annotated
from urllib.parse import quote_plus, urlsplit

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import Field

log = logging.getLogger(__name__)

DEFAULT_SITES = Path(__file__).resolve().parents[2] / "data" / "news_sites.json"
NEWS_SEARCH = "https://news.google.com/search"
GENERAL = ("reuters.com", "apnews.com", "bbc.com")  # when no topic word matches
_WORD = re.compile(r"[^\W_]+")
# Words of a topic that say nothing about which outlet covers it.
_NOISE = frozenset(
    """a about affect affecting an and any are as at be by current for from
    how in into is it latest moves moving news of on or reliable site sites source sources that
    the their this to what which who why with""".split()
)
# A topic word and the catalog topic it means.
_ALIASES = {
    "stocks": "stock",
    "market": "markets",
    "shares": "stock",
    "equities": "stock",
    "economic": "economy",
    "economics": "economy",
    "financial": "finance",
    "tech": "technology",
    "chips": "semiconductors",
    "chip": "semiconductors",
    "semiconductor": "semiconductors",
    "medical": "health",
    "medicine": "health",
    "interest": "rates",
    "inflation": "economy",
    "tariffs": "economy",
    "tariff": "economy",
    "trade": "economy",
    "election": "politics",
    "elections": "politics",
    "climate": "climate",
    "software": "software",
}


@functools.lru_cache(maxsize=4)
def load_sites(path: Path = DEFAULT_SITES) -> tuple[dict, ...]:
    return tuple(json.loads(Path(path).read_text(encoding="utf-8")))


def topic_words(topic: str) -> list[str]:
    words = []
    for word in _WORD.findall(topic.lower()):
        word = _ALIASES.get(word, word)
        if word not in _NOISE and word not in words:
            words.append(word)
    return words


def find_sites(topic: str, limit: int = 4, sites: tuple[dict, ...] | None = None) -> list[dict]:
    """The bundled sites whose topics best match ``topic``; general outlets if none does."""
    sites = sites or load_sites()
    words = set(topic_words(topic))
    scored = [(len(words & set(s["topics"])), -i, s) for i, s in enumerate(sites)]
    best = [s for score, _, s in sorted(scored, reverse=True) if score > 0][:limit]
    return best or [s for s in sites if s["domain"] in GENERAL][:limit]


def domain_of(site: str) -> str:
    """``reuters.com`` from ``https://www.reuters.com/markets``, or ``reuters.com`` itself."""
    site = site.strip()
    host = urlsplit(site if "://" in site else f"//{site}").hostname or ""
    return host.removeprefix("www.")


def news_search_url(domain: str, query: str) -> str:
    """``https://news.google.com/search?q=site:<domain>+<query>``, the query encoded so it
    reads back exactly (``:`` kept as is, as Google News writes it)."""
    q = f"site:{domain_of(domain)} {' '.join(query.split())}".strip()
    return f"{NEWS_SEARCH}?q={quote_plus(q, safe=':')}"


def find_news_sites_tool(tavily_api_key: str | None = None) -> BaseTool:
    def find_news_sites(
        topic: Annotated[
            str, Field(description="the topic in a few words, for example: interest rates")
        ],
    ) -> tuple[str, list[dict]]:
        found: list[dict] = []
        where = "the bundled list of reliable news sites"
        if tavily_api_key:
            found, where = _web_sites(tavily_api_key, topic), "a web search"
        if not found:
            found = [{"domain": s["domain"], "name": s["name"]} for s in find_sites(topic)]
        lines = [f"- {s['domain']} ({s['name']})" for s in found]
        return (f'Reliable news sites for "{topic}" (from {where}):\n' + "\n".join(lines), found)

    return StructuredTool.from_function(
        find_news_sites,
        name="find_news_sites",
        response_format="content_and_artifact",
        description="Find reliable news sites that cover a topic. Input: the topic in a few "
        "words. Returns site domains with their names.",
    )


def _web_sites(api_key: str, topic: str) -> list[dict]:
    from langchain_tavily import TavilySearch

    try:
        raw = TavilySearch(max_results=6, tavily_api_key=api_key).invoke(
            {"query": f"reliable news sites covering {topic}"}
        )
    except Exception as exc:  # the network or the service: fall back to the bundled list
        log.warning("news sites search failed, using the bundled list: %s", exc)
        return []
    seen: dict[str, dict] = {}
    for r in raw.get("results", []) if isinstance(raw, dict) else []:
        domain = domain_of(r.get("url", ""))
        if domain and domain not in seen:
            seen[domain] = {"domain": domain, "name": r.get("title") or domain}
    return list(seen.values())[:4]


def build_news_urls_tool() -> BaseTool:
    def build_news_urls(
        sites: Annotated[
            list[str], Field(description='site domains, for example: ["reuters.com", "ft.com"]')
        ],
        query: Annotated[str, Field(description="query terms, for example: interest rates")],
    ) -> tuple[str, list[str]]:
        domains = [d for d in dict.fromkeys(domain_of(s) for s in sites) if d]
        if not domains:
            return "ERROR: no site domains were given, so no URL can be built.", []
        urls = [news_search_url(d, query) for d in domains]
        return "Google News search URLs:\n" + "\n".join(f"- {u}" for u in urls), urls

    return StructuredTool.from_function(
        build_news_urls,
        name="build_news_urls",
        response_format="content_and_artifact",
        description="Build full Google News search URLs restricted to each site "
        "(site:<domain> plus the query terms). Input: the site domains and the query terms.",
    )
