"""The app's process-wide services, shared by every page, tab and session.

Runs outlive a script run (a click reruns the page), so the store and the run service
are ``st.cache_resource`` singletons. They are keyed by the store's folder, so a test
that points ``STEPWISE_HOME`` elsewhere gets its own store and service.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

import streamlit as st

from graph.kernel.design import Design
from graph.kernel.system import System, get_system
from graph.logs import configure_logging
from graph.service.run_service import RunService
from graph.service.server_runs import ServerGraph, ServerRunService, open_run_service
from graph.service.store import RunRecord, Store
from graph.settings import Settings, get_settings
from ui.system_view import SystemView
from ui.views import view_of

if TYPE_CHECKING:  # the Evals page's: loaded when it first asks, not with the first page
    from graph.service.experiments import ExperimentRunner
    from graph.service.judging import JudgeJobs


def settings() -> Settings:
    return get_settings()


def _home() -> str:
    """The cache key of the store and services: the home folder, and the PostgreSQL
    database (without its password) when one is configured."""
    home = str(Path(settings().home).resolve())
    return f"{home} {settings().database_location}" if settings().database_url else home


@st.cache_resource(show_spinner=False)
def _store(home: str) -> Store:
    configure_logging(settings().log_level)
    return Store.open(settings())


@st.cache_resource(show_spinner=False)
def _service(home: str) -> RunService:
    return open_run_service(_store(home), settings())


def store() -> Store:
    """The store under STEPWISE_HOME, or in STEPWISE_DATABASE_URL (opened once per process)."""
    return _store(_home())


def service() -> RunService:
    """The run service of this process: its worker threads run every run, or follow them
    on the LangGraph Server at STEPWISE_SERVER_URL."""
    return _service(_home())


# Said after the reason of a run whose end the store could not take yet.
NOT_RECORDED = (
    "(How it ended is not recorded in the store yet: it will be as soon as the store can "
    "be written again.)"
)


def run_record(store: Store, run_id: str) -> RunRecord | None:
    """The run as the store has it, or as it ended (``as_known``)."""
    record = store.run(run_id)
    return None if record is None else as_known(record)


def as_known(record: RunRecord) -> RunRecord:
    """``record``, except a run of this app process that ended while the store could not
    record that (its disk full, its database away): the store's row still says "running"
    until it can, so the run is given as it ended, with the reason and that it is not
    recorded yet. Never shown running after a failed write."""
    if not record.is_live:
        return record
    ended = service().unwritten_end(record.id)
    if ended is None:
        return record
    status, reason = ended
    return dataclasses.replace(record, status=status, reason=f"{reason} {NOT_RECORDED}")


def model_settings() -> Settings:
    """The settings of the active model profile (Model page): what new runs, experiments'
    "model in use" and the judge are made with."""
    return service().model_settings()


def server_problem() -> str:
    """With runs on a LangGraph Server: "" while it answers, else one sentence saying it
    does not (runs already recorded are kept)."""
    runs = service()
    return runs.health() if isinstance(runs, ServerRunService) else ""


def experiments() -> ExperimentRunner:
    """The experiment runner over that run service (its own bounded pools)."""
    from graph.service.experiments import ExperimentRunner

    return ExperimentRunner.of(service())


def judges() -> JudgeJobs:
    """The background judge over that run service (its own thread)."""
    from graph.service.judging import JudgeJobs

    return JudgeJobs.of(service())


def system_of(design: Design | dict | None) -> System:
    """The hosted system a design (or a stored design's dict) belongs to."""
    return get_system(_system_name(design))


def view_of_design(design: Design | dict | None) -> SystemView:
    """How the pages present the system a design (or a stored design's dict) belongs to."""
    return view_of(_system_name(design))


def _system_name(design: Design | dict | None) -> str:
    name = design.system if isinstance(design, Design) else (design or {}).get("system")
    return name or Design().system


@st.cache_resource(show_spinner=False, max_entries=32)
def _compiled(design_json: str, home: str):
    design = Design.model_validate_json(design_json)
    return get_system(design.system).build_graph(design, checkpointer=_service(home).checkpointer)


def compiled_graph(design: Design):
    """The compiled graph of a design, on the shared checkpointer (for drawing it and for
    reading a run's checkpoints: on the LangGraph Server's, with STEPWISE_SERVER_URL).
    Building is cheap, but pages redraw twice a second."""
    compiled = _compiled(design.model_copy(update={"prompts": {}}).model_dump_json(), _home())
    runs = service()
    # Runs on a LangGraph Server: their checkpoints are read from there.
    return ServerGraph(compiled, runs) if isinstance(runs, ServerRunService) else compiled


def current_design() -> Design:
    """The design the Design page last saved, or the default one."""
    return store().load_design() or Design()


def run_design() -> Design:
    """The current design with the active prompt versions: what the Run button runs."""
    return current_design().model_copy(update={"prompts": store().active_prompt_texts()})
