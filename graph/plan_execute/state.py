"""The shared memory of the plan_execute system (docs/systems/plan_execute.md), every key declared.

LangGraph silently drops a key a node writes if the state does not declare it, so
every key any node of this system writes is listed here, with its reducer.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Optional

from langgraph.graph import MessagesState

from graph.kernel.conversation import ConversationState
from graph.kernel.reducers import RESET, merge_dicts  # noqa: F401  (RESET: re-exported)


class State(MessagesState, ConversationState):
    """The source design's State (docs/systems/plan_execute.md), plus what our nodes write for the table, the chart and the answer."""

    # The source design's fields.
    user_query: Optional[str]
    enabled_agents: Optional[list[str]]
    plan: Optional[dict[str, dict[str, Any]]]  # {"1": {"agent": ..., "action": ...}, ...}
    current_step: int
    agent_query: Optional[str]
    last_reason: Optional[str]
    replan_flag: Optional[bool]
    # Keys are step numbers as strings: checkpoints serialise dict keys, and "1" == plan key.
    replan_attempts: Annotated[dict[str, int], merge_dicts]

    # What the table shows for each step: pending/running/done/replanned/skipped/failed.
    step_status: Annotated[dict[str, str], merge_dicts]
    # How many times each step's work was sent out in the current plan version (a guard
    # against a model that keeps asking for the same step; see executor.MAX_STEP_RUNS).
    step_runs: Annotated[dict[str, int], merge_dicts]
    # The last output of the agent(s) that ran for a step, read by the executor.
    step_results: Annotated[dict[str, str], merge_dicts]
    # Every plan version, with why it was made: the plan's history.
    plan_history: Annotated[list[dict[str, Any]], operator.add]
    # Engine notes: repairs and guards that fired (unknown goto, bad plan JSON, ...).
    notices: Annotated[list[str], operator.add]

    # Human in the loop: the question waiting for a human, and every decision taken.
    human_request: Optional[dict[str, Any]]
    approvals: Annotated[list[dict[str, Any]], operator.add]

    # Evidence gathered by tools, cited by the synthesizer.
    sources: Annotated[list[dict[str, Any]], operator.add]  # knowledge-base hits
    datasets: Annotated[list[dict[str, Any]], operator.add]  # SQL results {id, sql, columns, rows}

    # Outputs.
    chart_spec: Optional[dict[str, Any]]  # Vega-Lite, built by chart_generator
    chart_caption: Optional[str]  # chart_summarizer
    final_answer: Optional[str]  # synthesizer
    citations: Optional[list[dict[str, Any]]]  # sources the final answer cites

    # How the run ended: "done" or "failed", and why in words.
    outcome: Optional[str]
    outcome_reason: Optional[str]
