"""Tools: the MCP servers whose tools agents may use (stdio commands and streamable HTTP
URLs), each tool's description, input schema and policy, and a test call with JSON
arguments."""

import streamlit as st

from ui import tools_view, widgets

st.title("Tools")
st.markdown(
    "Connect **MCP servers** (Model Context Protocol) and see their tools. Each tool has a "
    "policy from its annotations: **read-only** tools run freely; **side-effecting** ones "
    "(and any the server says nothing about) ask a person first."
)
widgets.store_or_stop()
widgets.flash(tools_view.FLASH)
st.subheader("Servers")
tools_view.server_list()
with st.expander("Add a server", expanded=True):
    tools_view.add_form()
