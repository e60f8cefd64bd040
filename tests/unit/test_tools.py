"""The SQL, chart and web-search tools: read-only, capped, grounded."""

import pytest

from graph.tools.charts import (
    ChartRefused,
    chart_spec,
    chart_stats,
    describe_chart_tool,
    make_chart_tool,
)
from graph.tools.database import QueryRefused, open_database, sql_tool
from graph.tools.web import format_results


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM stocks",
        "UPDATE stocks SET price = 0",
        "DROP TABLE stocks",
        "INSERT INTO companies VALUES ('X', 'X', 'X')",
        "ATTACH DATABASE '/tmp/x.db' AS x",
        "PRAGMA writable_schema = 1",
        "CREATE TABLE t (x)",
    ],
)
def test_writes_are_refused_with_a_clear_message(sql):
    with pytest.raises(QueryRefused, match="read-only"):
        open_database().query(sql, 10)
    assert open_database().query("SELECT COUNT(*) FROM stocks", 10).rows == [[560]]


def test_only_one_statement_runs():
    with pytest.raises(QueryRefused, match="one SQL statement"):
        open_database().query("SELECT 1; DELETE FROM stocks", 10)


def test_rows_are_capped_and_the_cap_is_said():
    result = open_database().query("SELECT * FROM stocks", 25)
    assert len(result.rows) == 25 and result.truncated
    assert "(capped at 25)" in result.as_text()


def test_the_sql_tool_shows_the_sql_and_returns_the_dataset_as_artifact():
    message = sql_tool(open_database(), 10).invoke(
        {
            "type": "tool_call",
            "id": "1",
            "name": "run_sql",
            "args": {"sql": "SELECT symbol FROM companies ORDER BY symbol"},
        }
    )
    assert message.content.startswith("SQL: SELECT symbol FROM companies")
    assert message.artifact["rows"] == [["AAPL"], ["AMZN"], ["GOOG"], ["IBM"], ["MSFT"]]
    refused = sql_tool(open_database(), 10).invoke(
        {"type": "tool_call", "id": "2", "name": "run_sql", "args": {"sql": "DELETE FROM stocks"}}
    )
    assert refused.content.startswith("ERROR: The database is read-only")


DATASET = {
    "id": "sql:1",
    "columns": ["date", "symbol", "price"],
    "rows": [
        ["2005-01-01", "AAPL", 38.45],
        ["2009-12-01", "AAPL", 210.73],
        ["2005-01-01", "IBM", 86.39],
        ["2009-12-01", "IBM", 130.32],
    ],
}


def test_a_chart_is_a_vega_lite_spec_with_the_data_inlined():
    spec = chart_spec(DATASET, "date", "price", "symbol")
    assert spec["$schema"].startswith("https://vega.github.io/schema/vega-lite/")
    assert spec["encoding"]["x"]["type"] == "temporal"
    assert len(spec["data"]["values"]) == 4


def test_chart_figures_come_from_the_chart_itself():
    stats = {s["series"]: s for s in chart_stats(chart_spec(DATASET, "date", "price", "symbol"))}
    assert stats["AAPL"]["first"] == ("2005-01-01", 38.45)
    assert stats["IBM"]["max"] == ("2009-12-01", 130.32)
    text = describe_chart_tool(chart_spec(DATASET, "date", "price", "symbol")).invoke({})
    assert "AAPL: first 38.45 at 2005-01-01, last 210.73 at 2009-12-01" in text


def test_a_chart_of_a_missing_column_or_dataset_is_refused():
    with pytest.raises(ChartRefused, match="'volume' is not in dataset sql:1"):
        chart_spec(DATASET, "date", "volume")
    msg = make_chart_tool([DATASET]).invoke(
        {
            "type": "tool_call",
            "id": "1",
            "name": "make_chart",
            "args": {"dataset_id": "sql:9", "x": "date", "y": "price"},
        }
    )
    assert msg.content.startswith("ERROR: no dataset 'sql:9'") and msg.artifact is None


def test_web_results_are_shaped_like_knowledge_base_hits():
    content, sources = format_results(
        "q", [{"url": "https://example.org/a", "title": "A", "content": "text"}]
    )
    assert content.startswith(f"[{sources[0]['id']}] A") and sources[0]["id"].startswith("web:")
    assert format_results("q", [])[0].startswith("NO RESULTS:")


def test_save_report_runs_once_per_key_and_says_so_when_asked_again(tmp_path):
    from graph.kernel.ledger import SideEffectLedger
    from graph.tools.reports import save_report_tool

    ledger = SideEffectLedger(tmp_path / "ledger.sqlite")
    first = save_report_tool(tmp_path / "reports", ledger, "run1/2/0").invoke(
        {"title": "Dot-com", "body": "- Step 1: findings"}
    )
    # The same step executed again (a resume): a fresh tool with the same key prefix.
    again = save_report_tool(tmp_path / "reports", ledger, "run1/2/0").invoke(
        {"title": "Dot-com, reworded", "body": "other text"}
    )
    assert first.startswith("Report saved to") and again == first + (
        " (already done for this step: not repeated)"
    )
    assert len(list((tmp_path / "reports").glob("*.md"))) == 1
    other_attempt = save_report_tool(tmp_path / "reports", ledger, "run1/2/1").invoke(
        {"title": "Dot-com", "body": "x"}
    )
    assert "not repeated" not in other_attempt and ledger.count("run1/") == 2


def _caption_of(rows: list[list], x: str = "symbol") -> tuple[str, str]:
    """What describe_chart reads from a bar chart of these rows, and the offline
    model's caption of it."""
    from graph.plan_execute.offline_tools import chart_caption
    from graph.tools.charts import chart_spec, describe_chart_tool

    dataset = {"id": "d1", "columns": [x, "growth_pct"], "rows": rows}
    facts = describe_chart_tool(chart_spec(dataset, x, "growth_pct", mark="bar")).invoke({})
    return facts, chart_caption(facts)


def test_a_one_bar_chart_is_described_as_one_bar_not_as_a_change():
    facts, caption = _caption_of([["AAPL", 131.1]])
    assert "a single point, 131.1 at AAPL" in facts
    assert "single bar" in caption and "AAPL" in caption
    assert "moved from" not in caption and "+0.0%" not in caption


def test_bars_over_categories_are_compared_not_read_as_a_change_over_time():
    _, caption = _caption_of([["AAPL", 131.1], ["IBM", -12.5], ["MSFT", 25.8]])
    assert caption == "growth_pct is highest at 131.1 (AAPL) and lowest at -12.5 (IBM)."
    _, over_time = _caption_of([["2005-01-01", 10.0], ["2009-01-01", 20.0]], x="date")
    assert "moved from 10.0 (2005-01-01) to 20.0 (2009-01-01), +100.0%" in over_time
