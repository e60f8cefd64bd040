"""The command line: run a question, or print the compiled graph as DOT.

    python -m graph run "QUESTION" [--agents a,b,c] [--max-replans N] [--json]
    python -m graph resume THREAD_ID [--decision approve|edit|reject|skip|retry]
    python -m graph dot [--agents a,b,c]

A run prints each step as it changes, then the answer. Failures exit non-zero with
one line saying why; the partial state is still printed with --json.
"""

from __future__ import annotations

import argparse
import json
import sys

from pydantic import ValidationError

from graph.design import Design
from graph.plan_execute import build_graph, step_rows
from graph.plan_execute.agents import AGENT_NAMES, design_warnings
from graph.prompts import PromptError
from graph.render import to_dot
from langgraph.types import Command

from graph.runs import RunEvent, continue_run, open_checkpointer, run_question
from graph.settings import get_settings


def _design(args) -> Design:
    agents = None
    if getattr(args, "agents", None):
        agents = [a.strip() for a in args.agents.split(",") if a.strip()]
    fields = {"enabled_agents": agents} if agents is not None else {}
    if getattr(args, "max_replans", None) is not None:
        fields["max_replans"] = args.max_replans
    if getattr(args, "recursion_limit", None) is not None:
        fields["recursion_limit"] = args.recursion_limit
    return Design(**fields)


def _jsonable(value):
    if hasattr(value, "model_dump"):
        return {"type": getattr(value, "type", None), **value.model_dump(
            include={"content", "name", "tool_calls", "response_metadata", "id"})}
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


class StepPrinter:
    """Prints a step's row each time its status or replan count changes."""

    def __init__(self, out):
        self.out = out
        self.seen: dict[int, tuple] = {}
        self.plans = 0

    def __call__(self, event: RunEvent) -> None:
        if event.kind != "state":
            return
        state = event.data
        history = state.get("plan_history") or []
        if len(history) > self.plans:
            for version in history[self.plans:]:
                why = "" if version["reason"] == "initial plan" else f" ({version['reason']})"
                print(f"plan v{version['version']}{why}:", file=self.out)
                for key, block in version["plan"].items():
                    print(f"  {key}. {block['agent']}: {block['action']}", file=self.out)
            self.plans = len(history)
        for row in step_rows(state):
            key = (row.status, row.replans)
            if self.seen.get(row.step, ("pending", 0)) != key:
                self.seen[row.step] = key
                print(f"step {row.step} | {row.agent:<16} | {row.status:<9} | replans "
                      f"{row.replans} | {row.action}", file=self.out)


def cmd_run(args) -> int:
    design = _design(args)
    settings = get_settings()
    quiet = args.json
    log = sys.stderr if quiet else sys.stdout
    print(f"model: {settings.model_label}", file=log)
    for warning in design_warnings(design.enabled_agents):
        print(f"warning: {warning}", file=log)
    outcome = run_question(args.question, design, settings=settings,
                           checkpointer=open_checkpointer(settings), thread_id=args.thread_id,
                           on_event=StepPrinter(log))
    state = outcome.state
    if quiet:
        print(json.dumps({"thread_id": outcome.thread_id, "status": outcome.status,
                          "reason": outcome.reason, "state": _jsonable(state)},
                         indent=2, default=str))
    else:
        if state.get("chart_spec"):
            spec = state["chart_spec"]
            print(f"chart: Vega-Lite spec, {len(spec['data']['values'])} points, "
                  f"title {spec.get('title')!r}")
            if state.get("chart_caption"):
                print(f"caption: {state['chart_caption']}")
        if state.get("final_answer"):
            print("\n" + state["final_answer"])
        if state.get("citations"):
            print("\nsources: " + "; ".join(f"[{c['id']}] {c['title']}"
                                             for c in state["citations"]))
        for notice in state.get("notices") or []:
            print(f"note: {notice}")
        print(f"\n{outcome.status}: {outcome.reason} (thread {outcome.thread_id}, "
              f"{outcome.duration_s:.2f} s)")
    return _exit(outcome)


def _exit(outcome) -> int:
    if outcome.status == "waiting":
        print(f"waiting: {outcome.reason}\nanswer with: python -m graph resume "
              f"{outcome.thread_id} --decision approve|edit|reject|skip|retry "
              "[--query TEXT] [--reason TEXT]", file=sys.stderr)
        return 3
    if outcome.status != "done":
        print(f"error: {outcome.reason}", file=sys.stderr)
        return 1
    return 0


def cmd_resume(args) -> int:
    """Answer a run waiting for a human, or continue one that was interrupted."""
    settings = get_settings()
    checkpointer = open_checkpointer(settings)
    config = {"configurable": {"thread_id": args.thread_id}}
    saved = checkpointer.get_tuple(config)
    if saved is None:
        raise ValueError(f"No run with thread id {args.thread_id!r} in {settings.home}.")
    enabled = saved.checkpoint["channel_values"].get("enabled_agents")
    design = _design(args) if args.agents else Design(enabled_agents=enabled or list(AGENT_NAMES))
    if args.max_replans is not None:
        design = design.model_copy(update={"max_replans": args.max_replans})
    graph = build_graph(design, settings=settings, checkpointer=checkpointer)
    pending = graph.get_state(config).interrupts
    if args.decision and not pending:
        raise ValueError("This run is not waiting for a decision.")
    run_input = None
    if pending:
        if not args.decision:
            raise ValueError("This run waits for a decision: pass --decision.")
        run_input = Command(resume={pending[0].id: {"decision": args.decision, "query": args.query or "",
                                                    "reason": args.reason or ""}})
    outcome = continue_run(graph, run_input, args.thread_id, design, settings=settings,
                           on_event=StepPrinter(sys.stdout))
    if outcome.state.get("final_answer"):
        print("\n" + outcome.state["final_answer"])
    print(f"\n{outcome.status}: {outcome.reason}")
    return _exit(outcome)


def cmd_dot(args) -> int:
    print(to_dot(build_graph(_design(args))))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m graph", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    agents_help = f"comma-separated agents to enable (default: all of {','.join(AGENT_NAMES)})"
    run = sub.add_parser("run", help="run a question through the plan_execute system")
    run.add_argument("question")
    run.add_argument("--agents", help=agents_help)
    run.add_argument("--max-replans", type=int, dest="max_replans")
    run.add_argument("--recursion-limit", type=int, dest="recursion_limit")
    run.add_argument("--json", action="store_true", help="print the final state as JSON")
    run.add_argument("--thread-id", dest="thread_id", help="name the run (default: a new id)")
    run.set_defaults(func=cmd_run)
    resume = sub.add_parser("resume", help="answer a run waiting for a human, or continue "
                            "an interrupted run from its last checkpoint")
    resume.add_argument("thread_id")
    resume.add_argument("--decision", choices=["approve", "edit", "reject", "skip", "retry"])
    resume.add_argument("--query", help="with --decision edit: the query the agent gets")
    resume.add_argument("--reason", help="with --decision reject: why")
    resume.add_argument("--agents", help=agents_help)
    resume.add_argument("--max-replans", type=int, dest="max_replans")
    resume.set_defaults(func=cmd_resume)
    dot = sub.add_parser("dot", help="print the compiled graph as Graphviz DOT")
    dot.add_argument("--agents", help=agents_help)
    dot.set_defaults(func=cmd_dot)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (ValidationError, PromptError, ValueError) as exc:
        message = (exc.errors()[0]["msg"].removeprefix("Value error, ")
                   if isinstance(exc, ValidationError) else str(exc))
        print(f"error: {message}", file=sys.stderr)
        return 2
