"""The Design page's own agents (issue 30.1): tick the agents defined in the browser, define
a new one (*New agent*), edit or delete one. Definitions live in the store's library
(``store.user_agents``); the design carries the ticked ones (``with_library``).

Which systems take them, and why, is said here and in the README: plan_execute, whose
Planner reads each agent's description and whose Executor sends a step to any worker and
takes it back; supervisor_bus, whose supervisor routes by each worker's description and
sends it requests on the bus like any worker; not hierarchical_teams (a team is a subgraph
with its own supervisor and workers, declared with the system).
"""

from __future__ import annotations

import streamlit as st
from pydantic import ValidationError

from graph.agents.user_agents import (
    BUILTIN_PREFIX,
    BUILTIN_TOOLS,
    DEFAULT_PROMPT,
    UserAgent,
    mcp_tool_ref,
    prompt_name,
)
from graph.kernel.design import takes_user_agents
from graph.kernel.system import get_system
from graph.service.repositories.user_agents import UserAgentError
from graph.service.store import Store
from ui import access, widgets
from ui.user_agent_prompts import AFTER_IT

PROMPTS_PAGE = "app_pages/prompts.py"
CHOSEN_PROMPT = "prompts:chosen"  # the Prompts page opens on this prompt
VERSIONED = (
    "Its prompt is versioned on the Prompts page (“Your agent · {name}”): edit it there, "
    "save versions, make one active; runs use the active one."
)

FLASH = "design:flash"
WHICH_SYSTEMS = (
    "Your own agents join **plan_execute**, whose Planner reads each agent's description to "
    "choose it and whose Executor sends it a step and takes the result back, and "
    "**supervisor_bus**, whose supervisor routes to it by its description and sends it "
    "requests on the bus like any worker. hierarchical_teams does not take them: each of its "
    "teams is a subgraph with its own supervisor and workers, declared with the system."
)


def tool_choices(store: Store) -> dict[str, str]:
    """Every tool an agent may be given (reference -> label): the built-in read-only ones,
    and each connected MCP server's tools as its Tools page listing recorded them."""
    found = {f"{BUILTIN_PREFIX}{name}": f"built-in · {name}" for name in BUILTIN_TOOLS}
    for server in store.mcp_servers.all():
        for tool, policy in store.mcp_servers.policies(server.name).items():
            words = "read-only" if policy == "read_only" else "side-effecting"
            found[mcp_tool_ref(server.name, tool)] = f"{server.name} · {tool} ({words})"
    return found


def ticks(store: Store, enabled: list[str], system: str) -> list[str]:
    """The checkboxes of the library's agents; the names ticked."""
    st.markdown("**Your agents**")
    st.caption(WHICH_SYSTEMS)
    if not takes_user_agents(system):
        return []
    back = get_system(system).shape.router or "hub"
    ticked = []
    for agent in store.user_agents.all():
        if st.checkbox(agent.name, value=agent.name in enabled, key=f"agent:{agent.name}"):
            ticked.append(agent.name)
        tools = ", ".join(agent.tool_names) or "no tools"
        st.caption(f"{agent.description} Tools: {tools}. After it: back to the {back}.")
    return ticked


def editor(store: Store) -> None:
    """*New agent*, and edit or delete each defined one."""
    choices = tool_choices(store)
    with st.expander("New agent", icon=":material/add:"):
        _form(store, None, choices)
    for agent in store.user_agents.all():
        with st.expander(f"Edit {agent.name}", icon=":material/edit:"):
            _form(store, agent, choices)
            if st.button(
                "Open its prompt on the Prompts page",
                key=f"user_agent:prompt:{agent.name}",
                icon=":material/edit_note:",
            ):
                st.session_state[CHOSEN_PROMPT] = prompt_name(agent.name)
                st.switch_page(PROMPTS_PAGE)
            st.button(
                f"Delete {agent.name}",
                key=f"user_agent:delete:{agent.name}",
                on_click=_delete,
                args=(store, agent.name),
                icon=":material/delete:",
            )


def _form(store: Store, agent: UserAgent | None, choices: dict[str, str]) -> None:
    key = f"user_agent:{agent.name if agent else 'new'}"
    with st.form(key):
        if agent is None:
            st.text_input(
                "Name",
                key=f"{key}:name",
                help="2 to 40 lower-case letters, digits or underscores, starting with a "
                "letter; not the name of a built-in agent.",
            )
        st.text_area(
            "Description (what the Planner reads to choose it)",
            value=agent.description if agent else "",
            key=f"{key}:description",
        )
        st.multiselect(
            "Tools",
            list(choices),
            default=[t for t in (agent.tools if agent else ()) if t in choices],
            format_func=lambda ref: choices.get(ref, ref),
            key=f"{key}:tools",
            help="Built-in tools, and the tools of the MCP servers on the Tools page (list "
            "a server's tools there first).",
        )
        if agent is None:  # its first prompt; later ones are versions on the Prompts page
            st.text_area(
                "Prompt ({name}, {description} and {tools} are filled in)",
                value=DEFAULT_PROMPT,
                key=f"{key}:prompt",
                height=160,
            )
        else:  # two editors of one prompt would fight over which text runs use
            st.caption(VERSIONED.format(name=agent.name))
        st.caption(AFTER_IT)
        st.form_submit_button(
            "Save agent" if agent else "Create agent", on_click=_save, args=(store, agent, key)
        )


def _save(store: Store, agent: UserAgent | None, key: str) -> None:
    if not (person := access.permitted("design", FLASH)):
        return
    state = st.session_state
    name = agent.name if agent else (state.get(f"{key}:name") or "").strip()
    try:
        new = UserAgent(
            name=name,
            description=(state.get(f"{key}:description") or "").strip(),
            # an edit keeps the definition's prompt (the default of its versioned prompt)
            prompt=(state.get(f"{key}:prompt") or DEFAULT_PROMPT)
            if agent is None
            else agent.prompt,
            tools=tuple(state.get(f"{key}:tools") or ()),
        )
        if agent is None:
            store.user_agents.add(new, by=person.by)
        else:
            store.user_agents.update(new, by=person.by)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "agent"
        widgets.say(
            FLASH, "error", f"Not saved: {where}: {first['msg'].removeprefix('Value error, ')}"
        )
        return
    except UserAgentError as exc:
        widgets.say(FLASH, "error", f"Not saved: {exc}")
        return
    widgets.say(FLASH, "success", f"Agent “{name}” saved: tick it to use it.")


def _delete(store: Store, name: str) -> None:
    """Delete the definition. Its prompt's saved versions are kept but none stays active:
    an agent defined again under that name starts from the prompt it is given, and finds
    the old versions on the Prompts page to load or make active."""
    if person := access.permitted("design", FLASH):
        store.user_agents.delete(name)
        store.set_active_prompt(prompt_name(name), None, by=person.by)
        widgets.say(
            FLASH,
            "success",
            f"Agent “{name}” deleted. Its prompt's saved versions are kept, none active: an "
            "agent defined again under this name starts from its own prompt.",
        )
