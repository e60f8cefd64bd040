"""What the engine adds around each node run: one traced run per node task (LangGraph's
own), and an accounting handler that LangChain calls for model and tool events only.

Structural, not timed: every extra traced layer around a node, or a handler called for
every chain event, is work repeated at every step of every run."""

import logging
from collections import Counter

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.callbacks.manager import CallbackManager

from graph.kernel.accounting import UsageRecorder
from graph.kernel.checkpoints import open_checkpointer
from graph.kernel.design import Design
from graph.models.scripted import ScriptedChatModel
from graph.plan_execute import SYSTEM
from graph.service.runs import run_question

QUESTION = "What happened to Apple when it launched the iPhone?"


class ChainRuns(BaseCallbackHandler):
    """Counts the chain runs started under each node's name."""

    def __init__(self):
        self.runs: Counter = Counter()

    def on_chain_start(self, serialized, inputs, *, name=None, metadata=None, **kwargs):
        if name and name == (metadata or {}).get("langgraph_node"):
            self.runs[name] += 1


def test_each_node_task_is_one_traced_run_not_two(tmp_path):
    model = ScriptedChatModel()
    graph = SYSTEM.build_graph(
        Design(),
        checkpointer=open_checkpointer(tmp_path / "c.sqlite", SYSTEM.shape.state_types),
        planner_model=model,
        worker_model=model,
    )
    handler = ChainRuns()
    tasks: Counter = Counter()
    config = {"configurable": {"thread_id": "t"}, "callbacks": [handler]}
    for chunk in graph.stream(
        SYSTEM.initial_state(QUESTION, Design()), config, stream_mode="tasks"
    ):
        if "triggers" in chunk:
            tasks[chunk["name"]] += 1
    assert tasks["executor"] >= 2 and tasks["planner"] == 1
    # The wiring's wrapper (memory, hooks, guardrail) runs inside the node's task: it is
    # not a traced runnable of its own, which would start a second run per task.
    # (The hubs and the synthesizer: a sub-agent's own graph runs under its node's name.)
    hubs = ("planner", "executor", "synthesizer")
    assert {n: handler.runs[n] for n in hubs} == {n: tasks[n] for n in hubs}


def test_the_accounting_handler_is_not_called_for_chain_events():
    calls = []

    class Recorder(UsageRecorder):
        def on_chain_start(self, *args, **kwargs):
            calls.append("chain")

    manager = CallbackManager(handlers=[Recorder(on_call=lambda call, ns: None)])
    manager.on_chain_start({}, {"x": 1}, name="executor")
    assert calls == []


def test_a_run_still_records_every_model_call(tmp_path):
    events = []
    outcome = run_question(
        QUESTION,
        Design(),
        graph=SYSTEM.build_graph(
            Design(),
            checkpointer=open_checkpointer(tmp_path / "c.sqlite", SYSTEM.shape.state_types),
            planner_model=ScriptedChatModel(),
            worker_model=ScriptedChatModel(),
        ),
        on_event=events.append,
    )
    calls = [e.data["llm_call"] for e in events if e.kind == "custom" and "llm_call" in e.data]
    assert outcome.status == "done" and calls
    assert {c["node"] for c in calls} >= {"planner", "executor", "synthesizer"}


def test_run_asynchronously_each_node_works_off_the_event_loop(tmp_path):
    """LangGraph Server streams with ``astream``: a node (sync code, a model call that
    may sleep or wait on HTTP) must run in a worker thread, never on the event loop, which
    would stall every other run and health check of the server."""
    import asyncio
    import threading

    threads: list[str] = []

    class Where(ScriptedChatModel):
        def _generate(self, *args, **kwargs):
            threads.append(threading.current_thread().name)
            return super()._generate(*args, **kwargs)

    model = Where()
    graph = SYSTEM.build_graph(
        Design(), checkpointer=False, planner_model=model, worker_model=model
    )

    async def stream() -> str:
        async for _ in graph.astream(SYSTEM.initial_state(QUESTION, Design())):
            pass
        return threading.current_thread().name

    # asyncio.run on a thread of its own: a browser test earlier in the session may have
    # left an event loop running on this one
    loop_threads: list[str] = []
    runner = threading.Thread(target=lambda: loop_threads.append(asyncio.run(stream())))
    runner.start()
    runner.join(timeout=60)
    assert threads and loop_threads and loop_threads[0] not in threads


def test_a_new_version_of_an_appended_or_merged_channel_always_changes_its_value(tmp_path):
    """A node returning ``notices: []`` (most executor turns) changes nothing, yet was a new
    version of the channel, serialized into the checkpoint: such writes are dropped."""
    from langgraph.graph import StateGraph

    from graph.kernel.wiring import idle_writes
    from graph.plan_execute.state import State

    idle = idle_writes(StateGraph(State))
    assert {"notices", "messages", "step_status", "agent_memory"} <= idle
    assert "plan" not in idle and "current_step" not in idle  # replaced, not appended

    model = ScriptedChatModel()
    saver = open_checkpointer(tmp_path / "c.sqlite", SYSTEM.shape.state_types)
    graph = SYSTEM.build_graph(
        Design(), checkpointer=saver, planner_model=model, worker_model=model
    )
    outcome = run_question(QUESTION, Design(), graph=graph, thread_id="t")
    assert outcome.status == "done"
    top = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    checkpoints = [t.checkpoint for t in saver.list(top)][::-1]
    assert len(checkpoints) > 5
    bumps = 0
    for before, after in zip(checkpoints, checkpoints[1:]):
        for channel in idle & after["channel_versions"].keys():
            if after["channel_versions"][channel] != before["channel_versions"].get(channel):
                bumps += 1
                assert after["channel_values"].get(channel) != before["channel_values"].get(
                    channel
                ), f"{channel} got a new version without a change"
    assert bumps > 5  # the idle channels were written, only never for nothing


def test_a_run_nobody_watches_leaves_out_the_accounting_handler_and_ends_the_same(tmp_path, caplog):
    """With no event callback (and no debug log of model calls) nothing reads a run's
    model-call records or its streamed states and sub-agent steps: the run leaves the
    handler (and those streams) out, work at every step, and still ends as a watched run
    of the same design does."""
    caplog.set_level(logging.INFO, logger="graph.kernel.accounting")
    with_recorder: list[bool] = []

    class Handlers(ScriptedChatModel):
        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            handlers = run_manager.handlers if run_manager is not None else []
            with_recorder.append(any(isinstance(h, UsageRecorder) for h in handlers))
            return super()._generate(messages, stop, run_manager, **kwargs)

    def run(name: str, **watching):
        model = Handlers()
        graph = SYSTEM.build_graph(
            Design(),
            checkpointer=open_checkpointer(tmp_path / name, SYSTEM.shape.state_types),
            planner_model=model,
            worker_model=model,
        )
        return run_question(QUESTION, Design(), graph=graph, **watching)

    watched = run("watched.sqlite", on_event=lambda event: None)
    assert with_recorder and all(with_recorder)
    with_recorder.clear()
    alone = run("alone.sqlite")
    assert with_recorder and not any(with_recorder)
    assert alone.status == watched.status == "done"
    assert (alone.nodes_run, alone.rows) == (watched.nodes_run, watched.rows)
    assert alone.state["final_answer"] == watched.state["final_answer"]
