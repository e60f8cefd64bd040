"""Streamlit pieces more than one page uses: the sidebar, and the parts of a run's view."""

from __future__ import annotations

import json
import time

import streamlit as st

from graph.plan_execute.agents import AGENTS
from ui import services
from ui.run_view import RunView, message_title, modes_text, plan_history_rows

MESSAGES_SHOWN = 40
MESSAGE_CHARS = 1200
def sidebar() -> None:
    """The model in use and where everything is kept, on every page."""
    with st.sidebar:
        settings = services.settings()
        st.caption("Model in use")
        st.markdown(f"**{settings.model_label}**")
        if settings.resolved_provider == "scripted":
            st.caption("Deterministic rules over the bundled data: no API key or network. "
                       "Set OPENAI_BASE_URL or OPENAI_API_KEY to use a real model.")
        st.page_link("app_pages/model.py", icon=":material/memory:",
                     label="Model settings")
        st.caption("Store")
        try:
            store = services.store()
            live = services.service().live_runs()
        except Exception as exc:  # an unwritable STEPWISE_HOME, a locked file...
            st.error(f"The store cannot be opened: {exc}")
            return
        st.markdown(f"`{store.path}`")
        st.caption(f"open · {len(live)} run(s) in progress" if live else "open · no run in progress")
        waiting = len(store.runs(status="waiting", limit=1000))
        if waiting:
            st.page_link("app_pages/approvals.py", icon=":material/front_hand:",
                         label=f"{waiting} run(s) waiting for a decision")


def notices(view: RunView) -> None:
    """The engine's and the model adapter's notes on the run: repairs, fallbacks, guards."""
    if view.notices:
        with st.expander(f"Notices ({len(view.notices)})"):
            st.markdown("\n".join(f"- {n}" for n in view.notices))


def say(flash_key: str, kind: str, text: str) -> None:
    """Leave a message ("success" or "error") for the page's next run to show: a
    callback's outcome, shown by ``flash`` where the page wants it."""
    st.session_state[flash_key] = (kind, text, time.time())


def flash(flash_key: str, keep_s: float = 0) -> None:
    """Show the message left by the last action: once, or (``keep_s``) for that many
    seconds, so a page redrawn by its watcher does not take it away before it is read."""
    found = st.session_state.get(flash_key)
    if not found:
        return
    kind, text, said_at = found
    if not keep_s or time.time() - said_at > keep_s:
        del st.session_state[flash_key]
        if keep_s:
            return
    (st.success if kind == "success" else st.error)(text)


def store_or_stop():
    """The store, or a readable error and the end of the page."""
    try:
        return services.store()
    except Exception as exc:
        st.error(f"The store under STEPWISE_HOME cannot be opened: {exc}")
        st.stop()


def design_graph(compiled, *, active: str | None = None, taken=()) -> None:
    from graph.render import to_dot

    st.graphviz_chart(to_dot(compiled, active=active, taken=taken), width="stretch")


def graph_legend(compiled) -> None:
    legend = ("Dashed: a route the node may choose. Blue: back to the executor; green: fixed "
              "chain; red: ends the run.")
    if "human" in compiled.get_graph().nodes:
        legend += (" The human node asks a person to approve a flagged step, or one at its "
                   "replan cap, before it goes on.")
    st.caption(legend)


def run_status(view: RunView) -> None:
    """The run's state in words; a failure says why, never with a traceback."""
    record = view.record
    from ui.run_view import format_duration

    took = format_duration(record.duration_s)
    if view.snapshot.get("system") == "supervisor_bus":
        facts = [f"status **{record.status}**", f"{len(view.rows)} request(s) to agents",
                 f"{len(view.snapshot.get('bus') or [])} message(s) on the bus"]
    elif view.snapshot.get("system") == "hierarchical_teams":
        subtasks = view.snapshot.get("rows") or []
        facts = [f"status **{record.status}**", f"{len(subtasks)} subtask(s)",
                 f"{sum(1 for r in subtasks if r['status'] == 'done')} done",
                 f"{len(view.snapshot.get('plans') or [])} plan(s)",
                 f"request revision {view.snapshot.get('request_revision') or 0}"]
    else:
        facts = [f"status **{record.status}**", f"{len(view.rows)} step(s)",
                 f"{record.replan_count} replan(s)"]
    if record.parent_run:
        facts.append(f"fork of run {record.parent_run[:8]}")
    if took:
        facts.append(took)
    facts.append(record.model_label)
    st.markdown(" · ".join(facts))
    if modes := modes_text(view.modes):
        st.caption(modes)
    if record.status == "failed":
        st.error(f"The run failed: {record.reason or 'no reason was recorded.'}")
    elif record.status in ("cancelled", "interrupted"):
        st.warning(f"The run was {record.status}: {record.reason}")
    elif record.status == "queued":
        st.info("Queued: it starts as soon as a worker is free.")
    # waiting / paused: the run panel shows what it waits for and the buttons to go on


STATUS_STYLE = {"pending": ":gray[pending]", "running": ":blue[**running**]",
                "waiting": ":violet[**waiting**]",
                "done": ":green[done]", "replanned": ":orange[**replanned**]",
                "skipped": ":gray[skipped]", "failed": ":red[**failed**]"}


def step_table(view: RunView) -> None:
    if view.rows:
        st.table([{**row, "Status": STATUS_STYLE.get(row["Status"], row["Status"])}
                  for row in view.rows], hide_index=True)
    elif view.live:
        st.info("The Planner is writing the plan…")
    else:
        st.info("This run has no plan steps.")


def plan_history(view: RunView) -> None:
    history = view.plan_history
    if not history:
        st.caption("No plan yet.")
        return
    for version in history:
        reason = version.get("reason") or ""
        title = f"Plan v{version.get('version')}"
        if reason and reason != "initial plan":
            title += f" — replanned at step {version.get('step')}"
        with st.expander(title, expanded=len(history) > 1 and version is history[-1]):
            if reason and reason != "initial plan":
                st.markdown(f"**Why the Executor asked for it:** {reason}")
            st.table(plan_history_rows(version), hide_index=True)


def message_list(messages: list[dict]) -> None:
    """Each message: who sent it and what kind, its text, its tool calls."""
    if not messages:
        st.caption("No messages match.")
        return
    if len(messages) > MESSAGES_SHOWN:
        st.caption(f"Showing the last {MESSAGES_SHOWN} of {len(messages)} messages; pick a "
                   "step or an agent to narrow them down.")
        messages = messages[-MESSAGES_SHOWN:]
    for message in messages:
        with st.container(border=True):
            st.markdown(f"**{message_title(message)}**")
            content = message.get("content") or ""
            if len(content) <= MESSAGE_CHARS:
                if content:
                    st.text(content)
            else:
                st.text(content[:MESSAGE_CHARS] + " …")
                with st.expander(f"The whole message ({len(content):,} characters)"):
                    st.text(content)
            for call in message.get("tool_calls") or []:
                st.code(f"{call['name']}({json.dumps(call['args'], ensure_ascii=False)})",
                        language="python", wrap_lines=True)


def final_answer(view: RunView) -> None:
    snapshot = view.snapshot
    answer = snapshot.get("final_answer") or view.record.final_answer
    if answer:
        st.markdown(answer)
    elif view.live or view.record.status in ("waiting", "paused"):
        st.caption("The final answer appears here when the supervisor finishes the run."
                   if snapshot.get("system") == "supervisor_bus" else
                   "The final answer appears here when the lead supervisor has no subtask "
                   "left: every subtask's result, in plan order."
                   if snapshot.get("system") == "hierarchical_teams" else
                   "The final answer appears here when the synthesizer has written it.")
    else:
        st.caption("This run ended without a final answer.")
    citations = snapshot.get("citations") or []
    if citations:
        with st.expander(f"Sources cited ({len(citations)})"):
            st.markdown("\n".join(_citation(c) for c in citations))
    if spec := snapshot.get("chart_spec"):
        st.vega_lite_chart(spec=spec, width="stretch")
        if caption := snapshot.get("chart_caption"):
            st.caption(caption)


def _citation(citation: dict) -> str:
    title = citation.get("title") or ""
    url = citation.get("url")
    if title.startswith("SQL: "):
        title = f"SQL `{title.removeprefix('SQL: ')}`"
    text = f"[{citation['id']}] {title}".strip()
    return f"- {text} ({url})" if url else f"- {text}"


def agent_groups(system: str) -> dict[str, list[str]]:
    """The agents of a system as the Design page lists them: by team when the system has
    teams (its catalog's ``TEAMS``), else one unnamed group."""
    from importlib import import_module

    from graph.systems import get_system

    info = get_system(system)
    catalog = import_module(info.catalog)
    agents = info.agents()
    teams = getattr(catalog, "TEAMS", None)
    if not teams:
        return {"": list(agents)}
    return {team: [n for n, spec in agents.items() if spec.team == team] for team in teams}


def group_caption(system: str, group: str) -> str:
    from importlib import import_module

    from graph.systems import get_system

    team = getattr(import_module(get_system(system).catalog), "TEAMS", {}).get(group)
    return f"a team that {team.description} On when one of its workers is." if team else ""


def agent_caption(name: str, system: str = "plan_execute") -> str:
    if system == "plan_execute":
        spec = AGENTS[name]
        return f"{spec.description} After it: {spec.routing_label}."
    from graph.systems import get_system

    spec = get_system(system).agents()[name]
    return f"{spec.description} Tools: {', '.join(spec.tools)}."
