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
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sqlite3
import sys
import time
from pathlib import Path
from typing import TextIO

from pydantic import ValidationError

from graph.cli_lines import lines_of
from graph.errors import StepwiseError
from graph.kernel.design import Design, DesignError, import_design
from graph.kernel.records import plain
from graph.kernel.render import to_dot
from graph.kernel.system import default_system, get_system, systems
from graph.logs import configure_logging
from graph.prompts import PromptError
from graph.service.disk_space import DiskFull, disk_full, full_message
from graph.service.model_profiles import ENVIRONMENT
from graph.service.run_service import RunService
from graph.service.run_storage import store_location
from graph.service.server_runs import open_run_service
from graph.service.store import LIVE_STATUSES, RunRecord, Store
from graph.settings import get_settings

WAITING, FAILED, BAD_INPUT = 3, 1, 2


# Terminal control sequences: CSI (colours, cursor moves, "clear screen"), OSC (window
# titles, hyperlinks, clipboard writes), DCS/SOS/PM/APC strings and two-byte ESC forms, in
# their 7-bit and 8-bit spellings; then any other control character but newline and tab.
_ESCAPES = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]"
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_C1 = re.compile(r"[\x7f-\x9f]")


def terminal_safe(text: object) -> str:
    """``text`` as the terminal may show it: a question, a model's answer or a server's
    error can hold escape sequences that recolour, retitle or clear the terminal, or
    write to its clipboard. Lone surrogates (bytes of argv that are not UTF-8) become
    "?" instead of failing the print."""
    text = _CONTROLS.sub("", _ESCAPES.sub("", str(text)))
    return text.encode("utf-8", "replace").decode("utf-8")


def _print(*parts: object, file: TextIO | None = None) -> None:
    """``print`` of text that may come from a question, a model or a server."""
    _emit(" ".join(terminal_safe(p) for p in parts), file or sys.stdout)


def _emit(text: str, file: TextIO) -> None:
    """One line out. A reader that went away (``python -m graph run Q | head -1``) is not
    an error: the rest of the output goes nowhere and the run goes on to its end in the
    store, as it would with the terminal closed, instead of stopping on a traceback.
    Each line is flushed, so none is left for the interpreter's last flush to fail on."""
    try:
        print(text, file=file, flush=True)
    except BrokenPipeError:
        logging.getLogger(__name__).info("the reader of the output went away")
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, file.fileno())  # the interpreter's last flush must not fail either
        os.close(devnull)


def _design_file(path: str) -> dict:
    """The design in an exported design file (the Design page's *Export design JSON*), its
    user agents included, as fields the flags may change."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"--design {path}: cannot be read ({exc.strerror}).") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"--design {path}: not JSON ({exc.msg} at line {exc.lineno}).") from None
    try:
        return import_design(data).model_dump(mode="json")
    except DesignError as exc:
        raise ValueError(f"--design {path}: {exc}") from None


def _design(args: argparse.Namespace) -> Design:
    fields: dict = _design_file(args.design) if getattr(args, "design", None) else {}
    if getattr(args, "system", None):
        fields["system"] = args.system
    if getattr(args, "agents", None):
        fields["enabled_agents"] = [a.strip() for a in args.agents.split(",") if a.strip()]
    # --max-replans and --bus-timeout name old design fields: Design puts each in the
    # settings of the system that has it.
    for name in ("max_replans", "recursion_limit", "bus_timeout_s"):
        if getattr(args, name, None) is not None:
            fields[name] = getattr(args, name)
    if pairs := getattr(args, "set", None):
        system = fields.get("system") or default_system()
        fields["settings"] = {
            **(fields.get("settings") or {}),
            system: {
                **(fields.get("settings") or {}).get(system, {}),
                **dict(map(_setting, pairs)),
            },
        }
    return Design(**fields)


def _setting(pair: str) -> tuple[str, str]:
    """NAME=VALUE of ``--set``; the system's settings model reads the value."""
    name, equals, value = pair.partition("=")
    if not equals or not name.strip():
        raise ValueError(f"--set {pair!r}: write it as NAME=VALUE, e.g. --set max_replans=1.")
    return name.strip(), value.strip()


def _service() -> RunService:
    settings = get_settings()
    # It does not claim other processes' runs: the app may be running them on this home.
    return open_run_service(Store.open(settings), settings, timeout_tick_s=0, claim_orphans=False)


def _record(service: RunService, run_id: str) -> RunRecord:
    record = service.store.run(run_id)
    if record is None:  # deleted while it was followed (the app's History page can)
        raise ValueError(f"Run {run_id!r} was deleted.")
    return record


def _follow(service: RunService, run_id: str, out: TextIO) -> None:
    """Print the run's progress until it is no longer live, as its system words it."""
    lines = lines_of(_record(service, run_id).system)
    shown: dict = {}
    seq = 0
    while True:
        record = _record(service, run_id)
        for event in service.store.events(run_id, after_seq=seq, kinds=("state",)):
            seq = event["seq"]
            for line in lines.progress(shown, event["data"] or {}):
                _print(line, file=out)
            shown = event["data"] or {}
        if not service.is_live(run_id) and (
            record.status not in LIVE_STATUSES or service.unwritten_end(run_id)
        ):
            return
        time.sleep(0.05)


def _finish(service: RunService, run_id: str, json_out: bool) -> int:
    """Report how the run stands; its exit code."""
    record = _record(service, run_id)
    if unwritten := service.unwritten_end(run_id):  # the store could not take it yet
        _print(f"\n{unwritten[0]}: {unwritten[1]} (run {run_id})")
        _print(f"error: {unwritten[1]}", file=sys.stderr)
        return FAILED
    snapshot = service.store.snapshot(run_id) or {}
    if json_out:  # JSON escapes every control character (ensure_ascii)
        _emit(
            json.dumps(
                {
                    "run_id": run_id,
                    "status": record.status,
                    "reason": record.reason,
                    "system": record.system,
                    "design": record.design,
                    "state": plain(service.state(run_id)),
                },
                indent=2,
                default=str,
            ),
            sys.stdout,
        )
    else:
        for line in lines_of(record.system).outcome_lines(snapshot):
            _print(line)
        for notice in snapshot.get("notices") or []:
            _print(f"note: {notice}")
        took = f", {record.duration_s:.2f} s" if record.duration_s is not None else ""
        _print(f"\n{record.status}: {record.reason} (run {run_id}{took})")
    if record.status == "waiting":
        pending = service.store.pending_interrupts(run_id)
        asks = "; ".join(
            f"{p.get('kind', 'approval')} of {p.get('agent')}: {p.get('reason', '')}"
            for p in pending
        )
        _print(
            f"waiting: {asks}\nanswer with: python -m graph resume {run_id} --decision "
            "approve|edit|reject|skip|retry [--query TEXT] [--reason TEXT]",
            file=sys.stderr,
        )
        return WAITING
    if record.status != "done":
        _print(f"error: {record.reason}", file=sys.stderr)
        return FAILED
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    design = _design(args)
    system = get_system(design.system)
    log = sys.stderr if args.json else sys.stdout
    service = _service()
    # The Model page's active profile, named when it is not the environment's settings.
    active = service.profiles.active().name
    named = "" if active == ENVIRONMENT else f" (profile: {active})"
    _print(f"model: {service.model_settings().model_label}{named}", file=log)
    for warning in system.shape.design_warnings(design.enabled_agents):
        _print(f"warning: {warning}", file=log)
    try:
        run_id = service.start(args.question, design)
        _follow(service, run_id, log)
        return _finish(service, run_id, args.json)
    finally:
        service.shutdown()


def cmd_resume(args: argparse.Namespace) -> int:
    """Answer a run waiting for a human, or go on with an interrupted one."""
    service = _service()
    try:
        record = service.store.run(args.run_id)
        if record is None:
            raise ValueError(f"No run {args.run_id!r} in {get_settings().home}.")
        pending = (
            service.store.pending_interrupts(args.run_id) if record.status == "waiting" else []
        )
        if args.decision and not pending:
            raise ValueError("This run is not waiting for a decision.")
        if pending:
            if not args.decision:
                raise ValueError("This run waits for a decision: pass --decision.")
            service.decide(
                args.run_id,
                pending[0]["id"],
                args.decision,
                query=args.query or "",
                reason=args.reason or "",
            )
        else:
            service.resume(args.run_id)
        _follow(service, args.run_id, sys.stdout)
        return _finish(service, args.run_id, False)
    finally:
        service.shutdown()


def cmd_send(args: argparse.Namespace) -> int:
    """A follow-up message in a run's conversation (the guardrail first, when it is on)."""
    service = _service()
    try:
        if service.store.run(args.run_id) is None:
            raise ValueError(f"No run {args.run_id!r} in {get_settings().home}.")
        service.send_message(args.run_id, args.message)
        _follow(service, args.run_id, sys.stdout)
        return _finish(service, args.run_id, False)
    finally:
        service.shutdown()


def cmd_runs(args: argparse.Namespace) -> int:
    store = Store.open(get_settings())
    for record in store.runs(status=args.status, limit=args.limit):
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.created_at))
        _print(f"{record.id}  {when}  {record.system:<18}  {record.status:<11}  {record.question}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    store = Store.open(get_settings())
    if store.run(args.run_id) is None:
        raise ValueError(f"No run {args.run_id!r} in {get_settings().home}.")
    text = json.dumps(store.export_run(args.run_id), ensure_ascii=False, indent=1)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as out:
            out.write(text)
        _print(f"exported run {args.run_id} to {args.output}", file=sys.stderr)
    else:  # valid JSON still, with the C1 controls JSON leaves raw escaped
        _emit(_C1.sub(lambda m: f"\\u{ord(m.group()):04x}", text), sys.stdout)
    return 0


def cmd_dot(args: argparse.Namespace) -> int:
    design = _design(args)
    system = get_system(design.system)
    _print(to_dot(system.build_graph(design), system))
    return 0


def cmd_systems(args: argparse.Namespace) -> int:
    for system in systems().values():
        own = ", ".join(system.settings_model.model_fields) or "none"
        _print(
            f"{system.name}: {system.title}. Agents: {', '.join(system.agents)}. "
            f"Settings (--set NAME=VALUE): {own}."
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m graph", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    names = list(systems())
    design_args = argparse.ArgumentParser(add_help=False)
    design_args.add_argument(
        "--design",
        metavar="FILE",
        help="a design file exported from the Design page (its agents, your own ones "
        "included, and settings); the other flags change it",
    )
    design_args.add_argument("--system", choices=names, help=f"default: {names[0]}")
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
    run.set_defaults(func=cmd_run)
    resume = sub.add_parser(
        "resume",
        help="answer a run waiting for a human, or continue an "
        "interrupted run from its last checkpoint",
    )
    resume.add_argument("run_id")
    resume.add_argument("--decision", choices=["approve", "edit", "reject", "skip", "retry"])
    resume.add_argument("--query", help="with --decision edit: the query the agent gets")
    resume.add_argument("--reason", help="with --decision reject: why")
    resume.set_defaults(func=cmd_resume)
    send = sub.add_parser("send", help="send a follow-up message into a run's conversation")
    send.add_argument("run_id")
    send.add_argument("message")
    send.set_defaults(func=cmd_send)
    runs = sub.add_parser("runs", help="list the stored runs, newest first")
    runs.add_argument("--status")
    runs.add_argument("--limit", type=int, default=20)
    runs.set_defaults(func=cmd_runs)
    export = sub.add_parser("export", help="print (or write) a run as JSON")
    export.add_argument("run_id")
    export.add_argument("--output", "-o")
    export.set_defaults(func=cmd_export)
    dot = sub.add_parser(
        "dot", parents=[design_args], help="print a design's compiled graph as Graphviz DOT"
    )
    dot.set_defaults(func=cmd_dot)
    listing = sub.add_parser("systems", help="list the hosted systems and their agents")
    listing.set_defaults(func=cmd_systems)
    args = parser.parse_args(argv)
    try:
        configure_logging(get_settings().log_level)
        return args.func(args)
    except DiskFull as exc:
        _print(f"error: {exc}", file=sys.stderr)
        return FAILED
    except (ValidationError, PromptError, ValueError, KeyError) as exc:
        message = (
            exc.errors()[0]["msg"].removeprefix("Value error, ")
            if isinstance(exc, ValidationError)
            else str(exc).strip("'\"")
        )
        _print(f"error: {message}", file=sys.stderr)
        return BAD_INPUT
    except StepwiseError as exc:  # its message is a sentence (the database unreachable, ...)
        _print(f"error: {exc}", file=sys.stderr)
        return FAILED
    except Exception as exc:  # a write outside the store's own (its checkpoints, a report)
        if disk_full(exc):
            _print(f"error: {full_message(store_location(get_settings()))}", file=sys.stderr)
            return FAILED
        if not isinstance(exc, (OSError, sqlite3.Error)):
            raise
        # the home cannot be made, opened or written: not a folder, read-only, ...
        _print(f"error: {storage_message(exc)}", file=sys.stderr)
        return FAILED


def storage_message(exc: BaseException) -> str:
    """The sentence for a store or home that cannot be opened or written."""
    home = get_settings().home
    return (
        f"The store at {store_location(get_settings())} cannot be opened or written "
        f"({exc}). Check that STEPWISE_HOME ({home}) is a folder this user can write."
    )
