"""A design as a file: what the Design page's export downloads and its import accepts.

A design file carries the prompts too, but runs read prompts from the active prompt
versions (the Prompts page). So the export writes the active texts into the file, and
an import makes the file's texts the active versions again (saved as new versions,
nothing overwritten) and the shipped defaults active for the prompts the file leaves out.
The MCP servers travel with it (no typed environment value); an imported one that runs a
command is stored pending, started only once an admin has seen the command and confirmed.
"""

from __future__ import annotations

import json
from datetime import datetime

import graph.kernel.guardrail  # noqa: F401  (registers the guardrail's prompt)
from graph.agents.user_agents import prompt_name
from graph.kernel.design import Design, DesignError, export_design
from graph.kernel.hooks import HookError
from graph.kernel.system import get_system
from graph.prompts import default_text, prompt_names
from graph.service.import_checks import ImportProblem, check_design_file, load_json
from graph.service.store import Store
from graph.service.user_agent_designs import keep_imported_agents
from ui import access, services


def design_file(store: Store, design: Design) -> str:
    """The JSON text of ``design`` with the prompt texts runs use now."""
    with_prompts = design.model_copy(update={"prompts": store.active_prompt_texts()})
    document = {**export_design(with_prompts), "mcp_servers": store.mcp_servers.exported()}
    return json.dumps(document, ensure_ascii=False, indent=2)


def import_design_file(store: Store, raw: bytes) -> tuple[Design, str]:
    """Make an uploaded file the saved design; DesignError says why a file is refused.
    Returns the design and sentences saying what became of the prompts and of anything
    left out of the file (a model server)."""
    by = access.require("design").by
    try:  # the whole file checked first: nothing is saved from a refused one
        data = load_json(raw)
        design, notes = check_design_file(data, services.settings())
    except ImportProblem as exc:
        raise DesignError(str(exc)) from None
    try:  # hooks name nodes and agents: only building the graph tells if they exist
        get_system(design.system).build_graph(design)
    except HookError as exc:
        raise DesignError(str(exc)) from None
    notes = [*notes, *keep_imported_agents(design, store.user_agents, by)]
    label = f"imported {datetime.now():%Y-%m-%d %H:%M}"
    active = store.active_prompts()
    changed = []
    agents = [prompt_name(agent.name) for agent in design.user_agents]  # their own prompts
    for name in [*prompt_names(design.system), *prompt_names("guardrail"), *agents]:
        text = design.prompts.get(name)
        current = active[name].text if name in active else default_text(name)
        if text is None:
            if name in active:
                store.set_active_prompt(name, None, by=by)
                default = "its definition's prompt" if name in agents else "shipped default"
                changed.append(f"{name.rsplit('/', 1)[-1]} ({default})")
        elif text != current:
            version = store.save_prompt_version(name, label, text, by=by)
            store.set_active_prompt(name, version.id, by=by)
            changed.append(f"{name.rsplit('/', 1)[-1]} (version “{label}”)")
    store.save_design(design.model_copy(update={"prompts": {}}), by=by)
    # a stdio server is stored pending: its command runs once an admin confirms it
    notes = [*notes, *store.mcp_servers.take_imported(data.get("mcp_servers"), by)]
    prompts = (
        "Active prompts changed: " + ", ".join(changed) + "."
        if changed
        else "The active prompts already matched the file."
    )
    return design, " ".join([prompts, *notes])
