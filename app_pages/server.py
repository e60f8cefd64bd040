"""Server: a console for any LangGraph Server, Stepwise's graphs or anyone else's.

Pick a graph the server serves, see it drawn and its threads; open a thread to read its
state field by field, its history checkpoint by checkpoint, its runs, and answer the
question it waits on. Nothing is kept here: the server holds the threads
(``graph.service.server_console``, ``ui.server_view``).
"""

import streamlit as st

from ui import server_view, widgets

THREAD = "server:thread"

st.title("Server")
st.markdown(
    "Attach to a **LangGraph Server** (`langgraph dev`, a self-hosted or cloud "
    "deployment) and watch the graphs it runs, even ones Stepwise did not define: their "
    "threads, state, history, and the questions they wait on."
)
url = st.text_input("Server URL", value=server_view.default_url(), key="server:url")
console, assistants = server_view.console_or_stop(url, server_view.send_key_choice(url))
labels = {a.assistant_id: a.label for a in assistants}
chosen = st.selectbox("Graph", list(labels), format_func=labels.__getitem__, key="server:assistant")
assistant = next(a for a in assistants if a.assistant_id == chosen)

threads = server_view.or_stop(lambda: console.threads(assistant.graph_id))
ids = [t.thread_id for t in threads]
if st.session_state.get(THREAD) not in ids:
    st.session_state.pop(THREAD, None)
thread_id: str = st.session_state.get(THREAD) or ""
state = server_view.or_stop(lambda: console.state(thread_id)) if thread_id else None

graph_column, threads_column = st.columns(2)
with graph_column:
    st.subheader("Graph")
    server_view.graph_drawing(console, assistant, state.next[0] if state and state.next else None)
with threads_column:
    st.subheader("Threads")
    if threads:
        st.dataframe(server_view.thread_rows(threads), hide_index=True, width="stretch")
    else:
        st.caption("No thread of this graph yet: start one below.")
    labels_of = {t.thread_id: server_view.thread_label(t) for t in threads}
    st.selectbox(
        "Open a thread",
        ids,
        index=None,
        format_func=labels_of.__getitem__,
        key=THREAD,
        placeholder="Pick a thread…",
    )
    server_view.start_form(console, assistant, THREAD)

widgets.flash(server_view.FLASH)
if state is None:
    st.stop()

st.subheader(f"Thread {state.thread_id[:8]}")
st.caption(
    f"{state.status or 'unknown'} · next: {', '.join(state.next) or 'nothing (finished)'}"
    f" · checkpoint {state.checkpoint_id[:8]}"
)
if state.status == "busy":
    server_view.watch(console, state.thread_id, state.status)
for item in state.interrupts:
    server_view.interrupt_form(console, assistant, state, item)
if state.next and not state.interrupts and state.status != "busy":
    server_view.continue_button(console, assistant, state)
shown_thread = state.thread_id
state_tab, history_tab, runs_tab = st.tabs(["State", "History", "Runs"])
with state_tab:
    server_view.state_fields(state)
with history_tab:
    history = server_view.or_stop(lambda: console.history(shown_thread))
    st.dataframe(server_view.history_rows(history), hide_index=True, width="stretch")
with runs_tab:
    runs = server_view.or_stop(lambda: console.runs(shown_thread))
    st.dataframe(server_view.run_rows(runs), hide_index=True, width="stretch")
