"""Model profiles chosen in the browser (issue 26, point 1), below the page: the repository
on a real SQLite file and a real PostgreSQL database; the active profile is what new runs,
experiments' "model in use" and the judge are made with, each run recording which profile
(never its key); a key typed in the browser lives in memory only and is found nowhere on
disk, in a log or an export afterwards."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from graph.kernel.design import Design
from graph.models.keys import forget_typed_key, typed_key
from graph.models.modes import PROCESS_MODES
from graph.models.scripted import ScriptedChatModel
from graph.service.eval_sets import EvalQuestion, EvalSet
from graph.service.experiment_variants import Variant
from graph.service.experiments import ExperimentRunner
from graph.service.judging import JudgeJobs
from graph.service.model_profiles import ENVIRONMENT, OFFLINE, ModelProfiles, ProfileError
from graph.service.run_service import RunService
from graph.service.store import Store
from graph.settings import Settings
from tests.support_procs.fake_server import LocalOpenAIServer
from tests.unit.conftest import wait_for

CANARY = "canary-typed-key-7f3a9c1e5b2d"
QUESTION = "How did Tesla's stock do in 2008?"


@pytest.fixture
def profiles(tmp_path, database_url):
    settings = Settings(home=tmp_path, provider="scripted", database_url=database_url)
    store = Store.open(settings)
    yield ModelProfiles(store, settings)
    store.close()


@pytest.fixture(autouse=True)
def _no_typed_keys_left():
    yield
    for name in ("typed", "local"):
        forget_typed_key(name)
    PROCESS_MODES.forget()


@pytest.fixture
def server():
    with LocalOpenAIServer(ScriptedChatModel, model_name="served-model") as running:
        yield running


def test_the_environment_and_the_offline_model_are_always_the_first_profiles(profiles):
    assert [p.name for p in profiles.all()] == [ENVIRONMENT, OFFLINE]
    assert profiles.active().name == ENVIRONMENT
    assert profiles.choice() is None  # a design without a model runs on the settings
    assert profiles.settings_of() is profiles.settings


def test_a_profile_is_added_made_active_kept_and_deleted(profiles, tmp_path, database_url):
    profiles.add("local", "http://127.0.0.1:8000/v1/", "planner-m", "worker-m")
    profiles.activate("local")
    settings = profiles.settings_of()
    assert settings.resolved_provider == "openai"
    assert settings.openai_base_url == "http://127.0.0.1:8000/v1"
    assert (settings.planner_model, settings.worker_model) == ("planner-m", "worker-m")
    assert settings.openai_api_key is None
    assert settings.request_timeout_s == profiles.settings.request_timeout_s  # the rest kept
    # Another process on the same store (a restart) finds the profile and that it is active.
    again = ModelProfiles(
        Store.open(Settings(home=tmp_path, database_url=database_url)), profiles.settings
    )
    assert again.active().name == "local"
    assert [p.name for p in again.all()] == [ENVIRONMENT, OFFLINE, "local"]
    profiles.delete("local")
    assert profiles.active().name == ENVIRONMENT
    assert [p.name for p in again.all()] == [ENVIRONMENT, OFFLINE]


def test_the_offline_model_is_a_profile_that_can_be_made_active(profiles):
    profiles.activate(OFFLINE)
    assert profiles.choice().scripted and profiles.choice().profile == OFFLINE
    assert profiles.settings_of().resolved_provider == "scripted"


@pytest.mark.parametrize(
    "fields, said",
    [
        ({"name": " "}, "Give the profile a name"),
        ({"name": ENVIRONMENT}, "built-in profile"),
        ({"name": "taken"}, "already a profile named “taken”"),
        ({"endpoint": ""}, "Give the server's endpoint"),
        ({"endpoint": "localhost:8000"}, "not an http(s) URL"),
        ({"planner_model": ""}, "Give the model name"),
        ({"key_from": "env", "key_env": "1-not a name"}, "Name the environment variable"),
        ({"key_from": "typed", "key": "  "}, "Type the key"),
        ({"key_from": "file"}, "The key comes from one of"),
    ],
)
def test_a_bad_profile_is_refused_in_words_and_nothing_is_stored(profiles, fields, said):
    profiles.add("taken", "http://127.0.0.1:8000/v1", "m")
    before = profiles.all()
    new = {"name": "new", "endpoint": "http://127.0.0.1:9000/v1", "planner_model": "m", **fields}
    with pytest.raises(ProfileError, match=said.replace("(", r"\(").replace(")", r"\)")):
        profiles.add(**new)
    assert profiles.all() == before


def test_built_in_and_unknown_profiles_cannot_be_deleted_or_activated(profiles):
    for name in (ENVIRONMENT, OFFLINE):
        with pytest.raises(ProfileError, match="built in"):
            profiles.delete(name)
    with pytest.raises(ProfileError, match="no profile named “ghost”"):
        profiles.delete("ghost")
    with pytest.raises(ProfileError, match="no profile named “ghost”"):
        profiles.activate("ghost")


def test_a_key_named_as_a_variable_is_read_when_a_model_is_made(profiles, monkeypatch):
    monkeypatch.delenv("STEPWISE_TEST_PROFILE_KEY", raising=False)
    profile = profiles.add(
        "env", "http://127.0.0.1:8000/v1", "m", key_from="env", key_env="STEPWISE_TEST_PROFILE_KEY"
    )
    assert "not set in the app's environment" in profile.choice().key_problem()
    assert profiles.key_state(profile) == "from $STEPWISE_TEST_PROFILE_KEY: not set"
    monkeypatch.setenv("STEPWISE_TEST_PROFILE_KEY", "sk-from-the-variable-123")
    assert profile.choice().key_problem() == ""
    key = profiles.settings_of(profile).openai_api_key.get_secret_value()
    assert key == "sk-from-the-variable-123"


def test_a_typed_key_is_kept_in_memory_only_and_gone_after_a_restart(profiles, tmp_path):
    profile = profiles.add("typed", "http://127.0.0.1:8000/v1", "m", key_from="typed", key=CANARY)
    assert typed_key("typed").get_secret_value() == CANARY
    assert profiles.key_state(profile) == "typed here: in memory"
    assert profiles.settings_of(profile).openai_api_key.get_secret_value() == CANARY
    assert CANARY not in json.dumps(profile.choice().model_dump())  # what a design records
    if profiles.db.dialect == "sqlite":
        # A new process on the same store: the profile is there, its key is not.
        script = (
            "import graph.registry\n"
            "from graph.service.model_profiles import ModelProfiles\n"
            "from graph.service.store import Store\n"
            "from graph.settings import Settings\n"
            f"s = Settings(home={str(tmp_path)!r}, provider='scripted')\n"
            "p = ModelProfiles(Store.open(s), s)\n"
            "profile = p.get('typed')\n"
            "print(p.key_state(profile))\n"
            "print(profile.choice().key_problem())\n"
        )
        out = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, check=True
        ).stdout
        assert out.splitlines()[0] == "typed here: gone (type it again)"
        assert "Type it again on the Model page" in out
    profiles.type_key("typed", "another-key-typed-again")
    assert typed_key("typed").get_secret_value() == "another-key-typed-again"
    profiles.delete("typed")
    assert typed_key("typed") is None  # deleting the profile forgets its key


def _service(tmp_path) -> RunService:
    settings = Settings(home=tmp_path, provider="auto", max_retries=0, request_timeout_s=30)
    return RunService(Store.open(settings), settings, timeout_tick_s=0)


def test_a_run_is_made_on_the_active_profile_and_records_it_without_its_key(
    tmp_path, server, caplog
):
    caplog.set_level(logging.DEBUG)
    service = _service(tmp_path)
    try:
        service.profiles.add("typed", server.base_url, "served-model", key_from="typed", key=CANARY)
        service.profiles.activate("typed")
        server.inject("echo_auth")  # a gateway echoing the Authorization header it got
        echoed = service.start(QUESTION, Design())
        assert service.wait(echoed, timeout=120).status == "failed"
        reason = service.store.run(echoed).reason
        assert "Bearer [redacted]" in reason and CANARY not in reason  # the key was sent
        run_id = service.start(QUESTION, Design())
        record = service.wait(run_id, timeout=120)
        assert record.status == "done", record.reason
        assert record.design["model"] == {
            "endpoint": server.base_url,
            "model": "served-model",
            "profile": "typed",
            "key_from": "typed",
        }
        assert record.settings["openai_base_url"] == server.base_url
        assert record.settings["openai_api_key"] == "set"
        assert {r["model"] for r in server.requests} == {"served-model"}
        exports = [json.dumps(service.store.export_run(r)) for r in (echoed, run_id)]
    finally:
        service.shutdown()
        service.store.close()
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name.startswith("checkpoints") for p in files)  # the checkpoints are there
    for path in files:
        assert CANARY.encode() not in path.read_bytes(), path
    for text in (*exports, caplog.text):
        assert CANARY not in text


def test_a_run_on_a_typed_key_gone_since_a_restart_is_refused_in_words(tmp_path, server):
    service = _service(tmp_path)
    try:
        service.profiles.add(
            "typed", server.base_url, "served-model", key_from="typed", key="k" * 8
        )
        service.profiles.activate("typed")
        forget_typed_key("typed")  # what a restart leaves: the profile, not its key
        with pytest.raises(ValueError, match="Type it again on the Model page"):
            service.start(QUESTION, Design())
        assert service.store.runs() == [] and server.requests == []
    finally:
        service.shutdown()
        service.store.close()


def test_switching_profiles_changes_the_model_of_the_next_run_without_a_restart(tmp_path, server):
    service = _service(tmp_path)
    try:
        offline = service.wait(service.start(QUESTION, Design()), timeout=60)
        assert offline.design.get("model") is None  # the environment's: offline here
        assert offline.model_label == "offline scripted model"
        service.profiles.add("local", server.base_url, "served-model")
        service.profiles.activate("local")
        served = service.wait(service.start(QUESTION, Design()), timeout=120)
        assert served.status == "done" and served.model_label == f"served-model @ {server.base_url}"
        assert served.design["model"]["profile"] == "local" and server.requests
        service.profiles.activate(OFFLINE)
        asked = len(server.requests)
        back = service.wait(service.start(QUESTION, Design()), timeout=60)
        assert back.model_label == "offline scripted model" and len(server.requests) == asked
        assert back.design["model"]["profile"] == OFFLINE
    finally:
        service.shutdown()
        service.store.close()


def test_an_experiments_model_in_use_is_the_active_profile(tmp_path, server):
    service = _service(tmp_path)
    try:
        service.profiles.add("local", server.base_url, "served-model")
        service.profiles.activate("local")
        runner = ExperimentRunner.of(service)
        experiment_id = runner.start(
            "on the profile",
            EvalSet(name="one", questions=[EvalQuestion(question=QUESTION)]),
            [Variant(name="in use")],
        )
        runner.wait(experiment_id, timeout=120)
        (row,) = service.store.experiment_runs(experiment_id)
        record = service.store.run(row["run_id"])
        assert record.status == "done" and record.design["model"]["profile"] == "local"
        assert server.requests  # the run's model calls went to the profile's server
        recorded = service.store.experiment(experiment_id).settings
        assert recorded["openai_base_url"] == server.base_url
        assert recorded["planner_model"] == "served-model"
    finally:
        service.shutdown()
        service.store.close()


class Scores(BaseChatModel):
    """A judge's reply: every metric scored 4."""

    @property
    def _llm_type(self) -> str:
        return "scores"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        scores = {
            m: {"score": 4, "reason": "Fine."}
            for m in (
                "plan_quality",
                "plan_adherence",
                "execution_efficiency",
                "logical_consistency",
            )
        }
        return ChatResult(generations=[ChatGeneration(message=AIMessage(json.dumps(scores)))])


def test_the_judge_uses_the_active_profile(tmp_path):
    service = _service(tmp_path)
    try:
        run_id = service.wait(service.start(QUESTION, Design()), timeout=60).id
        with LocalOpenAIServer(Scores, model_name="judge-model") as judge:
            service.profiles.add("local", judge.base_url, "judge-model")
            service.profiles.activate("local")
            jobs = JudgeJobs.of(service)
            job = jobs.wait(jobs.start([run_id]), timeout=60)
            assert (job["judged"], job["failed"]) == (1, 0), job["error"]
            assert service.store.judgement(run_id)["model_label"].startswith("judge-model @ ")
            assert len(judge.requests) == 1
    finally:
        service.shutdown()
        service.store.close()


def test_a_worker_process_gets_a_typed_key_over_its_socket(tmp_path, server):
    settings = Settings(home=tmp_path, max_retries=0, request_timeout_s=30, run_processes=1)
    service = RunService(Store.open(settings), settings, timeout_tick_s=0)
    try:
        service.profiles.add("typed", server.base_url, "served-model", key_from="typed", key=CANARY)
        service.profiles.activate("typed")
        server.inject("echo_auth")
        run_id = service.start(QUESTION, Design())
        wait_for(lambda: service.store.run(run_id).status == "failed", what="the echoed key")
        assert "Bearer [redacted]" in service.store.run(run_id).reason
    finally:
        service.shutdown()
        service.store.close()
    for path in (p for p in tmp_path.rglob("*") if p.is_file()):
        assert CANARY.encode() not in path.read_bytes(), path
