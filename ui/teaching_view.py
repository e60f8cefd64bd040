"""The teaching scenario of supervisor_bus on the Run page: the same three-agent task on
a shared blackboard and on the bus, side by side (``blackboard_vs_bus``)."""

from __future__ import annotations

import json

import streamlit as st


@st.cache_data(show_spinner="Running the task both ways…")
def _result() -> dict:
    from graph.supervisor_bus.teaching import blackboard_vs_bus

    return json.loads(json.dumps(blackboard_vs_bus().as_dict(), default=str))


def _value(value) -> str:
    text = str(value)
    return text if len(text) <= 90 else text[:90] + " …"


def expander() -> None:
    with st.expander("Teaching: why a shared blackboard breaks from three agents — and the "
                     "bus does not", icon=":material/school:",
                     expanded=st.session_state.get("teaching:shown", False)):
        st.caption("The same task runs twice with no model: once on one flat state without "
                   "reducers, once on the message bus. Nothing is stored as a run.")
        if st.button("Run both versions", key="teaching:run", icon=":material/compare_arrows:"):
            st.session_state["teaching:shown"] = True
        if not st.session_state.get("teaching:shown"):
            return
        result = _result()
        st.markdown(f"**Task.** {result['task']}  \n**Question.** {result['question']}")
        board, bus = result["blackboard"], result["bus"]
        left, right = st.columns(2, gap="large")
        with left, st.container(key="teaching-blackboard"):
            st.markdown(f"#### Shared blackboard\n{board['coordination']}")
            st.markdown(f"**{' and '.join(board['parallel_agents'])} write in one parallel "
                        "step:**")
            if board["parallel_error_type"]:
                st.error(f"`{board['parallel_error_type']}`: {board['parallel_error']}")
            else:
                st.success("No error.")
            st.markdown("**One agent at a time: no error, but writes are lost silently.**")
            lost = {(x["step"], x["key"]): x for x in board["lost_writes"]}
            rows = []
            for w in board["writes"]:
                gone = lost.get((w["step"], w["key"]))
                rows.append({"Step": w["step"], "Agent": w["agent"], "Key": w["key"],
                             "Lost": f"LOST: overwritten by {gone['overwritten_by']} at step "
                                     f"{gone['overwritten_at_step']}" if gone else "kept",
                             "Value": _value(w["value"])})
            st.table(rows, hide_index=True)
            st.markdown(f"**Answer:** {board['answer']}")
            if not board["findings_reached_answer"]:
                st.warning("The researcher's findings never reached the answer.")
        with right, st.container(key="teaching-bus"):
            st.markdown(f"#### Message bus\n{bus['coordination']}")
            st.markdown(f"**{' and '.join(bus['parallel_agents'])} write in one parallel "
                        "step:**")
            if bus["parallel_error_type"]:
                st.error(f"`{bus['parallel_error_type']}`: {bus['parallel_error']}")
            else:
                st.success("No error: both messages were appended to the bus.")
            st.markdown(f"**{len(bus['writes'])} message(s) written, "
                        f"{len(bus['lost_writes'])} lost.**")
            st.table([{"Id": m["id"], "From": m["from"], "To": m["to"], "Type": m["type"],
                       "Payload": _value(m["payload"])} for m in bus["bus"]], hide_index=True)
            st.markdown(f"**Answer:** {bus['answer']}")
            if bus["findings_reached_answer"]:
                st.success("The researcher's findings reached the answer.")
        st.markdown("\n".join(f"- {lesson}" for lesson in result["lessons"]))
