"""History: every run in the store; open one, walk through its checkpoints, fork or replay
it from any of them, export it as JSON or import one, delete it."""

import json
import logging

import pandas as pd
import streamlit as st

from graph.kernel.design import Design
from graph.service.store import STATUSES
from ui import history_actions as actions
from ui import (
    history_open,
    moved_tabs,
    playground_view,
    prompt_fork,
    run_actions,
    run_panel,
    services,
    teams_fork,
    two_run_review,
    widgets,
)
from ui import history_view as hv

log = logging.getLogger(__name__)

st.title("History")
st.markdown(
    "Every run kept in the store. Open one to see its steps, answer and messages, "
    "walk through its **checkpoints** (the state LangGraph saved after each node), "
    "and **fork** it: go on from a checkpoint as a new run, with the plan or the agent's "
    "query changed, or replay it unchanged. Click a row of the table to open its run."
)

store = widgets.store_or_stop()
service = services.service()
TABLE = "history-table"  # the runs table; its selection state marks the opened run
DRAWN = "history:drawn"  # (run ids in table order, selected rows) as last drawn
FORKED, OPENED, TAB = actions.FORKED, actions.OPENED, actions.TAB
# The page's callbacks and labels live in ui.history_actions / dicts: a function defined
# here would keep this page's namespace (every listed run) in each session Streamlit keeps.


with st.expander("Import a run from a JSON export"):
    st.file_uploader(
        "Run export (.json)", type=["json"], key="history:import", on_change=actions.import_run
    )
widgets.flash(actions.FLASH)

STATUS_CHOICES: list[str | None] = [None, *STATUSES]
STATUS_LABELS: dict[str | None, str] = {None: "all statuses", **{s: s for s in STATUSES}}
by_status, by_text = st.columns([1, 3])
status = by_status.selectbox(
    "Status",
    STATUS_CHOICES,
    key="history:status",
    format_func=STATUS_LABELS.__getitem__,
)
text = by_text.text_input(
    "Question contains", key="history:text", placeholder="a word of the question, e.g. Tesla"
)
# as this process knows them: a run whose end the store could not take yet is not "running"
runs = [services.as_known(r) for r in store.runs(status=status, text=text, limit=200)]
listed_ids = [r.id for r in runs]
# The opened run: a link (?run=<id>, also what a fork or import sets) wins when it names
# another run; else the one opened before; on a first visit, the newest run.
linked = st.query_params.get("run")
if linked and linked != st.session_state.get(OPENED):
    actions.open_run(linked)
elif OPENED not in st.session_state:
    actions.open_run(listed_ids[0] if listed_ids else None)
drawn_ids, drawn_rows = st.session_state.get(DRAWN, ([], []))
clicked = history_open.clicked_run(st.session_state.get(TABLE), drawn_ids, drawn_rows)
if clicked != history_open.UNCHANGED:
    actions.open_run(clicked)
opened_id = st.session_state[OPENED]
if opened_id:
    st.query_params["run"] = opened_id  # back from another page, the address says it too

used = {name for r in runs for name in r.prompt_versions}
labels = {v.id: v.label for name in used for v in store.prompt_versions(name)}
if not runs:
    st.info("No run matches." if status or text else "No runs yet: ask a question on the Run page.")
    st.session_state.pop(DRAWN, None)
else:
    selection = history_open.table_selection(opened_id, listed_ids)
    rows_now, cells_now = history_open.selected(st.session_state.get(TABLE))
    if (rows_now, cells_now) != (selection["selection"]["rows"], []):
        st.session_state[TABLE] = selection  # the row of the opened run, wherever it is now
    st.dataframe(
        pd.DataFrame(
            hv.history_rows(
                runs,
                labels,
                store.evals.experiment_places(listed_ids),
                store.idle_events(listed_ids),
            )
        ),
        hide_index=True,
        key=TABLE,
        on_select="rerun",
        selection_mode=["single-row", "single-cell"],  # a click on any cell opens its row
        # Sized to fit a 1280 px screen with the sidebar: no sideways scrolling. The run's
        # id, agents and prompts are shown above the opened run.
        column_order=hv.LISTED_COLUMNS,
        column_config={
            name: st.column_config.TextColumn(width=width, help=hv.COLUMN_HELP.get(name))
            for name, width in hv.LISTED_COLUMNS.items()
        },
    )
    st.session_state[DRAWN] = (listed_ids, selection["selection"]["rows"])
    two_run_review.show(runs)
# The opened run's status as listed; the listing itself (200 records) is let go here, so
# it is not held while the opened run's tabs build their timeline, trace and export files:
# the page's peak of memory is the larger of the two parts, not their sum (issue 33).
listed_status = next((r.status for r in runs if r.id == opened_id), None)
any_listed = bool(runs)
del runs

record = services.run_record(store, opened_id) if opened_id else None
shown = history_open.opened_view(
    opened_id, record.question if record else None, listed_ids, bool(status or text)
)
if not any_listed and not opened_id:
    st.stop()
st.divider()
if shown.hidden_by_filter:
    st.warning(shown.note)
    st.button("Clear the filter", icon=":material/filter_alt_off:", on_click=actions.clear_filter)
elif shown.note and not shown.show:
    st.info(shown.note)
elif shown.note:
    st.caption(shown.note)
if not shown.show:
    st.stop()
assert record is not None  # a run is shown only when the store has it
run_id = opened_id
forked = st.session_state.get(FORKED)
if forked and forked[0] == run_id:
    st.success(forked[1])  # stays while the fork is open, however often the page redraws
elif forked:
    del st.session_state[FORKED]
system = services.system_of(record.design)
view = services.view_of_design(record.design)
facts = [f"Run `{run_id}`", f"question: “{record.question}”"]
if record.parent_run:
    facts.append(
        f"fork of `{hv.short_id(record.parent_run)}` at checkpoint "
        f"`{hv.short_id(record.parent_checkpoint)}`"
    )
st.markdown(" · ".join(facts))
st.caption(
    f"Agents: {hv.agents_label(record.design)} · prompts: "
    f"{hv.prompts_label(record.prompt_versions, labels)}"
)
link, remove = st.columns([3, 1], vertical_alignment="center")
link.page_link(
    "app_pages/run.py",
    label="Open it on the Run page",
    icon=":material/play_circle:",
    query_params={"run": run_id},
)
with remove.popover("Delete run", icon=":material/delete:"):
    st.markdown(f"Delete run `{hv.short_id(run_id)}`, its events and its checkpoints?")
    st.button(
        "Delete", type="primary", key="history:delete", on_click=actions.delete, args=(run_id,)
    )

run_tab, timeline_tab, fork_tab, export_tab = moved_tabs.tabs(  # a fork opens "Run"
    ["Run", "Checkpoint timeline", "Fork or replay", "Export"], key=TAB
)
try:
    timeline = hv.name_fork_origin(service.timeline(run_id), record.parent_run)
except Exception as exc:  # a design this build cannot compile
    log.warning("run %s: no timeline, its design cannot be built here: %s", run_id, exc)
    timeline, timeline_problem = [], str(exc)
else:
    timeline_problem = ""

with run_tab:
    run_panel.show(store, run_id, key="history", seen_status=listed_status or record.status)

with timeline_tab:
    if not timeline:
        st.info(
            timeline_problem
            or "This run has no checkpoints in this app (an imported run "
            "keeps its events, not LangGraph's state): nothing to walk through or fork."
        )
    else:
        st.caption(
            "One row per checkpoint: the node that produced it, what runs next, and "
            "the system's state fields at that point. Yellow cells changed since the "
            "previous checkpoint."
        )
        frame = pd.DataFrame(hv.timeline_rows(timeline, view))
        changed = [hv.changed_columns(p, view) for p in timeline]
        styled = frame.style.apply(
            lambda row: [
                "background-color: #fff3b0" if c in changed[row.name] else "" for c in frame.columns
            ],
            axis=1,
        )
        st.dataframe(styled, hide_index=True, key="history-timeline")
        index = st.selectbox(
            "What changed at checkpoint",
            [p["index"] for p in timeline],
            index=len(timeline) - 1,
            key=f"history:diff:{run_id}",
            format_func={p["index"]: hv.checkpoint_label(p) for p in timeline}.__getitem__,
        )
        point = timeline[index]
        playground_view.checkpoint_button(run_id, point, key=f"history:try:{run_id}")
        if point["diff"]:
            st.markdown(f"Changed by **{point['node']}**: before → after")
            st.table(hv.diff_rows(point["diff"], view.field_label), hide_index=True)
            if long := hv.long_changes(point["diff"], view.field_label):
                with st.expander(f"Full text of the {len(long)} value(s) cut short above"):
                    for row in long:
                        st.markdown(f"**{row['Field']}** {row['Key']}".strip())
                        st.code(
                            f"before: {row['Before']}\nafter:  {row['After']}",
                            language=None,
                            wrap_lines=True,
                        )
            with st.expander("Raw JSON of this change"):
                st.json(point["diff"], expanded=True)
        else:
            st.caption("Nothing in the system's fields changed at this checkpoint.")
        if point["messages"]:
            st.caption("Last messages at this point:")
            st.text("\n".join(point["messages"]))
    teams_fork.inner_timeline(service, run_id, timeline)  # checkpoints inside the teams

with fork_tab:
    st.markdown("**Replay the whole run from its recording**")
    st.caption(
        "A new run of the same question and design in which every model call is answered "
        "with the reply this run received: no model server is asked, so a run made on a "
        "real model can be shown offline, exactly as it went. Tools run again (the "
        "bundled ones give the same results); an approval asks again."
    )
    replay_pace, replay_step, replay_go = st.columns([2, 1, 1], vertical_alignment="bottom")
    replay_pace.selectbox(
        "Pace",
        run_actions.pace_choices(),
        key="history:replay-pace",
        format_func=run_actions.pace_label,
    )
    replay_step.checkbox("Step mode", key="history:replay-step-mode")
    replay_go.button(
        "Replay the run",
        icon=":material/play_circle:",
        on_click=actions.replay,
        args=(run_id,),
        disabled=record.is_live,
        help="Once the run has ended." if record.is_live else None,
        key="history:replay",
    )
    st.divider()
    st.markdown("**Go on from a checkpoint**")
    points = hv.forkable(timeline)
    if not points:
        st.info(
            "No checkpoint to go on from: "
            + (timeline_problem or "the run has no checkpoints here, or only its input and end.")
        )
    else:
        st.caption(
            "Pick a checkpoint: the new run starts from the state saved there, with "
            "your change, and goes on to the end. The original run is not touched."
        )
        by_id = {p["checkpoint_id"]: p for p in points}
        # the first checkpoint after the system's entry node ran (its first plan, say)
        default = next(
            (p["checkpoint_id"] for p in points if p["node"] == system.shape.entry),
            points[0]["checkpoint_id"],
        )
        checkpoint_id = st.selectbox(
            "Checkpoint",
            list(by_id),
            key=f"history:fork-point:{run_id}",
            index=list(by_id).index(default),
            format_func={c: hv.checkpoint_label(p) for c, p in by_id.items()}.__getitem__,
        )
        point = by_id[checkpoint_id]
        changes = [*hv.editable_fields(point, system), "nothing"]
        change = st.radio(
            "Change",
            changes,
            horizontal=True,
            key="history:fork-change",
            format_func={
                f: "nothing (run on from here as it was)"
                if f == "nothing"
                else f"the {view.field_label(f).lower()}"
                for f in changes
            }.__getitem__,
        )
        design = Design.model_validate(record.design)
        key = f"history:change:{change}:{checkpoint_id}"  # a subtask plan: edited as a table
        if change != "nothing" and not teams_fork.table_editor(view, point, change, design, key):
            value = point["fields"].get(change)
            structured = isinstance(value, (dict, list))
            text = st.text_area(
                f"{view.field_label(change)}" + (" (JSON)" if structured else ""),
                value=json.dumps(value or {}, indent=2, ensure_ascii=False)
                if structured
                else str(value or ""),
                key=f"history:change:{change}:{checkpoint_id}",
                height=260 if structured else 100,
            )
            try:
                system.forks.check_fork_change(change, text, design)
            except ValueError as exc:
                st.error(str(exc))
            st.caption(
                f"Agents of this run's design: {', '.join(design.enabled_agents)}. Going "
                f"on from here, {', '.join(point['next'])} runs next with this "
                f"{view.field_label(change).lower()}."
            )
        fork_pace, fork_step = st.columns([2, 2], vertical_alignment="bottom")
        paces = run_actions.pace_choices(design.pace_s)
        if st.session_state.get("history:fork-pace") not in paces:
            st.session_state["history:fork-pace"] = design.pace_s  # the run's own, at first
        fork_pace.selectbox(
            "Pace",
            paces,
            key="history:fork-pace",
            format_func=run_actions.pace_label,
            help=f"How long the new run holds each node's result; this run's pace was "
            f"{run_actions.pace_label(design.pace_s)}.",
        )
        fork_step.checkbox(
            "Step mode",
            key="history:fork-step-mode",
            help="Pause the new run before every node, as on the Run page.",
        )
        replay = change == "nothing"
        st.button(
            "Run on from here" if replay else "Run on as a new run",
            type="primary",
            icon=":material/replay:" if replay else ":material/call_split:",
            on_click=actions.fork,
            args=(run_id, checkpoint_id, change, design),
            key="history:fork",
        )
        st.divider()
        prompt_fork.form(run_id, checkpoint_id, record)

with export_tab:
    st.caption(
        "One JSON file with the run's record, its design and prompt versions, its final "
        "state and every event. No API key is ever in it. Import it on any Stepwise to "
        "view it."
    )
    if record.is_live:
        st.caption("The run is still going: the file holds it as far as it has got now.")
    st.download_button(
        "Export run JSON",
        key="history:export",
        icon=":material/download:",
        on_click="ignore",
        # Made with the page, not on click: Streamlit's deferred download (a callable)
        # is forgotten when a fragment of the page reruns first ("Deferred file not found").
        data=actions.export_file(run_id),
        file_name=f"stepwise-run-{hv.short_id(run_id)}.json",
        mime="application/json",
    )
    st.caption(
        "The run's trace as OpenTelemetry spans (GenAI conventions) in OTLP/JSON, to load "
        "into Phoenix, Jaeger, Grafana Tempo or any OTel backend. No API key is in it; "
        "messages only if you tick the box."
    )
    with_content = st.checkbox("With message contents", key="history:trace-content")
    st.download_button(
        "Export trace (OTLP JSON)",
        key="history:export-trace",
        icon=":material/timeline:",
        on_click="ignore",
        data=actions.trace_file(run_id, with_content),
        file_name=f"stepwise-trace-{hv.short_id(run_id)}.otlp.json",
        mime="application/json",
    )
