"""The command line's commands (``graph.cli`` parses the arguments and prints the first
line; this module, and with it the engine, is imported only then): each runs through the
run service into the store under ``STEPWISE_HOME``, so the app lists their runs too."""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import sys
import time
from pathlib import Path
from typing import Callable, TextIO

from pydantic import ValidationError

from graph.cli_lines import lines_of
from graph.cli_output import emit, say
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
_C1 = re.compile(r"[\x7f-\x9f]")  # C1 controls, which JSON leaves raw


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
                say(line, file=out)
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
        say(f"\n{unwritten[0]}: {unwritten[1]} (run {run_id})")
        say(f"error: {unwritten[1]}", file=sys.stderr)
        return FAILED
    snapshot = service.store.snapshot(run_id) or {}
    if json_out:  # JSON escapes every control character (ensure_ascii)
        emit(
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
            say(line)
        for notice in snapshot.get("notices") or []:
            say(f"note: {notice}")
        took = f", {record.duration_s:.2f} s" if record.duration_s is not None else ""
        say(f"\n{record.status}: {record.reason} (run {run_id}{took})")
    if record.status == "waiting":
        pending = service.store.pending_interrupts(run_id)
        asks = "; ".join(
            f"{p.get('kind', 'approval')} of {p.get('agent')}: {p.get('reason', '')}"
            for p in pending
        )
        say(
            f"waiting: {asks}\nanswer with: python -m graph resume {run_id} --decision "
            "approve|edit|reject|skip|retry [--query TEXT] [--reason TEXT]",
            file=sys.stderr,
        )
        return WAITING
    if record.status != "done":
        say(f"error: {record.reason}", file=sys.stderr)
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
    say(f"model: {service.model_settings().model_label}{named}", file=log)
    for warning in system.shape.design_warnings(design.enabled_agents):
        say(f"warning: {warning}", file=log)
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
        say(f"{record.id}  {when}  {record.system:<18}  {record.status:<11}  {record.question}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    store = Store.open(get_settings())
    if store.run(args.run_id) is None:
        raise ValueError(f"No run {args.run_id!r} in {get_settings().home}.")
    text = json.dumps(store.export_run(args.run_id), ensure_ascii=False, indent=1)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as out:
            out.write(text)
        say(f"exported run {args.run_id} to {args.output}", file=sys.stderr)
    else:  # valid JSON still, with the C1 controls JSON leaves raw escaped
        emit(_C1.sub(lambda m: f"\\u{ord(m.group()):04x}", text), sys.stdout)
    return 0


def cmd_dot(args: argparse.Namespace) -> int:
    design = _design(args)
    system = get_system(design.system)
    say(to_dot(system.build_graph(design), system))
    return 0


def cmd_systems(args: argparse.Namespace) -> int:
    for system in systems().values():
        own = ", ".join(system.settings_model.model_fields) or "none"
        say(
            f"{system.name}: {system.title}. Agents: {', '.join(system.agents)}. "
            f"Settings (--set NAME=VALUE): {own}."
        )
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "run": cmd_run,
    "resume": cmd_resume,
    "send": cmd_send,
    "runs": cmd_runs,
    "export": cmd_export,
    "dot": cmd_dot,
    "systems": cmd_systems,
}


def dispatch(args: argparse.Namespace) -> int:
    """Run the parsed command; its exit code, errors said in one line on stderr."""
    try:
        configure_logging(get_settings().log_level)
        return COMMANDS[args.command](args)
    except DiskFull as exc:
        say(f"error: {exc}", file=sys.stderr)
        return FAILED
    except (ValidationError, PromptError, ValueError, KeyError) as exc:
        message = (
            exc.errors()[0]["msg"].removeprefix("Value error, ")
            if isinstance(exc, ValidationError)
            else str(exc).strip("'\"")
        )
        say(f"error: {message}", file=sys.stderr)
        return BAD_INPUT
    except StepwiseError as exc:  # its message is a sentence (the database unreachable, ...)
        say(f"error: {exc}", file=sys.stderr)
        return FAILED
    except Exception as exc:  # a write outside the store's own (its checkpoints, a report)
        if disk_full(exc):
            say(f"error: {full_message(store_location(get_settings()))}", file=sys.stderr)
            return FAILED
        if not isinstance(exc, (OSError, sqlite3.Error)):
            raise
        # the home cannot be made, opened or written: not a folder, read-only, ...
        say(f"error: {storage_message(exc)}", file=sys.stderr)
        return FAILED


def storage_message(exc: BaseException) -> str:
    """The sentence for a store or home that cannot be opened or written."""
    home = get_settings().home
    return (
        f"The store at {store_location(get_settings())} cannot be opened or written "
        f"({exc}). Check that STEPWISE_HOME ({home}) is a folder this user can write."
    )
