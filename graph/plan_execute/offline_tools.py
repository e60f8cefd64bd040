"""The scripted model's rules for plan_execute's tools: the arguments each agent's tool
call carries (a search, SQL for a handful of question shapes, a chart, a report) and how
a tool's result is read back as the agent's findings.
"""

from __future__ import annotations

import re

from langchain_core.messages import BaseMessage

from graph.models.scripted.common import (
    symbols_in,
    unknown_companies,
    years_in,
)


def search_args(request: str, system: str) -> dict:
    query = re.sub(
        r"^(Search the documents for|Try again more broadly|Using the stock "
        r"database, answer):\s*",
        "",
        request,
    )
    return {"query": re.sub(r"\s*\((symbols|period|User question):.*?\)", "", query).strip(" .")}


def chart_args(request: str, system: str) -> dict | str:
    datasets = re.findall(r"^- (sql:\d+): columns ([\w, ]+)", system, re.M)
    for dataset_id, cols in reversed(datasets):
        columns = [c.strip() for c in cols.split(",")]
        if "date" in columns and "price" in columns:
            return {
                "dataset_id": dataset_id,
                "x": "date",
                "y": "price",
                "color": "symbol" if "symbol" in columns else None,
                "mark": "line",
                "title": "Monthly closing price",
            }
    for dataset_id, cols in reversed(datasets):
        columns = [c.strip() for c in cols.split(",")]
        numeric = [c for c in columns if c.endswith(("_pct", "price", "avg_price"))]
        if "symbol" in columns and numeric:
            return {
                "dataset_id": dataset_id,
                "x": "symbol",
                "y": numeric[-1],
                "mark": "bar",
                "title": numeric[-1].replace("_", " "),
            }
    return "No usable results: no dataset with prices has been fetched yet, so there is nothing to chart."


def sql_args(request: str, system: str) -> dict | str:
    if "stocks" not in system:
        return "No usable results: the database schema I was given has no stocks table."
    return {"sql": write_sql(request)}


def report_args(request: str, system: str) -> dict:
    title = re.search(r'titled "(.+?)"', request)
    findings = request.split("Findings so far:", 1)
    body = findings[1].strip() if len(findings) > 1 else "(no findings yet)"
    return {"title": title.group(1) if title else "Stepwise report", "body": body}


def write_sql(request: str) -> str:
    """SQL for the question shapes the scripted model knows: growth, averages, extremes, series."""
    # The instruction decides; the user's question appended to it only fills gaps.
    instruction, _, context = request.partition("(User question:")
    hint_symbols = re.search(r"symbols: ([^;)]+)", instruction)
    if hint_symbols:
        symbols = [s.strip().upper() for s in hint_symbols.group(1).split(",") if s.strip()]
    else:
        symbols = (
            symbols_in(instruction)
            or [n.upper() for n in unknown_companies(instruction)]
            or symbols_in(context)
        )
    years = years_in(instruction) or years_in(context)
    request = instruction
    start = f"{min(years)}-01-01" if years else "2000-01-01"
    end = f"{max(years)}-12-31" if years else "2010-12-31"
    where = f"date BETWEEN '{start}' AND '{end}'"
    if symbols:
        where += " AND symbol IN (" + ", ".join(f"'{s}'" for s in symbols) + ")"
    text = request.lower()
    if re.search(r"\b(chart|plot|monthly prices|price series|fetch the monthly)\b", text):
        return f"SELECT date, symbol, price FROM stocks WHERE {where} ORDER BY date, symbol"
    if re.search(
        r"\b(grew|grow|growth|gain|gained|rise|rose|increase|change|changed|"
        r"return|perform|performed|fell|fall|drop|dropped|decline|lost)\b",
        text,
    ):
        order = (
            "ASC" if re.search(r"\b(fell|fall|drop|dropped|decline|lost|worst)\b", text) else "DESC"
        )
        return (
            "WITH span AS (SELECT symbol, MIN(date) AS first_date, MAX(date) AS last_date "
            f"FROM stocks WHERE {where} GROUP BY symbol) "
            "SELECT s.symbol, s.first_date, f.price AS first_price, s.last_date, "
            "l.price AS last_price, ROUND(100.0 * (l.price - f.price) / f.price, 1) AS growth_pct "
            "FROM span s JOIN stocks f ON f.symbol = s.symbol AND f.date = s.first_date "
            "JOIN stocks l ON l.symbol = s.symbol AND l.date = s.last_date "
            f"ORDER BY growth_pct {order}"
        )
    if re.search(r"\b(average|mean)\b", text):
        return (
            f"SELECT symbol, ROUND(AVG(price), 2) AS avg_price, COUNT(*) AS months "
            f"FROM stocks WHERE {where} GROUP BY symbol ORDER BY avg_price DESC"
        )
    if re.search(r"\b(highest|peak|max|maximum|lowest|min|minimum|bottom)\b", text):
        agg, order = (
            ("MIN", "ASC")
            if re.search(r"\b(lowest|min|minimum|bottom)\b", text)
            else ("MAX", "DESC")
        )
        return (
            f"SELECT symbol, date, price FROM stocks s WHERE {where} AND price = "
            f"(SELECT {agg}(price) FROM stocks t WHERE t.symbol = s.symbol AND "
            f"t.{where.replace('symbol IN', 't.symbol IN')}) ORDER BY price {order}"
        )
    return f"SELECT date, symbol, price FROM stocks WHERE {where} ORDER BY date, symbol"


def read_rows(content: str) -> str:
    lines = content.splitlines()
    count = re.search(r"^(\d+) row", lines[1] if len(lines) > 1 else "")
    if not count or count.group(1) == "0":
        # what the tool says an empty result means comes first: it must survive clipping
        said = f" {lines[2]}" if len(lines) > 2 and lines[2].startswith("The database") else ""
        return f"No usable results: the query returned no rows.{said} {lines[0]}"
    header = lines[2].split(" | ")
    top = "; ".join(lines[3:6])
    first = ", ".join(f"{k} {v}" for k, v in zip(header, lines[3].split(" | ")))
    return (
        f"The query returned {count.group(1)} row(s) with columns {', '.join(header)}. "
        f"Top rows: {top}. Reading: first row {first}."
    )


def chart_caption(content: str) -> str:
    singles = re.findall(r"^(\S+): a single point, ([\d.-]+) at (\S+)", content, re.M)
    rows = re.findall(
        r"^(\S+): first ([\d.-]+) at (\S+), last ([\d.-]+) at (\S+), min ([\d.-]+) "
        r"at (\S+), max ([\d.-]+) at (\S+)",
        content,
        re.M,
    )
    if singles and not rows:
        bars = "; ".join(f"{name} {value} ({at})" for name, value, at in singles)
        one = "a single bar" if len(singles) == 1 else f"{len(singles)} single bars"
        return f"The chart shows {one}: {bars}. There is no change over time to read from it."
    if not rows:
        return "No usable results: the chart has no figures to describe."
    if not any(re.match(r"\d{4}-\d{2}", r[2]) for r in rows):  # bars over categories
        best = max(rows, key=lambda r: float(r[7]))
        worst = min(rows, key=lambda r: float(r[5]))
        across = f", across {len(rows)} series" if len(rows) > 1 else ""
        return (
            f"{best[0]} is highest at {best[7]} ({best[8]}) and lowest at "
            f"{worst[5]} ({worst[6]}){across}."
        )

    def change(r: tuple[str, ...]) -> float:
        return (float(r[3]) - float(r[1])) / float(r[1]) * 100

    best = max(rows, key=change)
    worst = min(rows, key=change)
    text = (
        f"{best[0]} moved from {best[1]} ({best[2]}) to {best[3]} ({best[4]}), "
        f"{change(best):+.1f}%, the largest change of {len(rows)} series."
    )
    if worst is not best:
        text += f" {worst[0]} went from {worst[1]} to {worst[3]} ({change(worst):+.1f}%)."
    return text


def search_summary(messages: list[BaseMessage], content: str) -> str:
    hits = re.findall(r"^(\[kb:[^\]]+\]) (.+)$", content, re.M)
    return "Findings: " + "; ".join(f"{title} {source}" for source, title in hits[:3])
