"""What the Evals page shows of two runs side by side, computed without Streamlit: a
router's decisions and a judge's scores as rows, and what differs between the two runs
(lines of their answers, steps of their plans) marked.
"""

from __future__ import annotations

import json
import re

from ui.evals.results_view import NONE, clip, number


def decision_rows(decisions: list[dict]) -> list[dict]:
    """A router node's decisions: the fields of each when it was JSON, else its words."""
    rows = []
    for d in decisions:
        row = {"At step": d.get("step")}
        if d.get("parsed"):
            row.update(
                {
                    k.replace("_", " ").capitalize(): NONE
                    if v in (None, "")
                    else clip(v if isinstance(v, str) else json.dumps(v), 300)
                    for k, v in d["parsed"].items()
                }
            )
        else:
            row["Reply"] = clip(" ".join(str(d.get("content") or "").split()), 300)
        rows.append(row)
    return rows


def judgement_rows(judgement: dict | None) -> list[dict]:
    if not judgement:
        return []
    return [
        {
            "Score": metric.replace("_", " "),
            "1-5": value.get("score"),
            "Why": value.get("reason") or "",
        }
        for metric, value in (judgement.get("scores") or {}).items()
    ]


def judged_means(judgements: dict[str, list[dict]]) -> list[dict]:
    """Mean judge score per variant and GPA metric (``judgements``: variant -> the stored
    judgements of its runs)."""
    rows = []
    for variant, found in judgements.items():
        if not found:
            continue
        row = {"Variant": variant, "Runs judged": len(found)}
        metrics = dict.fromkeys(m for j in found for m in j["scores"])
        for metric in metrics:
            scores = [j["scores"][metric]["score"] for j in found if metric in j["scores"]]
            row[metric.replace("_", " ")] = number(sum(scores) / len(scores))
        rows.append(row)
    return rows


def differing_lines(text: str, other: str) -> list[tuple[str, bool]]:
    """``text`` line by line, each with whether the other run's text lacks it (compared
    without surrounding spaces; blank lines never differ)."""
    theirs = {line.strip() for line in (other or "").splitlines()}
    return [(line, bool(line.strip()) and line.strip() not in theirs) for line in text.splitlines()]


_LEAD = re.compile(r"^(\s*(?:[-*+]|\d+[.)]|#{1,6})\s+)(.*)$")


def highlighted_markdown(text: str, other: str) -> str:
    """``text`` as Markdown with the lines the other run's text lacks highlighted (list
    markers and heading marks kept outside the highlight, so the Markdown still reads)."""
    out = []
    for line, differs in differing_lines(text, other):
        if not differs:
            out.append(line)
            continue
        found = _LEAD.match(line)
        lead, body = (found.group(1), found.group(2)) if found else ("", line.strip())
        body = body.replace("]", "\\]")  # a bracket in the text would end the highlight
        out.append(f"{lead}:orange-background[{body}]")
    return "\n".join(out)


def step_signature(row: dict) -> tuple:
    """What makes two plan steps the same step: their agent and their action."""
    return (row.get("Agent") or row.get("Team"), row.get("Action") or row.get("Instruction"))


def differing_steps(rows: list[dict], other: list[dict]) -> list[dict]:
    """``rows`` (a step table) with a "Differs" column: "◆ not in the other run" for a
    step (agent and action) the other run's plan does not have."""
    theirs = {step_signature(r) for r in other}
    return [
        {**r, "Differs": "" if step_signature(r) in theirs else "◆ not in the other run"}
        for r in rows
    ]
