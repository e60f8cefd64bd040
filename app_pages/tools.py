"""Tools: the MCP servers whose tools agents may use (stdio commands and streamable HTTP
URLs), each tool's description, input schema and policy, and a test call with JSON
arguments."""

import streamlit as st

from ui import tools_view, widgets

st.title("Tools")
st.markdown(
    "Connect **MCP servers** (Model Context Protocol), see their tools and call one to test "
    "it. Each tool's policy is read from its annotations: **read-only**, or "
    "**side-effecting** (also when the server says nothing); you may choose it per tool. "
    "A side-effecting tool an agent calls asks a person first, with its exact arguments. "
    "Runs do not use these tools yet: agents that call them are to come."
)
widgets.store_or_stop()
widgets.flash(tools_view.FLASH)
st.subheader("Servers")
tools_view.server_list()
with st.expander("Add a server", expanded=True):
    tools_view.add_form()
