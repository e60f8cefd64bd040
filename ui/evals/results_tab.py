"""The Compare variants tab: an experiment's progress while it runs, then the summary
against a baseline, per question and per check, the distributions and the runs."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from graph.service.eval_formats import SHAPES, TITLES, export_results_jsonl
from graph.service.eval_sets import EvalSet
from graph.service.experiment_comparison import compare, distribution_records, run_records
from graph.service.experiment_variants import APPROVALS, ExperimentError
from graph.service.experiments import refresh_status, status_words
from graph.service.store import LIVE_STATUSES
from ui import access, offline_note, services, widgets
from ui.evals import NEW, RESULTS, flash_key, results_view, setup_view, two_runs
from ui.evals import intervals as iv
from ui.evals import prompt_changes as pc
from ui.evals.experiment_picker import pick_experiment

FLASH = flash_key(RESULTS)
SHOWN = "evals:experiment"  # the experiment shown
RESULTS_FORMAT = "stepwise-experiment-results"
POLL_S = 1.0  # how often the progress bar rereads the store while an experiment runs


def show() -> None:
    # Kept a few seconds: after Stop, the page redraws again as soon as a stopping run ends
    # (``_settling``), which would take the message away before it is read.
    widgets.flash(FLASH, keep_s=10)
    store = services.store()
    experiments = {r.id: r for r in store.experiments()}
    if not experiments:
        st.info(f"No experiment yet: start one on the “{NEW}” tab.")
        return
    experiment_id = pick_experiment(experiments, "Experiment", SHOWN)
    _, _, waiting = refresh_status(store, experiment_id)  # runs decided since: status anew
    record = store.experiment(experiment_id) or experiments[experiment_id]
    tuned = services.system_of(record.design).prompts.tuned
    labels = {v.id: v.label for p in tuned.values() for v in store.prompt_versions(p)}
    st.table(setup_view.variant_rows(record, labels), hide_index=True)
    facts = [
        f"Status: {status_words(record.status, waiting)}",
        f"eval set “{record.eval_set.get('name')}”",
        f"{record.repeats} repeat(s)",
        f"{record.total} runs",
        f"at most {record.max_workers} at a time",
        f"approvals: {APPROVALS.get(record.approvals, record.approvals).split(':')[0].lower()}",
    ]
    if record.rerun_of and record.rerun_of in experiments:
        facts.append(f"a rerun of “{experiments[record.rerun_of].name}”")
    st.caption(" · ".join(facts))

    if record.status == "running":
        st.fragment(run_every=POLL_S)(_progress)(experiment_id)
        st.caption("The comparison appears here when every run has finished.")
        return
    if record.status == "waiting" or waiting:
        st.warning(
            f"{waiting} run(s) of this experiment wait for a decision on the Approvals page; "
            + ("it is done when they are decided. " if record.status == "waiting" else "")
            + "The figures below count the runs that have ended, and change as the others "
            "are decided."
        )
        st.fragment(run_every=POLL_S)(_decided)(experiment_id, record.status, waiting)
    st.button(
        "Rerun this experiment",
        icon=":material/replay:",
        on_click=_rerun,
        args=(experiment_id,),
        key="evals:rerun",
        help="A new experiment with exactly the recorded prompt texts, design and eval "
        "set; refused when the model settings differ from the recorded ones.",
    )
    offline_note.for_experiment(record)
    _comparison(record)


def _progress(experiment_id: str) -> None:
    done, total = services.experiments().progress(experiment_id)
    record = services.store().experiment(experiment_id)
    if record is None or record.status != "running":
        st.rerun()  # finished or stopped: draw the comparison
    with st.container(horizontal=True, vertical_alignment="center"):
        st.progress(done / total if total else 0.0, text=f"{done} of {total} runs finished")
        st.button(
            "Stop", icon=":material/stop:", on_click=_stop, args=(experiment_id,), key="evals:stop"
        )


def _decided(experiment_id: str, status: str, waiting: int) -> None:
    """While runs wait for a person: redraw when one has been decided."""
    _, _, now = refresh_status(services.store(), experiment_id)
    record = services.store().experiment(experiment_id)
    if record is None or (record.status, now) != (status, waiting):
        st.rerun()


def _live_runs(experiment_id: str) -> int:
    return sum(
        1 for r in services.store().experiment_runs(experiment_id) if r["status"] in LIVE_STATUSES
    )


def _settling(experiment_id: str, live: int) -> None:
    """After a stop, runs end after their current node: redraw when one has."""
    if _live_runs(experiment_id) != live:
        st.rerun()
    st.caption(f"{live} run(s) still stopping…")


def _styled(frame: pd.DataFrame, columns: list, colours):
    # the Styler's own index hidden too: st.table's hide_index leaves a styled one shown
    return frame.style.hide(axis="index").map(
        lambda v: f"background-color: {c}" if (c := colours(v)) else "", subset=columns
    )


def _comparison(record) -> None:
    store, prices = services.store(), services.settings().prices
    variants = [v["name"] for v in record.variants]
    baseline = st.selectbox(
        "Baseline variant",
        variants,
        key=f"evals:baseline:{record.id}",
        help="Each other variant is compared with it: better or worse only when the "
        "interval of the difference leaves out zero.",
    )
    data = compare(store, record.id, baseline, prices).as_dict()
    if record.status == "stopped":
        counted = sum(s["runs"] for s in data["summary"].values())
        st.warning(
            f"This experiment was stopped: {counted} of {record.total} runs ran to their "
            "end, and the figures count only those."
        )
        if live := _live_runs(record.id):
            st.fragment(run_every=POLL_S)(_settling)(record.id, live)

    _changes(record, baseline)
    st.subheader("Summary")
    st.markdown(results_view.summary_sentence(data))
    summary = pd.DataFrame(iv.summary_rows(data))
    marks = [results_view.vs_column(v, baseline) for v in variants if v != baseline]
    # Tables, not grids: their cells wrap, so a figure with its interval and three variants'
    # columns stay inside the page at 1440 px (a grid was 1,190 px wide in 978).
    with st.container(key="evals-summary"):
        st.table(_styled(summary, marks, iv.mark_colour), hide_index=True)
    st.caption(iv.method_caption(data["level"]))
    if advice := iv.repeats_advice(data, record.repeats):
        with st.container(key="evals-repeats"):
            st.markdown(
                "**Repeats needed.** Where no difference is clear yet:\n"
                + "\n".join(f"- {line}" for line in advice)
            )
    if unpriced := sorted({m for s in data["summary"].values() for m in s["unpriced"]}):
        st.caption(f"Cost unknown: no price for {', '.join(unpriced)} (set STEPWISE_PRICES).")

    st.subheader("Per question")
    st.caption(
        "One row per question, one column per variant, the baseline first; each figure is "
        "the mean over the variant's completed repeats. Against the baseline, where the "
        f"{iv.level_words(data['level'])} interval of the difference leaves out zero: "
        ":green[**▲ better**], :red[**▼ worse**]; plain when no difference is clear. Checks: one mark per check, numbered as "
        "in the table below (✓ passed, ✗ failed, ◐ passed in some repeats)."
    )
    with st.container(key="evals-comparison"):
        st.table(results_view.question_rows_readable(data), hide_index=True)
    checks = pd.DataFrame(results_view.check_rows(data))
    if not checks.empty:
        st.caption(
            "Each check of each question: ✓ passed, ✗ failed, or the share of repeats "
            "that passed it."
        )
        with st.container(key="evals-checks"):
            st.table(_styled(checks, variants, results_view.check_colour), hide_index=True)

    _distributions(record.id, variants)
    records = run_records(store, record.id, prices)
    _runs(record, records)
    two_runs.show(record, records, baseline)
    two_runs.judged(record, records)


def _changes(record, baseline: str) -> None:
    """What each variant changed against the baseline, above what it did."""
    found = pc.changes(record, baseline)
    if not found:
        return
    st.subheader("What differs from the baseline")
    st.caption(
        "Each prompt a variant changed, line against line as the Prompts page draws it: "
        f"the baseline's text on the left, the variant's on the right ({pc.CONTEXT} "
        "unchanged lines kept around each change)."
    )
    for n, change in enumerate(found):
        st.markdown(pc.headline(change, baseline))
        for prompt in change["prompts"]:
            with st.expander(f"{prompt['title']}: {baseline} → {change['variant']}"):
                with st.container(key=f"evals-prompt-diff-{n}-{prompt['title']}"):
                    st.markdown(pc.diff_html(change, prompt, baseline), unsafe_allow_html=True)


def _distributions(experiment_id: str, variants: list[str]) -> None:
    found = results_view.chart_records(
        distribution_records(services.store(), experiment_id, services.settings().prices)
    )
    if not found:
        return
    st.subheader("Distributions")
    st.caption("Each dot is a run; the boxes span the runs of a variant.")
    x = alt.X("variant:N", title=None, sort=variants, axis=alt.Axis(labelAngle=0))
    colour = alt.Color("variant:N", sort=variants, legend=None)
    box = (
        alt.Chart()
        .mark_boxplot(extent="min-max", size=30, opacity=0.35)
        .encode(x=x, y=alt.Y("value:Q", title=None, axis=alt.Axis(format=",.4~f")), color=colour)
    )
    dots = (
        alt.Chart()
        .mark_circle(size=55, opacity=0.9)
        .encode(
            x=x,
            y="value:Q",
            color=colour,
            tooltip=["variant:N", "question:N", "repeat:Q", alt.Tooltip("value:Q", format=",.4~f")],
        )
    )
    chart = (
        alt.layer(box, dots, data=pd.DataFrame(found))
        .properties(width=220, height=170)
        .facet(
            facet=alt.Facet("metric:N", title=None, sort=list(results_view.METRIC_LABELS.values())),
            columns=3,
        )
        .resolve_scale(y="independent")
    )
    st.altair_chart(chart)


def _runs(record, records: list[dict]) -> None:
    st.subheader("Runs")
    st.caption(
        "Every run of the experiment is an ordinary run: open it on the Run page, or "
        "find it in History."
    )
    st.dataframe(
        pd.DataFrame(results_view.run_rows(records)),
        hide_index=True,
        column_config={
            "Open": st.column_config.LinkColumn("Open", display_text="on the Run page ↗")
        },
    )
    eval_set = EvalSet.model_validate(record.eval_set)
    stem = setup_view.file_stem(record.name)
    with st.container(horizontal=True):
        st.download_button(
            "Export the results (JSON)",
            icon=":material/download:",
            key="evals:results:json",
            data=setup_view.json_file(
                {"format": RESULTS_FORMAT, "experiment": record.name, "runs": records}
            ),
            file_name=f"{stem}.results.json",
            mime="application/json",
        )
        for shape in SHAPES:
            st.download_button(
                f"Export the results ({TITLES[shape]} JSONL)",
                icon=":material/download:",
                key=f"evals:results:{shape}",
                data=export_results_jsonl(records, eval_set, record.name, shape),
                file_name=f"{stem}.results.{shape}.jsonl",
                mime="application/jsonl",
                help="A line a run: the question, the run's answer, and its variant, "
                "repeat, status, checks and figures as metadata.",
            )


# --------------------------------------------------------------------------- actions


def _stop(experiment_id: str) -> None:
    if not access.permitted("run", FLASH):
        return
    cancelled = services.experiments().stop(experiment_id)
    widgets.say(
        FLASH,
        "warning",
        f"Stopped: {cancelled} run(s) cancelled. The comparison counts the runs that had finished.",
    )


def _rerun(experiment_id: str) -> None:
    try:
        new_id = services.experiments().rerun(experiment_id)
    except (ExperimentError, KeyError) as exc:
        widgets.say(FLASH, "error", str(exc))
        return
    st.session_state[SHOWN] = new_id
    widgets.say(
        FLASH,
        "success",
        "Rerunning it as a new experiment, with exactly the "
        "recorded prompt texts, design, eval set and repeats.",
    )
