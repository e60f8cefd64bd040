"""LangSmith when asked (issue #31 point 5): a run's config carries Stepwise's run id, system
and prompt versions as LangChain metadata and tags, which LangChain's tracers (LangSmith's,
with LANGSMITH_TRACING=true) send with every run they record. Checked without network:
through LangChain's own run collector, the tracer machinery LangSmith's tracer uses, on a
real offline plan_execute graph; and through the checkpoints a service run writes."""

from __future__ import annotations

import uuid

from langchain_core.tracers.context import collect_runs

import graph.plan_execute  # noqa: F401  (declares the prompts read below)
from graph.kernel.design import Design
from graph.plan_execute import SYSTEM
from graph.prompts import default_text
from graph.service.runs import continue_run, run_metadata

PLANNER = "plan_execute/planner"
QUESTION = "Which stock in the database grew the most between 2005 and 2009?"


def test_the_graph_is_invoked_with_the_run_id_system_and_prompt_versions_as_metadata():
    design = Design()
    run_id = uuid.uuid4().hex
    metadata = run_metadata(run_id, "plan_execute", {PLANNER: 7})
    with collect_runs() as collector:
        outcome = continue_run(
            SYSTEM.build_graph(design),
            SYSTEM.initial_state(QUESTION, design),
            run_id,
            design,
            metadata=metadata,
        )
    assert outcome.status == "done", outcome.reason
    traced = list(_all(collector.traced_runs))
    assert {r.run_type for r in traced} >= {"llm", "tool", "chain"}
    for run in traced:  # every run LangSmith would record, each model call included
        said = run.extra["metadata"]
        assert said["stepwise_run_id"] == run_id
        assert said["stepwise_system"] == "plan_execute"
        assert said["stepwise_prompt_versions"] == {PLANNER: 7}
        assert {"stepwise", "plan_execute"} <= set(run.tags or [])


def _all(runs):
    for run in runs:
        yield run
        yield from _all(run.child_runs)


def test_a_service_run_is_driven_with_its_recorded_prompt_versions(service, store):
    text = default_text(PLANNER) + "\nKeep plans short."
    version = store.save_prompt_version(PLANNER, "short plans", text)
    design = Design(prompts={PLANNER: text})
    run_id = service.start(QUESTION, design, prompt_versions={PLANNER: version.id})
    assert service.wait(run_id, timeout=60).status == "done"
    assert service.run_metadata(run_id, design) == {
        "stepwise_run_id": run_id,
        "stepwise_system": "plan_execute",
        "stepwise_prompt_versions": {PLANNER: version.id},
    }
    # LangGraph keeps a config's plain metadata with each checkpoint: the run was driven
    # with it.
    saved = service.checkpointer.get_tuple({"configurable": {"thread_id": run_id}})
    assert saved.metadata["stepwise_run_id"] == run_id
    assert saved.metadata["stepwise_system"] == "plan_execute"
