"""``save_report``: report_writer's tool, with a side effect (it writes a file), made
idempotent by the ledger it is given: a resumed step returns the recorded result instead
of writing the file a second time, and a step killed while writing finishes the same
file. Each call has its own file (named after its whole ledger key)."""

from __future__ import annotations

from pathlib import Path

from langchain_core.tools import StructuredTool

from graph.tools.effects import Ledger, keyed_path, write_file_once


def save_report_tool(folder: Path, ledger: Ledger, key_prefix: str) -> StructuredTool:
    """A ``save_report`` bound to one step execution; ``key_prefix`` names it."""
    calls = {"n": 0}

    def save_report(title: str, body: str) -> str:
        calls["n"] += 1
        key = f"{key_prefix}/save_report/{calls['n']}"
        return write_file_once(
            ledger,
            key,
            "step",
            keyed_path(folder, title, key),
            f"# {title}\n\n{body}\n",
            "Report saved to",
        )

    return StructuredTool.from_function(
        save_report,
        name="save_report",
        description="Write the report (a title and a Markdown body) to the reports folder. "
        "This has a side effect: a file is written.",
    )


def report_body(findings: dict[str, str]) -> str:
    return "\n".join(
        f"- Step {k}: {v}" for k, v in sorted(findings.items(), key=lambda kv: int(kv[0]))
    )
