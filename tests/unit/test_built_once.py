"""plan_execute's sub-agents are built once per graph and reused by every step and run
of it, without changing what any run does: a design with other agents, prompts or a
model gets its own; a later run, or a run in another thread, sees none of another's
messages."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from langchain_core.messages import SystemMessage

import graph.plan_execute.workers as workers
from graph.kernel.built_once import BuiltOnce
from graph.kernel.design import Design
from graph.kernel.system import get_system
from graph.models.scripted import ScriptedChatModel
from graph.plan_execute import SYSTEM
from graph.service.runs import run_question

# A web step, then a database step, then the synthesizer.
DOTCOM = "What caused the dot-com crash and how much did Amazon's price fall from 2000 to 2001?"
IPHONE = "What happened when Apple launched the iPhone, and how did its stock price change in 2007?"


class RecordingModel(ScriptedChatModel):
    """The scripted model, keeping what each sub-agent call (a call offered tools) was sent."""

    label: str = ""
    agent_calls: list = []

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        tools = [t["function"]["name"] for t in kwargs.get("tools") or []]
        if tools:
            self.agent_calls.append((tools, [str(m.content) for m in messages], messages))
        return super()._generate(messages, stop, run_manager, **kwargs)


def _graph(design: Design, model=None):
    model = model or ScriptedChatModel()
    return SYSTEM.build_graph(design, planner_model=model, worker_model=model)


def _run(graph, design: Design, question: str):
    outcome = run_question(question, design, graph=graph)
    assert outcome.status == "done", outcome.reason
    return outcome


def test_a_graph_builds_each_researcher_once_for_all_its_steps_and_runs(settings, monkeypatch):
    built: list[str] = []
    real = workers.create_agent

    def counting(model, tools, *, name, **kwargs):
        built.append(name)
        return real(model, tools, name=name, **kwargs)

    monkeypatch.setattr(workers, "create_agent", counting)
    design = Design()
    graph = _graph(design)
    first = _run(graph, design, DOTCOM)
    second = _run(graph, design, IPHONE)
    used = [r.agent for r in first.rows + second.rows]
    assert used.count("web_researcher") == 2 and used.count("data_researcher") == 2
    assert sorted(built) == ["data_researcher", "web_researcher"]


def test_other_prompts_and_models_get_their_own_agents(settings):
    plain_model, other_model = RecordingModel(label="plain"), RecordingModel(label="other")
    plain_model.agent_calls, other_model.agent_calls = [], []
    plain = Design()
    reworded = Design(
        prompts={"plan_execute/web_researcher": "You are the reworded web researcher."}
    )
    plain_graph = _graph(plain, plain_model)
    _run(plain_graph, plain, DOTCOM)
    _run(_graph(reworded, other_model), reworded, DOTCOM)
    _run(plain_graph, plain, DOTCOM)  # the first graph is unchanged by the second

    def systems(model):
        return [
            texts[0] for tools, texts, _ in model.agent_calls if "search_knowledge_base" in tools
        ]

    assert systems(plain_model) and systems(other_model)
    assert all("reworded" not in text for text in systems(plain_model))
    assert all("reworded web researcher" in text for text in systems(other_model))
    # each web step calls the model twice: the search, then its reading
    assert len(systems(plain_model)) == 4 and len(systems(other_model)) == 2


def test_enabled_agents_decide_which_agents_a_graph_builds(settings, monkeypatch):
    built: list[str] = []
    real = workers.create_agent
    monkeypatch.setattr(
        workers,
        "create_agent",
        lambda model, tools, *, name, **kw: (
            built.append(name) or real(model, tools, name=name, **kw)
        ),
    )
    everything, data_only = Design(), Design(enabled_agents=["data_researcher", "synthesizer"])
    _run(_graph(everything), everything, DOTCOM)
    assert sorted(built) == ["data_researcher", "web_researcher"]
    built.clear()
    outcome = _run(_graph(data_only), data_only, DOTCOM)
    assert {r.agent for r in outcome.rows} == {"data_researcher", "synthesizer"}
    assert built == ["data_researcher"]  # its own, not the first graph's


def test_a_later_run_sees_none_of_an_earlier_runs_messages(settings):
    model = RecordingModel()
    model.agent_calls = []
    design = Design()
    graph = _graph(design, model)
    _run(graph, design, DOTCOM)
    earlier = model.agent_calls[:]
    later = _run(graph, design, IPHONE)
    calls = model.agent_calls[len(earlier) :]
    earlier_texts = {text for _tools, texts, _ in earlier for text in texts[1:] if text}
    assert calls and earlier_texts
    for _tools, texts, messages in calls:
        assert isinstance(messages[0], SystemMessage)
        assert not earlier_texts & set(texts[1:])  # no query, tool call or result of run 1
    starts = [texts for _tools, texts, _ in calls if len(texts) == 2]  # system + query
    assert len(starts) == 2  # each sub-agent started from its own query alone
    assert "iPhone" in starts[0][1]
    assert not any("dot-com" in str(m.content).lower() for m in later.state["messages"])


def test_runs_in_two_threads_on_one_graph_keep_their_own_work(settings):
    design = Design()
    graph = _graph(design, ScriptedChatModel(delay_s=0.002))  # the two runs interleave
    alone = {q: _run(graph, design, q).state for q in (DOTCOM, IPHONE)}
    start = threading.Barrier(2)

    def together(question):
        start.wait()
        return _run(graph, design, question).state

    for _ in range(2):
        with ThreadPoolExecutor(2) as pool:
            states = dict(zip((DOTCOM, IPHONE), pool.map(together, (DOTCOM, IPHONE))))
        for question, state in states.items():
            assert state["final_answer"] == alone[question]["final_answer"]
            assert state["step_results"] == alone[question]["step_results"]
            assert state["sources"] == alone[question]["sources"]


def test_built_once_builds_once_when_threads_ask_at_the_same_time():
    built = BuiltOnce()
    calls: list[int] = []
    start = threading.Barrier(8)

    def build():
        calls.append(1)
        return object()

    def ask(_):
        start.wait()
        return built.get("agent", build)

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(ask, range(8)))
    assert len(calls) == 1 and all(r is results[0] for r in results)
    assert built.names() == ["agent"]


def test_supervisor_bus_builds_its_knowledge_tools_once_and_a_draft_tool_per_request(
    settings, monkeypatch
):
    import graph.supervisor_bus.tools as bus_tools
    from graph.service.run_storage import checkpointer_for

    made: list[str] = []
    for name in ("search_tool", "write_draft_tool"):
        real = getattr(bus_tools, name)
        monkeypatch.setattr(
            bus_tools,
            name,
            lambda *a, _real=real, _name=name, **kw: made.append(_name) or _real(*a, **kw),
        )
    design = Design(system="supervisor_bus", approvals={"writer": "never"})
    graph = get_system("supervisor_bus").build_graph(
        design, settings=settings, checkpointer=checkpointer_for(settings)
    )
    for question in ("What caused the dot-com crash?", "Why did Google go public in 2004?"):
        assert run_question(question, design, settings=settings, graph=graph).status == "done"
    assert made.count("search_tool") == 1
    assert made.count("write_draft_tool") >= 4  # one per request message, two runs


def test_hierarchical_teams_builds_each_workers_tools_once(settings, monkeypatch):
    import graph.hierarchical_teams.workers as workers
    from graph.service.run_storage import checkpointer_for

    made: list[str] = []
    real = workers.worker_tools
    monkeypatch.setattr(
        workers,
        "worker_tools",
        lambda worker, settings: made.append(worker) or real(worker, settings),
    )
    design = Design(system="hierarchical_teams")
    graph = get_system("hierarchical_teams").build_graph(
        design, settings=settings, checkpointer=checkpointer_for(settings)
    )
    question = "Find reliable news sites about semiconductor tariffs"
    for _ in range(2):
        assert run_question(question, design, settings=settings, graph=graph).status == "done"
    assert made and sorted(made) == sorted(set(made))  # each worker's tools built once
