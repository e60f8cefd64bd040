"""What the Model page shows, computed without Streamlit: the model settings in use (keys
only as set/unset), what has been learnt about each server, and a connection check."""

from __future__ import annotations

from datetime import datetime

from graph.models.modes import ModeBook, describe_structured, describe_tools
from graph.models.reply_limits import describe_field
from graph.service.model_profiles import ModelProfiles
from graph.settings import Settings

# How to point Stepwise at the usual local servers: the variables, and what to expect.
SERVERS = (
    (
        "Ollama",
        "OPENAI_BASE_URL=http://localhost:11434/v1 STEPWISE_PLANNER_MODEL=llama3.2 "
        "STEPWISE_WORKER_MODEL=llama3.2",
        "takes json_schema (structured outputs); tool calling native for models that have it",
    ),
    (
        "llama.cpp / llama-cpp-python",
        "OPENAI_BASE_URL=http://localhost:8000/v1",
        "llama-cpp-python's server refuses json_schema with HTTP 500: auto uses json_object with "
        "the schema (grammar-constrained); tools it cannot call go in the prompt",
    ),
    (
        "vLLM",
        "OPENAI_BASE_URL=http://localhost:8000/v1 STEPWISE_PLANNER_MODEL=<served model>",
        "takes json_schema (guided decoding); tool calling native when started with "
        "--enable-auto-tool-choice",
    ),
    (
        "LM Studio",
        "OPENAI_BASE_URL=http://localhost:1234/v1",
        "takes json_schema; tools native or prompted, depending on the model",
    ),
)


def settings_rows(settings: Settings) -> list[dict]:
    """The model settings in use, as the page lists them; never a key's value."""
    scripted = settings.resolved_provider == "scripted"
    rows = [
        (
            "Endpoint",
            "offline scripted model (no server)"
            if scripted
            else settings.openai_base_url or "https://api.openai.com/v1 (OpenAI)",
        )
    ]
    if not scripted:
        rows += [
            ("Planner / Executor / supervisors", settings.planner_model),
            ("Agents with tools", settings.worker_model),
            ("API key", "set" if settings.openai_api_key else "unset"),
            ("Structured output (STEPWISE_STRUCTURED_OUTPUT)", settings.structured_output),
            ("Tool calling (STEPWISE_TOOL_CALLING)", settings.tool_calling),
            ("Tokens per reply (STEPWISE_MAX_TOKENS)", str(settings.max_tokens)),
            ("Timeout per request (STEPWISE_REQUEST_TIMEOUT)", f"{settings.request_timeout_s:g} s"),
        ]
    return [{"Setting": k, "Value": v} for k, v in rows]


def profile_rows(profiles: ModelProfiles) -> list[dict]:
    """Each profile as the page lists it: endpoint, models, where its key comes from and
    whether it is there (never the key), the active one marked."""
    active = profiles.active().name
    rows = []
    for profile in profiles.all():
        rows.append(
            {
                "Active": "●" if profile.name == active else "",
                "Profile": profile.name,
                "Endpoint": "no server (offline)" if profile.scripted else profile.endpoint,
                "Planner model": profile.planner_model,
                "Worker model": profile.worker_model,
                "API key": profiles.key_state(profile),
            }
        )
    return rows


def learnt_rows(modes: ModeBook) -> list[dict]:
    """What each server/model pair was found to accept, and why, newest first."""
    rows = []
    for (server, model), learnt in sorted(
        modes.all().items(), key=lambda kv: -(kv[1].updated_at or 0)
    ):
        rows.append(
            {
                "Server": server,
                "Model": model,
                "Structured output": describe_structured(learnt.structured)
                if learnt.structured
                else "not asked yet",
                "Why": learnt.structured_note,
                "Tool calling": describe_tools(learnt.tools) if learnt.tools else "not asked yet",
                "Why (tools)": learnt.tools_note,
                "Reply limit sent in": describe_field(learnt.token_field)
                if learnt.token_field
                else "not asked yet",
                "Why (limit)": learnt.token_field_note,
                "Learnt": datetime.fromtimestamp(learnt.updated_at).strftime("%Y-%m-%d %H:%M:%S")
                if learnt.updated_at
                else "",
            }
        )
    return rows
