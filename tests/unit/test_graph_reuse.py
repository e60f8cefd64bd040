"""A design's graph is compiled once and used again by the next run of the same design
(``graph.service.run_models``, issue 33.2): the Run page starts each run with a design,
and compiling it took 15-56 ms a click. Never reused across a changed design, changed run
settings, new models from a test's model factory or a replay's recorded models."""

from __future__ import annotations

from graph.kernel.design import Design
from graph.models.scripted import ScriptedChatModel
from graph.prompts import default_text
from graph.service import run_models
from graph.service.run_service import RunService

QUESTION = "Who founded Apple?"


def test_two_runs_of_one_design_share_one_compiled_graph_and_both_finish(
    service: RunService, monkeypatch
):
    builds: list[Design] = []
    build = run_models.RunModels._build

    def counted(self, design, made=None):
        builds.append(design)
        return build(self, design, made)

    monkeypatch.setattr(run_models.RunModels, "_build", counted)
    first, second = service.start(QUESTION, Design()), service.start(QUESTION, Design())
    assert service.wait(first, timeout=60).status == "done"
    assert service.wait(second, timeout=60).status == "done"
    third = service.start(QUESTION, Design())
    assert service.wait(third, timeout=60).status == "done"
    assert len(builds) == 1  # the Run page's three clicks compiled one graph
    answers = {service.store.run(r).final_answer for r in (first, second, third)}
    assert len(answers) == 1 and answers != {None}  # the same answer, found each time


def test_a_changed_prompt_or_agent_choice_builds_its_own_graph(service: RunService):
    design = Design()
    kept = service.models.graph(design)[0]
    edited = design.model_copy(
        update={
            "prompts": {
                "plan_execute/planner": default_text("plan_execute/planner") + "\nBe brief."
            }
        }
    )
    assert service.models.graph(edited)[0] is not kept
    fewer = design.model_copy(update={"enabled_agents": design.enabled_agents[:-1]})
    assert service.models.graph(fewer)[0] is not kept
    assert service.models.graph(design)[0] is kept  # still kept beside them


def test_changed_run_settings_build_anew(service: RunService):
    kept = service.models.graph(Design())[0]
    service.settings = service.settings.model_copy(update={"scripted_delay_s": 0.01})
    assert service.models.graph(Design())[0] is not kept


def test_new_models_from_a_factory_build_anew(store, settings):
    factory = RunService(
        store, settings, timeout_tick_s=0, model_factory=lambda role: ScriptedChatModel()
    )
    try:
        assert factory.models.graph(Design())[0] is not factory.models.graph(Design())[0]
    finally:
        factory.shutdown()


def test_a_factory_giving_the_same_models_shares_the_graph_between_runs(store, settings):
    """As a benchmark's or an experiment's factory does: a run started without
    ``prepared`` (the Run page's path) finds the graph the run before it built."""
    model = ScriptedChatModel()
    factory = RunService(store, settings, timeout_tick_s=0, model_factory=lambda role: model)
    try:
        first = factory.models.graph(Design())
        assert factory.models.graph(Design()) is first
        run_id = factory.start(QUESTION, Design())
        assert factory.wait(run_id, timeout=60).status == "done"
        assert factory.models.graph(Design()) is first
        assert factory.models.graph(Design(recursion_limit=30))[0] is not first[0]
    finally:
        factory.shutdown()


def test_only_the_most_recently_used_designs_are_kept(service: RunService):
    designs = [Design(recursion_limit=10 + n) for n in range(run_models.GRAPHS_KEPT + 1)]
    graphs = [service.models.graph(d)[0] for d in designs]
    assert service.models.graph(designs[-1])[0] is graphs[-1]
    assert service.models.graph(designs[0])[0] is not graphs[0]  # the oldest was let go
