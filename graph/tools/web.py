"""Real web search for ``web_researcher`` when ``TAVILY_API_KEY`` is set.

Wrapped so its output has the same shape as the knowledge-base search: blocks headed
``[web:<id>] <title>`` and an artifact of sources, so citations work the same way.
"""

from __future__ import annotations

import hashlib
import logging

from langchain_core.tools import StructuredTool

from graph.tools.knowledge import NO_RESULTS

log = logging.getLogger(__name__)


def format_results(query: str, results: list[dict]) -> tuple[str, list[dict]]:
    """Tavily results (url, title, content) as tool content plus citable sources."""
    if not results:
        return f"{NO_RESULTS} {query}", []
    blocks, sources = [], []
    for r in results:
        source_id = "web:" + hashlib.sha1(r["url"].encode()).hexdigest()[:8]
        blocks.append(
            f"[{source_id}] {r.get('title') or r['url']}\nURL: {r['url']}\n"
            f"{(r.get('content') or '').strip()[:600]}"
        )
        sources.append(
            {
                "id": source_id,
                "title": r.get("title") or r["url"],
                "url": r["url"],
                "source": "web search",
            }
        )
    return "\n\n".join(blocks), sources


def web_search_tool(api_key: str, max_results: int = 4) -> StructuredTool:
    from langchain_tavily import TavilySearch

    tavily = TavilySearch(max_results=max_results, tavily_api_key=api_key)

    def web_search(query: str) -> tuple[str, list[dict]]:
        try:
            raw = tavily.invoke({"query": query})
        except Exception as exc:  # the network or the service: say so, let the executor replan
            log.warning("web search failed: %s", exc)
            return f"ERROR: web search failed: {exc}", []
        return format_results(query, raw.get("results", []) if isinstance(raw, dict) else [])

    return StructuredTool.from_function(
        web_search,
        name="web_search",
        response_format="content_and_artifact",
        description="Search the web; returns passages with source ids to cite.",
    )
