"""Two runs of one question side by side (what their system shows of them, the router's
decisions, the answers), and the judge's scores of an experiment's runs."""

from __future__ import annotations

import logging
from dataclasses import replace

import streamlit as st

from graph.service.evals import judge_available, judge_run
from graph.service.side_by_side import side_by_side
from ui import judge_progress, services, widgets
from ui.evals import RESULTS, flash_key, results_view, two_runs_view
from ui.model_text import model_markdown
from ui.views import panels_of

log = logging.getLogger(__name__)

FLASH = flash_key(RESULTS)


def show(record, records: list[dict], baseline: str) -> None:
    st.subheader("Two runs side by side")
    questions = record.eval_set.get("questions") or []
    index = st.selectbox(
        "Question",
        range(len(questions)),
        key=f"evals:pair-q:{record.id}",
        format_func=lambda i: f"{i + 1}. {questions[i]['question']}",
    )
    mine = [r for r in records if r["question_index"] == index and r["status"] != "deleted"]
    if len(mine) < 2:
        st.caption("This question has fewer than two runs to compare.")
        return
    by_id = {r["run_id"]: r for r in mine}
    ids = list(by_id)
    left = next((i for i, r in enumerate(mine) if r["variant"] == baseline), 0)
    right = next(
        (i for i, r in enumerate(mine) if r["variant"] != mine[left]["variant"]),
        1 if left == 0 else 0,
    )
    a_col, b_col = st.columns(2, gap="large")
    run_a = a_col.selectbox(
        "Left run",
        ids,
        index=left,
        key=f"evals:pair-a:{record.id}:{index}",
        format_func=lambda i: results_view.run_choice_label(by_id[i]),
    )
    run_b = b_col.selectbox(
        "Right run",
        ids,
        index=right,
        key=f"evals:pair-b:{record.id}:{index}",
        format_func=lambda i: results_view.run_choice_label(by_id[i]),
    )
    pair = side_by_side(services.store(), run_a, run_b)
    st.caption(
        "What differs is marked: a plan step the other run does not have (◆ in the "
        "Differs column), and the answer's lines the other answer does not have "
        "(highlighted)."
    )
    for column, side, other in zip((a_col, b_col), ("a", "b"), ("b", "a")):
        with column, st.container(key=f"evals-side-{side}"):
            show_side(pair[side], by_id[pair[side]["run_id"]]["variant"], side, pair[other])


def _with_differences(panels: list, other: list) -> list:
    """The step tables (steps with an action, subtasks with an instruction) with the
    steps the other run's plan lacks marked."""
    theirs = [r for p in other for r in p.rows if two_runs_view.step_signature(r)[1]]
    return [
        replace(p, rows=two_runs_view.differing_steps(p.rows, theirs))
        if p.rows and two_runs_view.step_signature(p.rows[0])[1]
        else p
        for p in panels
    ]


def show_side(view: dict, variant: str, side: str, other: dict) -> None:
    st.markdown(
        f"**{variant}** · status **{view['status']}** · "
        f"{view['steps']} step(s) · {view['replans']} replan(s)"
    )
    st.page_link(
        "app_pages/run.py",
        label="Open it on the Run page",
        icon=":material/play_circle:",
        query_params={"run": view["run_id"]},
    )
    for part in _with_differences(panels_of(view), panels_of(other)):
        widgets.panel(part, key=f"evals-side-{side}")
    if view["router"]:
        st.markdown(f"**The {view['router'].replace('_', ' ')}'s decisions**")
        if view["decisions"]:
            st.table(two_runs_view.decision_rows(view["decisions"]), hide_index=True)
        else:
            st.caption("None.")
    for decision in view["human_decisions"]:
        st.caption(f"A person decided: {decision}")
    st.markdown("**Answer**")
    with st.container(border=True):
        if view["answer"]:
            model_markdown(
                two_runs_view.highlighted_markdown(view["answer"], other["answer"] or "")
            )
        else:
            st.caption(f"No final answer ({view['status']}: {view['reason']}).")
    _judgement(view["run_id"], "" if side in ("a", "b") else f"{side}:")


def _judgement(run_id: str, where: str = "") -> None:
    if found := services.store().judgement(run_id):
        st.caption(f"Judged by {found['model_label']}:")
        st.table(two_runs_view.judgement_rows(found), hide_index=True)
    if judge_available(services.model_settings()):
        st.button(
            "Judge this run",
            icon=":material/gavel:",
            on_click=_judge,
            args=([run_id],),
            key=f"evals:judge:{where}{run_id}",
        )


def judged(record, records: list[dict]) -> None:
    """The mean judge scores per variant, and the button that judges every run."""
    st.subheader("Judged quality")
    store = services.store()
    counted = [r["run_id"] for r in records if r["counted"]]
    judgements = {
        v["name"]: [
            j
            for r in records
            if r["variant"] == v["name"] and r["counted"] and (j := store.judgement(r["run_id"]))
        ]
        for v in record.variants
    }
    if rows := two_runs_view.judged_means(judgements):
        st.caption("Mean judge scores, 1 (poor) to 5 (good), over the runs judged.")
        st.table(rows, hide_index=True)
    if judge_available(services.model_settings()):
        st.caption(
            "A model scores each run's plan quality, plan adherence, execution "
            "efficiency and logical consistency (the editable prompt judge/gpa)."
        )
        judge_progress.show(record.id, counted)
    else:
        st.caption(
            "Judging plan quality, plan adherence, execution efficiency and logical "
            "consistency needs a real model: make a profile of a real server active on the "
            "Model page. The offline scripted model cannot judge a run."
        )


def _judge(run_ids: list[str]) -> None:
    try:
        for run_id in run_ids:
            judge_run(services.store(), run_id, settings=services.model_settings())
    except Exception as exc:  # JudgeUnavailable, a server that is down, a reply that is no JSON
        log.warning("the judge could not score runs %s: %s", run_ids, exc)
        widgets.say(FLASH, "error", f"The judge could not score the run: {exc}")
        return
    widgets.say(FLASH, "success", f"Judged {len(run_ids)} run(s).")
