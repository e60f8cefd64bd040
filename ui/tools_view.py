"""The Tools page's parts: the MCP servers connected, their tools (description, input
schema, policy), adding a server, and testing a tool with JSON arguments.

Adding a stdio server runs a program on the app's machine: it is an admin's action where
sign-in is on (``mcp_stdio``), an HTTP one an editor's (``mcp_http``); so is confirming a
stdio server an imported design brought (stored pending, its command shown, never started
before), and choosing a tool's policy (who may change the server). Each listing or call
is bounded by ``graph.tools.mcp_servers.DEADLINE_S`` and ends as a result or one sentence.
"""

from __future__ import annotations

import shlex

import streamlit as st

from graph.errors import StepwiseError
from graph.tools.mcp_config import McpServerConfig, make_config
from graph.tools.mcp_servers import DEADLINE_S, READ_ONLY, call_tool, list_tools
from ui import access, services, widgets

FLASH = "tools:flash"
TRANSPORTS = {"streamable_http": "Streamable HTTP (a URL)", "stdio": "stdio (a command run here)"}
POLICY_WORDS: dict[str, str] = {
    READ_ONLY: "read-only: runs freely",
    "side_effecting": "side-effecting: asks a person first",
}
ENV_NOTE = (
    "One NAME=value a line. A value written as ${VAR} is read from the app's own "
    "environment variable VAR when the server starts, and only that reference is stored. "
    "Any other value is treated as a secret: it is kept in this app's memory only (never in "
    "the store, a log or an export) and must be typed again after a restart."
)


def _action(config: McpServerConfig) -> str:
    return "mcp_stdio" if config.transport == "stdio" else "mcp_http"


def _env_lines(text: str) -> dict[str, str]:
    env = {}
    for number, line in enumerate((text or "").splitlines(), 1):
        if not line.strip():
            continue
        name, sep, value = line.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"Environment line {number} is not NAME=value.")
        env[name.strip()] = value.strip()
    return env


def add_form() -> None:
    """Add a server: a URL, or (admins) a command with arguments and environment."""
    transport = st.radio(
        "Transport",
        list(TRANSPORTS),
        format_func=TRANSPORTS.get,
        key="tools:add:transport",
        horizontal=True,
    )
    st.text_input("Name", key="tools:add:name", placeholder="e.g. time")
    if transport == "stdio":
        if not access.may("mcp_stdio"):
            st.info(
                f"Adding a stdio server runs a program on the app's machine: an admin's "
                f"action, and {access.role_words()}."
            )
            return
        st.text_input("Command", key="tools:add:command", placeholder="e.g. uvx or python")
        st.text_input(
            "Arguments",
            key="tools:add:args",
            placeholder="e.g. -m mcp_server_time --local-timezone UTC",
            help="Split as a shell would; quote an argument with spaces.",
        )
        st.text_area("Environment", key="tools:add:env", help=ENV_NOTE, height=80)
        st.caption(ENV_NOTE)
    else:
        st.text_input(
            "URL",
            key="tools:add:url",
            placeholder="e.g. http://127.0.0.1:8000/mcp",
            help="http or https, no user name or password in it; redirects off its host "
            "are refused.",
        )
    st.button("Add server", key="tools:add", icon=":material/add_link:", on_click=_add)


def _add() -> None:
    state = st.session_state
    transport = state.get("tools:add:transport", "streamable_http")
    action = "mcp_stdio" if transport == "stdio" else "mcp_http"
    person = access.permitted(action, FLASH)
    if person is None:
        return
    try:
        config = make_config(
            state.get("tools:add:name", ""),
            transport,
            command=state.get("tools:add:command", "") if transport == "stdio" else "",
            args=shlex.split(state.get("tools:add:args", "")) if transport == "stdio" else (),
            env=_env_lines(state.get("tools:add:env", "")) if transport == "stdio" else None,
            url=state.get("tools:add:url", "") if transport != "stdio" else "",
        )
        store = services.store()
        store.mcp_servers.add(config, added_by=person.by)
        store.audit.record(person.by, "MCP server added", config.name, config.described())
    except (StepwiseError, ValueError) as exc:
        widgets.say(FLASH, "error", str(exc))
        return
    for key in ("name", "command", "args", "env", "url"):
        state.pop(f"tools:add:{key}", None)
    widgets.say(FLASH, "success", f"Added the MCP server “{config.name}”: list its tools below.")


def server_list() -> None:
    """Each server: what it is, what it lacks, its tools once listed, and a tool test."""
    store = services.store()
    servers = store.mcp_servers.all()
    if not servers:
        st.caption("No MCP server yet: add one below.")
        return
    for config in servers:
        with st.container(border=True):
            _server(config, store.mcp_servers.missing(config.name))


def _missing_words(name: str, variable: str | None) -> str:
    if variable is None:
        return f"{name} (typed, gone since the app restarted: type it again)"
    return f"{name} (${{{variable}}} is not set in the app's environment)"


def _pending(config: McpServerConfig) -> None:
    """A server an imported file brought: its command, shown, and nothing started."""
    st.warning(
        f"From an imported file, not confirmed: this server runs the command "
        f"`{config.described()}` on the app's machine. Nothing is started until an admin "
        "confirms it; remove it if you do not know it."
    )
    left, right = st.columns(2)
    left.button(
        "Confirm: let this command run",
        key=f"tools:confirm:{config.name}",
        icon=":material/verified_user:",
        on_click=_confirm,
        args=(config.name,),
        disabled=not access.may("mcp_stdio"),
        help="Confirming is an admin's action: the command runs when its tools are listed "
        "or called.",
    )
    right.button(
        "Remove",
        key=f"tools:remove:{config.name}",
        icon=":material/delete:",
        on_click=_remove,
        args=(config.name,),
        disabled=not access.may(_action(config)),
    )


def _confirm(name: str) -> None:
    config = _config(name)
    person = access.permitted("mcp_stdio", FLASH)
    if config is None or person is None:
        return
    store = services.store()
    store.mcp_servers.confirm(name)
    store.audit.record(person.by, "MCP server confirmed", name, config.described())
    widgets.say(FLASH, "success", f"Confirmed the MCP server “{name}”: list its tools below.")


def _server(config: McpServerConfig, missing: list[tuple[str, str | None]]) -> None:
    kind = "stdio" if config.transport == "stdio" else "HTTP"
    st.markdown(f"**{config.name}** · {kind} · `{config.described()}`")
    if config.pending:
        _pending(config)
        return
    for name, variable in missing:
        st.warning(f"Not set for this server: {_missing_words(name, variable)}.")
    gone = [name for name, variable in missing if variable is None]
    if gone and access.may(_action(config)):
        _type_again(config.name, gone)
    left, right = st.columns(2)
    left.button(
        "List tools",
        key=f"tools:list:{config.name}",
        icon=":material/list:",
        on_click=_list,
        args=(config.name,),
        help=f"Connects to the server (at most {DEADLINE_S:g} s) and lists its tools.",
    )
    right.button(
        "Remove",
        key=f"tools:remove:{config.name}",
        icon=":material/delete:",
        on_click=_remove,
        args=(config.name,),
        disabled=not access.may(_action(config)),
    )
    listed = st.session_state.get(f"tools:listed:{config.name}")
    if listed is None:
        return
    if isinstance(listed, str):
        st.error(listed)
        return
    if not listed:
        st.caption("The server lists no tools.")
        return
    policies = services.store().mcp_servers.policies(config.name)
    for tool in listed:
        policy = policies.get(tool["name"], tool["policy"])
        with st.expander(f"{tool['name']} · {POLICY_WORDS[policy]}"):
            st.markdown(tool["description"] or "_No description._")
            _policy_choice(config, tool["name"], policy, tool["policy"])
            st.caption("Input schema")
            st.json(tool["input_schema"], expanded=True)
            if tool["annotations"]:
                st.caption(
                    "Annotations: "
                    + ", ".join(f"{k}={v}" for k, v in sorted(tool["annotations"].items()))
                )
    _tester(config.name, [t["name"] for t in listed])


def _policy_choice(config: McpServerConfig, tool: str, policy: str, default: str) -> None:
    key = f"tools:policy:{config.name}:{tool}"
    st.session_state[key] = policy  # the stored choice, whoever made it
    st.radio(
        "Policy",
        list(POLICY_WORDS),
        format_func=POLICY_WORDS.get,
        key=key,
        horizontal=True,
        on_change=_set_policy,
        args=(config.name, tool),
        disabled=not access.may(_action(config)),
        help=f"From the tool's annotations: {POLICY_WORDS[default]}. A side-effecting tool "
        "asks a person, with its exact arguments, before each call an agent makes.",
    )


def _set_policy(server: str, tool: str) -> None:
    config = _config(server)
    person = None if config is None else access.permitted(_action(config), FLASH)
    if config is None or person is None:
        return
    policy = st.session_state.get(f"tools:policy:{server}:{tool}", "side_effecting")
    store = services.store()
    try:
        store.mcp_servers.set_policy(server, tool, policy, person.by)
    except StepwiseError as exc:
        widgets.say(FLASH, "error", str(exc))
        return
    store.audit.record(person.by, "MCP tool policy set", f"{server}/{tool}", policy)
    widgets.say(FLASH, "success", f"“{tool}” is now {POLICY_WORDS[policy]}.")


def _type_again(server: str, names: list[str]) -> None:
    """Fields for the typed values a restart took away (kept in memory only, again)."""
    for name in names:
        st.text_input(name, type="password", key=f"tools:env:{server}:{name}")
    st.button(
        "Keep these values",
        key=f"tools:env:{server}",
        on_click=_keep_values,
        args=(server, names),
        help="Kept in this app's memory only, as when the server was added.",
    )


def _keep_values(server: str, names: list[str]) -> None:
    config = _config(server)
    if config is None or access.permitted(_action(config), FLASH) is None:
        return
    values = {n: st.session_state.get(f"tools:env:{server}:{n}", "") for n in names}
    try:
        services.store().mcp_servers.type_env(server, values)
    except StepwiseError as exc:
        widgets.say(FLASH, "error", str(exc))
        return
    for name in names:
        st.session_state.pop(f"tools:env:{server}:{name}", None)
    widgets.say(FLASH, "success", f"Kept the typed values of “{server}” in memory.")


def _tester(server: str, tools: list[str]) -> None:
    st.selectbox("Tool to test", tools, key=f"tools:test:tool:{server}")
    st.text_area("Arguments (JSON)", value="{}", key=f"tools:test:args:{server}", height=80)
    st.button(
        "Call the tool",
        key=f"tools:test:{server}",
        icon=":material/play_arrow:",
        on_click=_call,
        args=(server,),
        help="Calls the tool for real: a side-effecting tool does what it says.",
    )
    outcome = st.session_state.get(f"tools:result:{server}")
    if outcome is not None:
        kind, text = outcome
        if kind == "ok":
            st.success("The tool answered:")
            st.code(text, language=None)
        else:
            st.error(text)


def _config(name: str) -> McpServerConfig | None:
    config = services.store().mcp_servers.get(name)
    if config is None:
        widgets.say(FLASH, "error", f"The MCP server “{name}” was removed meanwhile.")
    return config


def _list(name: str) -> None:
    config = _config(name)
    if config is None:
        return
    try:
        tools = list_tools(config)
    except StepwiseError as exc:
        st.session_state[f"tools:listed:{name}"] = str(exc)
        return
    services.store().mcp_servers.remember_tools(name, tools)
    st.session_state[f"tools:listed:{name}"] = [
        {
            "name": t.name,
            "description": t.description,
            "input_schema": t.input_schema,
            "annotations": t.annotations,
            "policy": t.policy,
        }
        for t in tools
    ]


def _call(name: str) -> None:
    config = _config(name)
    if config is None or access.permitted("run", FLASH) is None:
        return
    tool = st.session_state.get(f"tools:test:tool:{name}", "")
    args = st.session_state.get(f"tools:test:args:{name}", "{}")
    try:
        st.session_state[f"tools:result:{name}"] = ("ok", call_tool(config, tool, args))
    except StepwiseError as exc:
        st.session_state[f"tools:result:{name}"] = ("error", str(exc))


def _remove(name: str) -> None:
    store = services.store()
    config = store.mcp_servers.get(name)
    if config is None:
        return
    person = access.permitted(_action(config), FLASH)
    if person is None:
        return
    store.mcp_servers.delete(name)
    store.audit.record(person.by, "MCP server removed", name, config.described())
    for key in ("listed", "result"):
        st.session_state.pop(f"tools:{key}:{name}", None)
    widgets.say(FLASH, "success", f"Removed the MCP server “{name}”.")
