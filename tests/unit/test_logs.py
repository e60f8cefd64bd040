"""The engine's log (graph/logs.py) and the common root of Stepwise's exceptions."""

from __future__ import annotations

import importlib
import inspect
import logging
import pkgutil

import pytest
from pydantic import ValidationError

import graph
from graph.errors import StepwiseError
from graph.kernel.design import Design
from graph.logs import configure_logging, current_run_id, run_context
from graph.redaction import remember_secrets
from graph.service.runs import run_question
from graph.settings import Settings


def test_records_made_while_a_run_is_driven_name_the_run_even_on_node_threads(settings, caplog):
    caplog.set_level(logging.DEBUG, logger="graph")
    outcome = run_question(
        "Which stock in the database grew the most between 2005 and 2009?",
        Design(),
        settings=settings,
        thread_id="run-for-the-log",
    )
    assert outcome.status == "done"
    calls = [r for r in caplog.records if r.name == "graph.kernel.accounting"]
    assert calls, "no model call was logged"
    # model calls are recorded on the threads LangGraph runs nodes on
    assert {r.run_id for r in calls} == {"run-for-the-log"}
    ended = [r for r in caplog.records if r.getMessage().startswith("run done")]
    assert [r.run_id for r in ended] == ["run-for-the-log"]
    assert current_run_id() == "-"  # nothing leaks past the run


def test_a_record_outside_any_run_says_so():
    with run_context("inner"):
        assert current_run_id() == "inner"
    record = logging.getLogger("graph.test").makeRecord("graph.test", 20, "f", 1, "m", (), None)
    assert record.run_id == "-"


def test_the_log_never_shows_a_remembered_secret(capsys):
    canary = "sk-logcanary-0123456789abcdef"
    remember_secrets([canary])
    configure_logging("INFO")
    try:
        logging.getLogger("graph.test").warning("the server said: Bearer %s", canary)
    finally:
        configure_logging("WARNING")
    written = capsys.readouterr().err
    assert "the server said" in written and "[run -]" in written
    assert canary not in written


def test_the_log_level_is_read_from_the_environment_and_checked(monkeypatch):
    monkeypatch.setenv("STEPWISE_LOG_LEVEL", "info")
    assert Settings().log_level == "INFO"
    monkeypatch.setenv("STEPWISE_LOG_LEVEL", "chatty")
    with pytest.raises(ValidationError):
        Settings()


def test_every_exception_stepwise_defines_derives_from_stepwise_error():
    """A caller can tell Stepwise's own refusals (sentences) from bugs with one except."""
    foreign = []
    for info in pkgutil.walk_packages(graph.__path__, "graph."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if (
                cls.__module__ == module.__name__
                and issubclass(cls, BaseException)
                and not cls.__name__.startswith("_")
                and not issubclass(cls, StepwiseError)
            ):
                foreign.append(f"{cls.__module__}.{cls.__name__}")
    assert foreign == []
