"""Evals: fixed questions with checks (eval sets), prompt variants run on them
(experiments), and the comparison of what each variant's runs did."""

import altair as alt
import pandas as pd
import streamlit as st

from graph.evals import (EvalSetError, export_eval_set, import_eval_set, judge_available,
                         judge_run, load_starter)
from graph.experiments import (ExperimentError, Variant, compare, distribution_records,
                               run_records, side_by_side)
from graph.store import LIVE_STATUSES
from ui import evals_view as ev
from ui import services, widgets

SETS, NEW, RESULTS = "Eval sets", "Run an experiment", "Compare variants"
POLL_S = 1.0  # how often the progress bar rereads the store while an experiment runs

st.title("Evals")
st.markdown("Tune prompts on questions that do not move. An **eval set** is a list of questions, "
            "each with checks a run passes or fails. An **experiment** runs every question with "
            "two or more **variants** (a Planner and an Executor prompt version) and compares "
            "them: checks passed, steps, replans, LLM calls, tokens, cost and time. Its runs "
            "are ordinary runs, listed in History.")

store = widgets.store_or_stop()
service = services.service()
settings = services.settings()


def _flash(tab: str, kind: str, text: str) -> None:
    st.session_state[f"evals:flash:{tab}"] = (kind, text)


def _show_flash(tab: str) -> None:
    if found := st.session_state.pop(f"evals:flash:{tab}", None):
        {"success": st.success, "error": st.error, "warning": st.warning}[found[0]](found[1])


# --------------------------------------------------------------------------- actions


def _saved(name: str, text: str) -> None:
    st.session_state.pop(f"evals:editor:{name}", None)  # the editor reloads what is stored
    st.session_state["evals:set"] = st.session_state["evals:exp-set"] = name
    _flash(SETS, "success", text)


def _picked_set() -> None:
    st.session_state["evals:exp-set"] = st.session_state["evals:set"]  # what to run next


def _save_starter() -> None:
    starter = load_starter()
    store.save_eval_set(starter)
    _saved(starter.name, f"Saved the starter set “{starter.name}”: "
                         f"{ev.eval_set_facts(starter)}.")


def _save_edit(name: str) -> None:
    try:
        eval_set = ev.parse_eval_set_text(st.session_state.get(f"evals:editor:{name}", ""))
    except EvalSetError as exc:
        _flash(SETS, "error", f"Not saved: {exc}")
        return
    store.save_eval_set(eval_set)
    st.session_state.pop(f"evals:editor:{name}", None)
    _saved(eval_set.name, f"Saved “{eval_set.name}”: {ev.eval_set_facts(eval_set)}.")


def _delete(name: str) -> None:
    store.delete_eval_set(name)
    st.session_state.pop(f"evals:editor:{name}", None)
    st.session_state.pop("evals:set", None)
    _flash(SETS, "success", f"Deleted “{name}”. Experiments that ran it keep their own copy.")


def _import() -> None:
    upload = st.session_state.get("evals:import")
    if upload is None:
        return
    try:
        eval_set = import_eval_set(upload.getvalue())
    except EvalSetError as exc:
        _flash(SETS, "error", f"{upload.name} was not imported: {exc}")
        return
    replaced = eval_set.name in store.eval_set_names()
    store.save_eval_set(eval_set)
    _saved(eval_set.name, f"Imported “{eval_set.name}” from {upload.name}"
                          + (" (it replaces the set of that name)." if replaced else "."))


def _add_variant() -> None:
    ids = st.session_state["evals:variants"]
    ids.append(max(ids) + 1)


def _remove_variant(variant_id: int) -> None:
    st.session_state["evals:variants"].remove(variant_id)


def _variants() -> list[Variant]:
    """The variants as typed in: a name, a Planner and an Executor version each."""
    variants = []
    for position, variant_id in enumerate(st.session_state["evals:variants"], start=1):
        name = (st.session_state.get(f"evals:variant:{variant_id}:name") or "").strip()
        if not name:
            raise ExperimentError(f"Variant {position} needs a name.")
        chosen = [st.session_state.get(f"evals:variant:{variant_id}:{role}")
                  for role in ev.VARIANT_PROMPTS]
        variants.append(Variant.from_versions(store, name, [c for c in chosen
                                                            if c not in (None, ev.SHIPPED_ID)]))
    return variants


def _start(set_name: str) -> None:
    eval_set = store.load_eval_set(set_name)
    design = services.run_design()  # the saved design, other prompts as the Run page runs them
    design = design.model_copy(update={"prompts": {
        n: t for n, t in design.prompts.items() if n not in ev.VARIANT_PROMPTS.values()}})
    try:
        if eval_set is None:
            raise ExperimentError(f"The eval set “{set_name}” is no longer stored.")
        variants = _variants()
        name = ((st.session_state.get("evals:exp-name") or "").strip()
                or ev.experiment_name(set_name, [v.name for v in variants]))
        experiment_id = service.start_experiment(
            name, eval_set, variants, repeats=int(st.session_state["evals:repeats"]),
            design=design, max_workers=int(st.session_state["evals:workers"]))
    except ValueError as exc:  # ExperimentError, a variant name pydantic refuses
        _flash(NEW, "error", f"Not started: {exc}")
        return
    st.session_state["evals:experiment"] = experiment_id
    st.session_state["evals:tab"] = RESULTS
    _flash(RESULTS, "success", f"Started “{name}”. Its runs are listed in History as they go.")


def _stop(experiment_id: str) -> None:
    cancelled = service.stop_experiment(experiment_id)
    _flash(RESULTS, "warning", f"Stopped: {cancelled} run(s) cancelled. The comparison counts "
                               "the runs that had finished.")


def _rerun(experiment_id: str) -> None:
    try:
        new_id = service.rerun_experiment(experiment_id)
    except (ExperimentError, KeyError) as exc:
        _flash(RESULTS, "error", str(exc))
        return
    st.session_state["evals:experiment"] = new_id
    _flash(RESULTS, "success", "Rerunning it as a new experiment, with exactly the recorded "
                               "prompt texts, design, eval set and repeats.")


def _judge(run_ids: list[str]) -> None:
    try:
        for run_id in run_ids:
            judge_run(store, run_id, settings=settings)
    except Exception as exc:  # JudgeUnavailable, a server that is down, a reply that is no JSON
        _flash(RESULTS, "error", f"The judge could not score the run: {exc}")
        return
    _flash(RESULTS, "success", f"Judged {len(run_ids)} run(s).")


# --------------------------------------------------------------------------- eval sets


def _eval_sets_tab() -> None:
    _show_flash(SETS)
    names = store.eval_set_names()
    if not names:
        st.info("No eval set saved yet. Stepwise ships a starter set: six questions over the "
                "bundled stock database and documents, each with checks, that run offline.")
        st.button("Save the starter set", type="primary", icon=":material/playlist_add:",
                  on_click=_save_starter, key="evals:starter")
    else:
        if st.session_state.get("evals:set") not in names:
            st.session_state["evals:set"] = names[0]
        name = st.selectbox("Eval set", names, key="evals:set", on_change=_picked_set)
        eval_set = store.load_eval_set(name)
        facts = (eval_set.description, ev.eval_set_facts(eval_set))
        st.markdown(" · ".join(p for p in facts if p))
        st.dataframe(pd.DataFrame(ev.question_rows(eval_set)), hide_index=True,
                     column_config={"Question": st.column_config.TextColumn(width="large"),
                                    "Checks": st.column_config.TextColumn(width="large")})
        _editor(name, eval_set)
        with st.container(horizontal=True):
            st.download_button("Export JSON", icon=":material/download:", key="evals:export",
                               data=ev.json_file(export_eval_set(eval_set)),
                               file_name=f"stepwise-eval-set-{ev.file_stem(name)}.json",
                               mime="application/json")
            with st.popover("Delete", icon=":material/delete:"):
                st.markdown(f"Delete the eval set “{name}”? Experiments that ran it keep "
                            "their own copy.")
                st.button(f"Delete “{name}”", type="primary", on_click=_delete, args=(name,),
                          key="evals:delete")
            if "starter" not in names:
                st.button("Add the starter set", on_click=_save_starter, key="evals:starter")
    st.file_uploader("Import an eval set (a JSON file exported from Stepwise)", type=["json"],
                     key="evals:import", on_change=_import)


def _editor(name: str, eval_set) -> None:
    # Keyed and tracked, so a message appearing above it does not fold it up again.
    with st.expander("Edit the questions and checks (JSON)", key="evals:edit-open",
                     on_change="rerun"):
        key = f"evals:editor:{name}"
        saved_text = ev.eval_set_text(eval_set)
        if key not in st.session_state:
            st.session_state[key] = saved_text
        edit_col, help_col = st.columns([3, 2], gap="large")
        with help_col:
            st.markdown("Each question has a list of checks; a run passes when it ends done "
                        "and every check passes. Check kinds:\n" + ev.check_kinds_help())
            st.caption("Change the name to save a copy under the new name.")
        with edit_col:
            text = st.text_area("Eval set JSON", key=key, height=460)
            problem = draft = None
            try:
                draft = ev.parse_eval_set_text(text)
            except EvalSetError as exc:
                problem = str(exc)
                st.error(f"Not valid: {problem}")
            if draft is not None and text != saved_text:
                st.caption(f"Valid: {ev.eval_set_facts(draft)}. "
                           + (f"Saving stores a new eval set “{draft.name}”."
                              if draft.name != name else "Not saved yet."))
            st.button("Save", type="primary", icon=":material/save:", disabled=problem is not None,
                      on_click=_save_edit, args=(name,), key="evals:save",
                      help="Fix the JSON first." if problem else None)


# --------------------------------------------------------------------------- new experiment


def _experiment_tab() -> None:
    _show_flash(NEW)
    names = store.eval_set_names()
    if not names:
        st.info(f"Save an eval set first, on the “{SETS}” tab.")
        return
    if st.session_state.get("evals:exp-set") not in names:
        chosen = st.session_state.get("evals:set")
        st.session_state["evals:exp-set"] = chosen if chosen in names else names[0]
    set_name = st.selectbox("Eval set", names, key="evals:exp-set")
    eval_set = store.load_eval_set(set_name)

    st.markdown("**Variants**")
    st.caption("A variant is a Planner prompt version and an Executor prompt version (save "
               "versions on the Prompts page). The other prompts are the ones the Run page "
               "uses.")
    versions = {role: {v.id: v for v in store.prompt_versions(prompt)}
                for role, prompt in ev.VARIANT_PROMPTS.items()}
    now = store.active_prompts()
    active = {role: now.get(prompt) for role, prompt in ev.VARIANT_PROMPTS.items()}
    st.caption(ev.active_caption(active))
    ids = st.session_state.setdefault("evals:variants", [0, 1])
    for position, variant_id in enumerate(ids):
        key = f"evals:variant:{variant_id}"
        label = "visible" if position == 0 else "collapsed"
        columns = st.columns([2, 4, 4, 1], vertical_alignment="bottom")
        columns[0].text_input("Variant name", value=ev.default_variant_name(position),
                              key=f"{key}:name", label_visibility=label)
        for column, role in zip(columns[1:3], ev.VARIANT_PROMPTS):
            options = [ev.SHIPPED_ID, *versions[role]]
            # The second variant onwards starts from what runs now: the active version,
            # else the newest saved one (listed first).
            newest = next(iter(versions[role]), ev.SHIPPED_ID)
            start = (getattr(active[role], "id", None) or newest) if position > 0 else ev.SHIPPED_ID
            column.selectbox(f"{role.capitalize()} prompt", options, index=options.index(start),
                             key=f"{key}:{role}", label_visibility=label,
                             format_func=lambda i, r=role: ev.version_label(versions[r].get(i)))
        if len(ids) > 2:
            columns[3].button("", icon=":material/close:", key=f"{key}:remove",
                              help="Remove this variant", on_click=_remove_variant,
                              args=(variant_id,))
    st.button("Add a variant", icon=":material/add:", on_click=_add_variant,
              key="evals:add-variant")

    name_col, repeats_col, workers_col = st.columns([4, 1, 1])
    names_typed = [st.session_state.get(f"evals:variant:{i}:name") or "?" for i in ids]
    name_col.text_input("Experiment name", key="evals:exp-name",
                        placeholder=ev.experiment_name(set_name, names_typed))
    repeats = repeats_col.number_input("Repeats", min_value=1, max_value=100, value=1,
                                       key="evals:repeats",
                                       help="How many times each variant runs each question.")
    workers = workers_col.number_input(
        "Runs at once", min_value=1, max_value=64, value=settings.experiment_workers,
        key="evals:workers", help="The experiment's own pool of workers (default: the "
                                  "STEPWISE_EXPERIMENT_WORKERS setting).")
    design = services.current_design()
    total = len(eval_set.questions) * len(ids) * int(repeats)
    st.caption(f"{len(eval_set.questions)} question(s) × {len(ids)} variants × {repeats} "
               f"repeat(s) = **{total} runs**, at most {workers} at a time, on "
               f"{settings.model_label}, with the saved design ({len(design.enabled_agents)} "
               f"agents, at most {design.max_replans} replan(s) per step). A run that needs "
               "a person's approval stops there and counts as not passed.")
    st.button("Start the experiment", type="primary", icon=":material/play_arrow:",
              on_click=_start, args=(set_name,), key="evals:start")


# --------------------------------------------------------------------------- results


def _progress(experiment_id: str) -> None:
    done, total = service.experiment_progress(experiment_id)
    record = store.experiment(experiment_id)
    if record is None or record.status != "running":
        st.rerun()  # finished or stopped: draw the comparison
    with st.container(horizontal=True, vertical_alignment="center"):
        st.progress(done / total if total else 0.0, text=f"{done} of {total} runs finished")
        st.button("Stop", icon=":material/stop:", on_click=_stop, args=(experiment_id,),
                  key="evals:stop")


def _settling(experiment_id: str, live: int) -> None:
    """After a stop, runs end after their current node: redraw when one has."""
    now = sum(1 for r in store.experiment_runs(experiment_id) if r["status"] in LIVE_STATUSES)
    if now != live:
        st.rerun()
    st.caption(f"{live} run(s) still stopping…")


def _styled(frame: pd.DataFrame, columns: list, colours):
    return frame.style.map(lambda v: f"background-color: {c}" if (c := colours(v)) else "",
                           subset=columns)


def _results_tab() -> None:
    _show_flash(RESULTS)
    experiments = {r.id: r for r in store.experiments()}
    if not experiments:
        st.info(f"No experiment yet: start one on the “{NEW}” tab.")
        return
    if st.session_state.get("evals:experiment") not in experiments:
        st.session_state["evals:experiment"] = next(iter(experiments))
    experiment_id = st.selectbox("Experiment", list(experiments), key="evals:experiment",
                                 format_func=lambda i: ev.experiment_label(experiments[i]))
    record = experiments[experiment_id]
    labels = {v.id: v.label for p in ev.VARIANT_PROMPTS.values() for v in store.prompt_versions(p)}
    st.table(ev.variant_rows(record, labels), hide_index=True)
    facts = [f"Status: {record.status}", f"eval set “{record.eval_set.get('name')}”",
             f"{record.repeats} repeat(s)", f"{record.total} runs",
             f"at most {record.max_workers} at a time"]
    if record.rerun_of and record.rerun_of in experiments:
        facts.append(f"a rerun of “{experiments[record.rerun_of].name}”")
    st.caption(" · ".join(facts))

    if record.status == "running":
        st.fragment(run_every=POLL_S)(_progress)(experiment_id)
        st.caption("The comparison appears here when every run has finished.")
        return
    st.button("Rerun this experiment", icon=":material/replay:", on_click=_rerun,
              args=(experiment_id,), key="evals:rerun",
              help="A new experiment with exactly the recorded prompt texts, design and eval "
                   "set; refused when the model settings differ from the recorded ones.")
    _comparison(record)


def _comparison(record) -> None:
    variants = [v["name"] for v in record.variants]
    baseline = st.selectbox("Baseline variant", variants, key=f"evals:baseline:{record.id}",
                            help="Each other variant is marked better, worse or the same as it "
                                 "(on means; fewer is better for all but the pass rate).")
    comparison = compare(store, record.id, baseline, settings.prices)
    data = comparison.as_dict()
    if record.status == "stopped":
        counted = sum(s["runs"] for s in data["summary"].values())
        st.warning(f"This experiment was stopped: {counted} of {record.total} runs ran to their "
                   "end, and the figures count only those.")
        live = sum(1 for r in store.experiment_runs(record.id) if r["status"] in LIVE_STATUSES)
        if live:
            st.fragment(run_every=POLL_S)(_settling)(record.id, live)

    st.subheader("Summary")
    st.markdown(ev.summary_sentence(data))
    summary = pd.DataFrame(ev.summary_rows(data))
    marks = [ev.vs_column(v, baseline) for v in variants if v != baseline]
    with st.container(key="evals-summary"):
        st.dataframe(_styled(summary, marks, ev.mark_colour), hide_index=True)
    st.caption("Each variant's mean against the baseline's: ▲ better, ▼ worse, = same, ? "
               "unknown (no finished runs, or a model without a price). Fewer steps, replans, "
               "calls, tokens, dollars and seconds are better, and a higher pass rate; "
               "latencies within 5% count as the same.")
    if unpriced := sorted({m for s in data["summary"].values() for m in s["unpriced"]}):
        st.caption(f"Cost unknown: no price for {', '.join(unpriced)} (set STEPWISE_PRICES).")

    st.subheader("Per question")
    st.caption("One row per question, a group of columns per variant (scroll sideways for "
               "all of them); each figure is the mean over the variant's repeats. Checks: one "
               "mark per check, numbered as in the table below (✓ passed, ✗ failed, ◐ passed "
               "in some repeats).")
    questions = pd.DataFrame(ev.question_rows_compared(data))
    questions.columns = pd.MultiIndex.from_tuples(questions.columns)  # a header per variant
    with st.container(key="evals-comparison"):
        st.dataframe(questions, hide_index=True)
    checks = pd.DataFrame(ev.check_rows(data))
    if not checks.empty:
        st.caption("Each check of each question: ✓ passed, ✗ failed, or the share of repeats "
                   "that passed it.")
        with st.container(key="evals-checks"):
            st.dataframe(_styled(checks, variants, ev.check_colour), hide_index=True)

    _distributions(record.id, variants)
    records = run_records(store, record.id, settings.prices)
    _runs(records)
    _two_runs(record, records, baseline)
    _judged(record, records)


def _distributions(experiment_id: str, variants: list[str]) -> None:
    found = ev.chart_records(distribution_records(store, experiment_id, settings.prices))
    if not found:
        return
    st.subheader("Distributions")
    st.caption("Each dot is a run; the boxes span the runs of a variant.")
    x = alt.X("variant:N", title=None, sort=variants, axis=alt.Axis(labelAngle=0))
    colour = alt.Color("variant:N", sort=variants, legend=None)
    box = alt.Chart().mark_boxplot(extent="min-max", size=30, opacity=0.35).encode(
        x=x, y=alt.Y("value:Q", title=None, axis=alt.Axis(format=",.4~f")), color=colour)
    dots = alt.Chart().mark_circle(size=55, opacity=0.9).encode(
        x=x, y="value:Q", color=colour,
        tooltip=["variant:N", "question:N", "repeat:Q", alt.Tooltip("value:Q", format=",.4~f")])
    chart = (alt.layer(box, dots, data=pd.DataFrame(found))
             .properties(width=220, height=170)
             .facet(facet=alt.Facet("metric:N", title=None,
                                    sort=list(ev.METRIC_LABELS.values())), columns=3)
             .resolve_scale(y="independent"))
    st.altair_chart(chart)


def _runs(records: list[dict]) -> None:
    st.subheader("Runs")
    st.caption("Every run of the experiment is an ordinary run: open it on the Run page, or "
               "find it in History.")
    st.dataframe(pd.DataFrame(ev.run_rows(records)), hide_index=True,
                 column_config={"Open": st.column_config.LinkColumn(
                     "Open", display_text="on the Run page ↗")})


def _two_runs(record, records: list[dict], baseline: str) -> None:
    st.subheader("Two runs side by side")
    questions = record.eval_set.get("questions") or []
    index = st.selectbox("Question", range(len(questions)), key=f"evals:pair-q:{record.id}",
                         format_func=lambda i: f"{i + 1}. {questions[i]['question']}")
    mine = [r for r in records if r["question_index"] == index and r["status"] != "deleted"]
    if len(mine) < 2:
        st.caption("This question has fewer than two runs to compare.")
        return
    by_id = {r["run_id"]: r for r in mine}
    ids = list(by_id)
    left = next((i for i, r in enumerate(mine) if r["variant"] == baseline), 0)
    right = next((i for i, r in enumerate(mine) if r["variant"] != mine[left]["variant"]),
                 1 if left == 0 else 0)
    a_col, b_col = st.columns(2, gap="large")
    run_a = a_col.selectbox("Left run", ids, index=left, key=f"evals:pair-a:{record.id}:{index}",
                            format_func=lambda i: ev.run_choice_label(by_id[i]))
    run_b = b_col.selectbox("Right run", ids, index=right,
                            key=f"evals:pair-b:{record.id}:{index}",
                            format_func=lambda i: ev.run_choice_label(by_id[i]))
    pair = side_by_side(store, run_a, run_b)
    for column, side in zip((a_col, b_col), ("a", "b")):
        view = pair[side]
        with column, st.container(key=f"evals-side-{side}"):
            st.markdown(f"**{by_id[view['run_id']]['variant']}** · status **{view['status']}** · "
                        f"{view['steps']} step(s) · {view['replans']} replan(s)")
            st.page_link("app_pages/run.py", label="Open it on the Run page",
                         icon=":material/play_circle:", query_params={"run": view["run_id"]})
            for plan in view["plans"]:
                st.markdown(f"**{ev.plan_title(plan)}**")
                st.table(ev.plan_rows(plan), hide_index=True)
            st.markdown("**The Executor's decisions**")
            if view["decisions"]:
                st.table(ev.decision_rows(view["decisions"]), hide_index=True)
            else:
                st.caption("None.")
            for decision in view["human_decisions"]:
                st.caption(f"A person decided: {decision}")
            st.markdown("**Answer**")
            with st.container(border=True):
                if view["answer"]:
                    st.markdown(view["answer"])
                else:
                    st.caption(f"No final answer ({view['status']}: {view['reason']}).")
            _judgement(view["run_id"])


def _judgement(run_id: str) -> None:
    if found := store.judgement(run_id):
        st.caption(f"Judged by {found['model_label']}:")
        st.table(ev.judgement_rows(found), hide_index=True)
    if judge_available(settings):
        st.button("Judge this run", icon=":material/gavel:", on_click=_judge, args=([run_id],),
                  key=f"evals:judge:{run_id}")


def _judged(record, records: list[dict]) -> None:
    st.subheader("Judged quality")
    counted = [r["run_id"] for r in records if r["counted"]]
    judged = {v["name"]: [j for r in records if r["variant"] == v["name"] and r["counted"]
                          and (j := store.judgement(r["run_id"]))] for v in record.variants}
    if rows := ev.judged_means(judged):
        st.caption("Mean judge scores, 1 (poor) to 5 (good), over the runs judged.")
        st.table(rows, hide_index=True)
    if judge_available(settings):
        st.caption("A model scores each run's plan quality, plan adherence, execution "
                   "efficiency and logical consistency (the editable prompt judge/gpa).")
        st.button("Judge every run of this experiment", icon=":material/gavel:",
                  on_click=_judge, args=(counted,), key="evals:judge-all",
                  disabled=not counted)
    else:
        st.caption("Judging plan quality, plan adherence, execution efficiency and logical "
                   "consistency needs a real model: set OPENAI_BASE_URL or OPENAI_API_KEY. The "
                   "offline scripted model cannot judge a run.")


sets_tab, new_tab, results_tab = st.tabs([SETS, NEW, RESULTS], key="evals:tab", on_change="rerun")
with sets_tab:
    _eval_sets_tab()
with new_tab:
    _experiment_tab()
with results_tab:
    _results_tab()
