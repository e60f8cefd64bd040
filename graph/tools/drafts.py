"""The writer's tools: ``format_output`` (pure) and ``write_draft`` (a side effect, idempotent).

A message may be handled again after a replay or a fork from an earlier checkpoint.
``write_draft`` is keyed by the request message it serves (plus a call number), and
the ledger remembers keys already carried out, so handling the same message again
returns the recorded result instead of writing a second file; a crash while writing
leaves an intent, and the re-run finishes that same file (see ``graph.tools.effects``).
"""

from __future__ import annotations

import re
from pathlib import Path

from langchain_core.tools import BaseTool, StructuredTool

from graph.tools.effects import Ledger, keyed_path, write_file_once

_CITATION = re.compile(r"\[(kb:[^\]\s]+)\]")


def cited_sources(text: str) -> list[str]:
    """The source ids a text cites, like ``[kb:doc-id]``, in order, once each."""
    return list(dict.fromkeys(_CITATION.findall(text)))


def format_answer(title: str, body: str) -> str:
    """A titled Markdown answer: one bullet per finding, the cited sources listed last."""
    points = [p.strip(" -•\t") for p in re.split(r"\n+|;\s+(?=\S)", body) if p.strip(" -•\t")]
    lines = [f"# {title.strip() or 'Answer'}", ""] + [f"- {p}" for p in points]
    if sources := cited_sources(body):
        lines += ["", "Sources: " + ", ".join(f"[{s}]" for s in sources)]
    return "\n".join(lines)


def format_output_tool() -> BaseTool:
    def format_output(title: str, body: str) -> str:
        return format_answer(title, body)

    return StructuredTool.from_function(
        format_output,
        name="format_output",
        description="Format an answer: a title and the findings become Markdown with one "
        "bullet per finding and the cited sources listed. Changes nothing.",
    )


def write_draft_tool(folder: Path, ledger: Ledger, key_prefix: str) -> BaseTool:
    """``write_draft`` bound to one request message; ``key_prefix`` names it."""
    calls = {"n": 0}

    def write_draft(title: str, body: str) -> str:
        calls["n"] += 1
        key = f"{key_prefix}/write_draft/{calls['n']}"
        return write_file_once(
            ledger,
            key,
            "message",
            keyed_path(folder, title, key),
            body if body.startswith("# ") else f"# {title}\n\n{body}\n",
            "Draft saved to",
        )

    return StructuredTool.from_function(
        write_draft,
        name="write_draft",
        description="Save the answer (a title and a Markdown body) as a draft file. This has "
        "a side effect: a file is written.",
    )
