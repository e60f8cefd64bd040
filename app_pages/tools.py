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
    "An agent you define on the Design page (*New agent*) can be given these tools once "
    "they are listed here; a side-effecting one asks a person first, with its exact arguments."
)
widgets.store_or_stop()
widgets.flash(tools_view.FLASH)
st.subheader("Servers")
tools_view.server_list()
with st.expander("Add a server", expanded=True):
    tools_view.add_form()
