"""The Evals page's "Judge every run" button and the judge's progress: the runs are judged
on the run service's background thread (``graph.service.judging``), and a fragment
rereads the job from the store, so the page is never blocked while a model scores them."""

from __future__ import annotations

import streamlit as st

from ui import services

POLL_S = 1.0  # how often the progress bar rereads the store while the judge works


def show(experiment_id: str, run_ids: list[str]) -> None:
    """The button, then the running job's progress or what the last job did."""
    job = services.store().latest_judge_job(experiment_id)
    running = bool(job and job["status"] == "running" and services.judges().owns(job["id"]))
    st.button(
        "Judge every run of this experiment",
        icon=":material/gavel:",
        on_click=_start,
        args=(experiment_id, run_ids),
        key="evals:judge-all",
        disabled=not run_ids or running,
        help="The judge is at work: it scores one run after another in the background."
        if running
        else None,
    )
    if running and job is not None:
        st.fragment(run_every=POLL_S)(_progress)(job["id"])
    elif job:
        _outcome(job)


def _start(experiment_id: str, run_ids: list[str]) -> None:
    services.judges().start(
        run_ids, experiment_id=experiment_id, settings=services.model_settings()
    )


def _progress(job_id: str) -> None:
    job = services.store().judge_job(job_id)
    if job is None or job["status"] != "running":
        st.rerun()  # finished: redraw the means with the new scores
    done = job["judged"] + job["failed"]
    with st.container(key="judge-progress"):
        st.progress(
            done / job["total"] if job["total"] else 0.0,
            text=f"{done} of {job['total']} runs judged",
        )
        st.caption("The judge works in the background: you can leave this page.")
        if job["failed"]:
            st.caption(f"{job['failed']} could not be judged so far: {job['error']}")


def _outcome(job: dict) -> None:
    text = f"Last judged: {job['judged']} of {job['total']} run(s)"
    if job["status"] == "running":  # no one owns it: the app was killed while it judged
        st.warning(f"{text}; the app stopped before every run was judged.")
    elif job["status"] == "stopped":
        st.warning(f"{text}; {job['error']}")
    elif job["failed"]:
        st.warning(f"{text}; {job['failed']} could not be judged: {job['error']}")
    else:
        st.caption(text + ".")
