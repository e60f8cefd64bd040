"""The command line: the same runs as the app, in the same store, for every hosted system.

    python -m graph run "QUESTION" [--design FILE] [--system S] [--agents a,b,c] [--set NAME=VALUE] [--json]
    python -m graph resume RUN_ID [--decision approve|edit|reject|skip|retry] [--query Q] [--reason R]
    python -m graph send RUN_ID "FOLLOW-UP MESSAGE"
    python -m graph runs [--status S] [--limit N]
    python -m graph export RUN_ID [--output FILE]
    python -m graph dot [--system S] [--agents a,b,c]
    python -m graph systems

A run prints its progress as it changes (a plan_execute run: each plan, each step's
status), then its answer. It exits 0 when done, 3 when it waits for a human (saying how
to answer), 1 when it failed or was cancelled (one line on stderr saying why), 2 for bad
arguments. Runs go through the run service into the store under ``STEPWISE_HOME``, so
the app lists them too.

An offline run's first line comes before the engine is imported (issue 33.7: within 1 s):
this module and ``graph.cli_output`` use the standard library only; the commands
(``graph.cli_commands``), the systems, LangGraph and the store load after it.
"""

from __future__ import annotations

import argparse
import sys

from graph.cli_output import say

# A run's first line, printed before the engine loads (a second or more on a busy machine).
STARTING = "starting: loading the systems, the store and the model..."


def parser() -> argparse.ArgumentParser:
    """The arguments of every command; it names no system, so parsing loads none."""
    parsing = argparse.ArgumentParser(prog="python -m graph", description=__doc__.split("\n")[0])
    sub = parsing.add_subparsers(dest="command", required=True)
    design_args = argparse.ArgumentParser(add_help=False)
    design_args.add_argument(
        "--design",
        metavar="FILE",
        help="a design file exported from the Design page (its agents, your own ones "
        "included, and settings); the other flags change it",
    )
    design_args.add_argument(
        "--system",
        metavar="SYSTEM",
        help="a hosted system (`python -m graph systems` lists them); default: the first",
    )
    design_args.add_argument(
        "--agents",
        help="comma-separated agents to enable (default: all "
        "of the system's; `python -m graph systems`)",
    )
    run = sub.add_parser("run", parents=[design_args], help="run a question")
    run.add_argument("question")
    run.add_argument("--max-replans", type=int, dest="max_replans")
    run.add_argument(
        "--recursion-limit",
        type=int,
        dest="recursion_limit",
        help="steps (plan steps, subtasks, bus rounds) one invocation may take",
    )
    run.add_argument("--bus-timeout", type=float, dest="bus_timeout_s")
    run.add_argument(
        "--set",
        action="append",
        metavar="NAME=VALUE",
        help="one of the system's own settings (`python -m graph systems` lists them)",
    )
    run.add_argument("--json", action="store_true", help="print the final state as JSON")
    resume = sub.add_parser(
        "resume",
        help="answer a run waiting for a human, or continue an "
        "interrupted run from its last checkpoint",
    )
    resume.add_argument("run_id")
    resume.add_argument("--decision", choices=["approve", "edit", "reject", "skip", "retry"])
    resume.add_argument("--query", help="with --decision edit: the query the agent gets")
    resume.add_argument("--reason", help="with --decision reject: why")
    send = sub.add_parser("send", help="send a follow-up message into a run's conversation")
    send.add_argument("run_id")
    send.add_argument("message")
    runs = sub.add_parser("runs", help="list the stored runs, newest first")
    runs.add_argument("--status")
    runs.add_argument("--limit", type=int, default=20)
    export = sub.add_parser("export", help="print (or write) a run as JSON")
    export.add_argument("run_id")
    export.add_argument("--output", "-o")
    sub.add_parser(
        "dot", parents=[design_args], help="print a design's compiled graph as Graphviz DOT"
    )
    sub.add_parser("systems", help="list the hosted systems and their agents")
    return parsing


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "run":  # progress: on stderr when stdout is the run's JSON
        say(STARTING, file=sys.stderr if args.json else sys.stdout)
    from graph.cli_commands import dispatch  # the engine: after the first line

    return dispatch(args)
