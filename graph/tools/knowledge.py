"""Offline knowledge base for the ``web_researcher`` agent.

Markdown documents with a tiny front matter are indexed into an in-memory SQLite
FTS5 table, so research works without network access or API keys and gives
reproducible results in tests. Queries come from a model, so they are rebuilt
from plain word tokens and can never cause an FTS syntax error.
"""

from __future__ import annotations

import functools
import re
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import Field

DEFAULT_FOLDER = Path(__file__).resolve().parents[2] / "data" / "knowledge"
NO_RESULTS = "NO RESULTS:"
# Title matches say far more about relevance than a passing mention in the body.
_TITLE_WEIGHT, _BODY_WEIGHT = 10.0, 1.0
_MAX_TOKENS = 32  # bounds the cost of a pathological query
_WORD = re.compile(r"[^\W_]+")  # letters/digits only: "_" is a separator for FTS5 too
_STOP_WORDS = frozenset(
    """a about above after again all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during
    each few for from further had has have having he her here hers him his how i if
    in into is it its itself just me more most my near no nor not now of off on once
    only or other our out over own s same she should so some such t than that the
    their them then there these they this those through to too under until up very
    was we were what when where which while who whom why will with would you your
    tell show explain give find happen happened cause caused moved moves drove""".split()
)


@dataclass(frozen=True)
class Document:
    """One knowledge document; ``text`` is the Markdown body without front matter."""

    id: str
    title: str
    source: str
    url: str
    text: str


@dataclass(frozen=True)
class SearchHit:
    """One ranked search result; a higher ``score`` means more relevant."""

    id: str
    title: str
    url: str
    source: str
    snippet: str
    score: float


def _parse(path: Path) -> Document:
    """Split ``---`` front matter (``key: value`` lines) from the body; no YAML needed."""
    lines = path.read_text(encoding="utf-8").splitlines()
    meta: dict[str, str] = {}
    body_start = 0
    if lines and lines[0].strip() == "---":
        for i, line in enumerate(lines[1:], start=1):
            if line.strip() == "---":
                body_start = i + 1
                break
            key, sep, value = line.partition(":")
            if sep:
                meta[key.strip().lower()] = value.strip()
        else:
            raise ValueError(f"{path}: front matter is not closed with '---'")
    missing = [k for k in ("id", "title") if not meta.get(k)]
    if missing:
        raise ValueError(f"{path}: front matter lacks {', '.join(missing)}")
    return Document(
        id=meta["id"],
        title=meta["title"],
        source=meta.get("source", ""),
        url=meta.get("url", ""),
        text="\n".join(lines[body_start:]).strip(),
    )


def _index_text(doc: Document) -> str:
    """Body as indexed: no repeated H1 title and no ``#`` marks, so snippets read cleanly."""
    lines = doc.text.splitlines()
    if lines and lines[0].lstrip("# ").strip() == doc.title:
        lines = lines[1:]
    return "\n".join(line.lstrip("#").strip() for line in lines).strip()


def load_documents(folder: Path) -> list[Document]:
    """Read every ``*.md`` in ``folder`` (sorted, for stable ids and ranking ties)."""
    docs = [_parse(p) for p in sorted(Path(folder).glob("*.md"))]
    seen: set[str] = set()
    for doc in docs:
        if doc.id in seen:
            raise ValueError(f"{folder}: duplicate document id {doc.id!r}")
        seen.add(doc.id)
    return docs


def to_match_query(query: str) -> str:
    """Turn free text into a safe FTS5 query: quoted non-stop-word tokens joined by OR.

    Quoting makes FTS operators (AND, NEAR, *, ^, -, parentheses) plain words, and OR
    lets BM25 rank partial matches instead of demanding every word. Returns "" when
    nothing searchable is left.
    """
    tokens: list[str] = []
    for word in _WORD.findall(query.lower()):
        if word not in _STOP_WORDS and word not in tokens:
            tokens.append(word)
    return " OR ".join(f'"{t}"' for t in tokens[:_MAX_TOKENS])


class KnowledgeBase:
    """Full-text index over the knowledge documents, safe to share between threads."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = Path(folder) if folder is not None else DEFAULT_FOLDER
        self.documents = load_documents(self.folder)
        self._by_id = {d.id: d for d in self.documents}
        self._lock = threading.Lock()  # one sqlite connection, many worker threads
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        with self._lock, self._db:
            self._db.execute(
                "CREATE VIRTUAL TABLE docs USING fts5("
                "id UNINDEXED, title, body, tokenize='porter unicode61')"
            )
            # Weights per column (id, title, body), applied by ORDER BY rank.
            self._db.execute(
                "INSERT INTO docs(docs, rank) VALUES('rank', ?)",
                (f"bm25(0.0, {_TITLE_WEIGHT}, {_BODY_WEIGHT})",),
            )
            self._db.executemany(
                "INSERT INTO docs(id, title, body) VALUES (?, ?, ?)",
                [(d.id, d.title, _index_text(d)) for d in self.documents],
            )

    def __len__(self) -> int:
        return len(self.documents)

    def search(self, query: str, limit: int = 5) -> list[SearchHit]:
        """Best ``limit`` documents for free-text ``query``; [] if nothing matches."""
        match = to_match_query(query)
        if not match or limit <= 0:
            return []
        with self._lock:
            rows = self._db.execute(
                "SELECT id, snippet(docs, 2, '', '', ' … ', 48), rank FROM docs "
                "WHERE docs MATCH ? ORDER BY rank LIMIT ?",
                (match, limit),
            ).fetchall()
        hits = []
        for doc_id, snippet, rank in rows:
            doc = self._by_id[doc_id]
            hits.append(
                SearchHit(
                    doc.id, doc.title, doc.url, doc.source, " ".join(snippet.split()), -rank
                )  # bm25: lower is better
            )
        return hits

    def get(self, doc_id: str) -> Document | None:
        """Look up a document by id; accepts the ``kb:`` citation prefix too."""
        return self._by_id.get(doc_id.removeprefix("kb:"))


@functools.lru_cache(maxsize=1)
def default_knowledge_base() -> KnowledgeBase:
    """The bundled knowledge base, built once per process (indexing is not free)."""
    return KnowledgeBase()


def search_tool(kb: KnowledgeBase, limit: int = 4) -> BaseTool:
    """LangChain tool over ``kb``: readable passages for the model, citations as artifact.

    The artifact lets the app show and verify sources without parsing the text.
    """

    def search_knowledge_base(
        query: Annotated[str, Field(description="a few keywords, for example: dot-com crash")],
    ) -> tuple[str, list[dict[str, str]]]:
        hits = kb.search(query, limit=limit)
        if not hits:
            return (
                f"{NO_RESULTS} {query}\nNothing in the offline knowledge base "
                "matched; try other keywords.",
                [],
            )
        content = "\n\n".join(
            f"[kb:{h.id}] {h.title}\nSource: {h.source} ({h.url})\n{h.snippet}" for h in hits
        )
        artifact = [
            {"id": f"kb:{h.id}", "title": h.title, "url": h.url, "source": h.source} for h in hits
        ]
        return content, artifact

    return StructuredTool.from_function(
        func=search_knowledge_base,
        name="search_knowledge_base",
        description=(
            "Search the offline knowledge base (company histories, market events, "
            "finance concepts, agent design). Input: a short keyword query. Returns "
            "passages, each headed by a source id like [kb:some-id] to cite in the answer."
        ),
        response_format="content_and_artifact",
    )


def fetch_document_tool(kb: KnowledgeBase, max_chars: int = 1500) -> BaseTool:
    """LangChain tool reading one document of ``kb`` by id; the citation as artifact."""

    def fetch_document(
        doc_id: Annotated[
            str, Field(description="a document id as cited, for example: kb:dotcom-crash")
        ],
    ) -> tuple[str, list[dict[str, str]]]:
        doc = kb.get(doc_id.strip().strip("[]"))
        if doc is None:
            return (
                f"{NO_RESULTS} no document with id {doc_id!r} in the offline knowledge base.",
                [],
            )
        text = _index_text(doc)
        if len(text) > max_chars:
            text = text[:max_chars].rsplit(" ", 1)[0] + " …"
        return (
            f"[kb:{doc.id}] {doc.title}\nSource: {doc.source} ({doc.url})\n{text}",
            [{"id": f"kb:{doc.id}", "title": doc.title, "url": doc.url, "source": doc.source}],
        )

    return StructuredTool.from_function(
        func=fetch_document,
        name="fetch_document",
        description="Read one document of the offline knowledge base by its id (as in "
        "[kb:some-id]). Returns its text, headed by the source id to cite.",
        response_format="content_and_artifact",
    )


def check_citations_tool(kb: KnowledgeBase) -> BaseTool:
    """LangChain tool checking that the ``[kb:...]`` ids a text cites exist in ``kb``."""

    def check_citations(
        text: Annotated[
            str,
            Field(
                description="the text whose citations to check, for example: The bubble burst "
                "in 2000 [kb:dotcom-crash]."
            ),
        ],
    ) -> str:
        cited = list(dict.fromkeys(re.findall(r"\[(kb:[^\]\s]+)\]", text)))
        if not cited:
            return "No citations to check: the text cites no [kb:...] source."
        missing = [c for c in cited if kb.get(c) is None]
        verdict = f"{len(cited) - len(missing)} of {len(cited)} cited sources exist"
        if missing:
            return f"{verdict}; missing: {', '.join(missing)}."
        return f"{verdict}: {', '.join(f'[{c}]' for c in cited)}."

    return StructuredTool.from_function(
        func=check_citations,
        name="check_citations",
        description="Check that every source id cited in a text, like [kb:some-id], exists "
        "in the offline knowledge base. Read-only.",
    )
