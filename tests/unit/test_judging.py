"""The background judge: a batch of runs judged on the run service's own thread, its
progress recorded in the store as it goes, a run that cannot be judged counted with the
reason in words, and a shutdown recorded as stopped."""

from __future__ import annotations

import json
import threading

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from graph.kernel.design import Design
from graph.service.judging import JudgeJobs
from graph.settings import Settings
from tests.support_procs.fake_server import LocalOpenAIServer
from tests.unit.conftest import wait_for

SCORES = {
    m: {"score": 4, "reason": "Fine."}
    for m in ("plan_quality", "plan_adherence", "execution_efficiency", "logical_consistency")
}


class GatedScores(BaseChatModel):
    """A judge that gives SCORES once the test opens its gate, one call per opening."""

    gate: threading.Semaphore

    @property
    def _llm_type(self) -> str:
        return "gated-scores"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        assert self.gate.acquire(timeout=60), "the test never let the judge answer"
        return ChatResult(generations=[ChatGeneration(message=AIMessage(json.dumps(SCORES)))])


def _runs(service, count: int) -> list[str]:
    ids = [
        service.start("Why did IBM sell its PC division to Lenovo?", Design()) for _ in range(count)
    ]
    for run_id in ids:
        service.wait(run_id, timeout=60)
    return ids


def _real(store, server) -> Settings:
    return Settings(
        home=store.path.parent, openai_base_url=server.base_url, openai_api_key="k", max_retries=0
    )


def test_a_batch_is_judged_in_the_background_with_its_progress_in_the_store(service, store):
    run_ids = _runs(service, 2)
    gate = threading.Semaphore(0)
    with LocalOpenAIServer(lambda: GatedScores(gate=gate)) as server:
        job_id = JudgeJobs.of(service).start(
            run_ids, experiment_id="exp", settings=_real(store, server)
        )
        job = store.judge_job(job_id)  # start returned with no run judged yet
        assert (job["status"], job["judged"], job["total"]) == ("running", 0, 2)
        assert store.latest_judge_job("exp")["id"] == job_id
        # a second start while it works is the same job, not a second one
        assert JudgeJobs.of(service).start(run_ids, experiment_id="exp") == job_id
        gate.release()
        wait_for(lambda: store.judge_job(job_id)["judged"] == 1, what="the first run judged")
        assert store.judge_job(job_id)["status"] == "running"
        assert store.judgement(run_ids[0])["scores"] == SCORES
        assert store.judgement(run_ids[1]) is None
        gate.release()
        job = JudgeJobs.of(service).wait(job_id)
    assert (job["status"], job["judged"], job["failed"]) == ("done", 2, 0)
    assert store.judgement(run_ids[1])["scores"] == SCORES


def test_a_run_that_cannot_be_judged_is_counted_with_the_reason(service, store):
    (run_id,) = _runs(service, 1)
    gate = threading.Semaphore(5)
    with LocalOpenAIServer(lambda: GatedScores(gate=gate)) as server:
        job_id = JudgeJobs.of(service).start(["gone", run_id], settings=_real(store, server))
        job = JudgeJobs.of(service).wait(job_id)
    assert (job["status"], job["judged"], job["failed"]) == ("done", 1, 1)
    assert "No run 'gone'" in job["error"] and "Traceback" not in job["error"]


def test_without_a_real_model_the_job_fails_saying_why(service, store, settings):
    (run_id,) = _runs(service, 1)
    job = JudgeJobs.of(service).wait(JudgeJobs.of(service).start([run_id], settings=settings))
    assert (job["status"], job["failed"]) == ("failed", 1)
    assert "needs a real model" in job["error"]


def test_waiting_on_a_job_that_does_not_exist_says_so(service):
    """Found by mypy: ``wait`` indexed the store's None for an unknown id (a TypeError)."""
    with pytest.raises(LookupError, match="There is no judge job 'no-such-job'"):
        JudgeJobs.of(service).wait("no-such-job", timeout=1)


def test_a_shutdown_records_the_job_as_stopped(service, store):
    run_ids = _runs(service, 2)
    gate = threading.Semaphore(0)
    with LocalOpenAIServer(lambda: GatedScores(gate=gate)) as server:
        job_id = JudgeJobs.of(service).start(run_ids, settings=_real(store, server))
        service.shutdown(wait=False)
        gate.release(2)
        job = store.judge_job(job_id)
    assert job["status"] == "stopped" and "stopped before every run" in job["error"]


def test_a_job_cut_off_by_a_killed_process_does_not_block_a_new_one(service, store):
    store.create_judge_job("cut-off", "exp", 3)  # recorded running, owned by no live process
    (run_id,) = _runs(service, 1)
    jobs = JudgeJobs.of(service)
    assert not jobs.owns("cut-off")
    with LocalOpenAIServer(lambda: GatedScores(gate=threading.Semaphore(1))) as server:
        job_id = jobs.start([run_id], experiment_id="exp", settings=_real(store, server))
        assert job_id != "cut-off"
        assert jobs.wait(job_id)["judged"] == 1
