"""A model picked by name, not by the environment: the offline scripted model, or a model
on an OpenAI-compatible endpoint. An experiment's variant (and so each of its runs'
designs) carries one, so two variants can run one prompt on two models.

A model profile (the Model page's, ``graph.service.model_profiles``) becomes one too,
which a run's design records: the profile's name, its endpoint and models, and where its
key comes from; never the key itself.

A choice holds an endpoint and model names, never a key. ``key_from`` says where the key
is found when a model is made: ``settings`` (the environment's key, and only for the
endpoint the environment names, so a key is never sent to a server it was not configured
for), ``none``, ``env`` (the variable ``key_env``), or ``typed`` (typed in the browser for
the profile, kept in this process's memory: ``graph.models.keys``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from graph.models.keys import ENV_NAME, env_key, typed_key
from graph.models.modes import OPENAI_API
from graph.settings import Settings

SCRIPTED = "offline scripted model"

KeyFrom = Literal["settings", "none", "env", "typed"]


class ModelChoice(BaseModel):
    """``endpoint`` empty: the offline scripted model; else a base URL and a model name."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    endpoint: str = Field("", max_length=500)
    model: str = Field("", max_length=200)  # the planning roles', and the workers' unless set
    worker: str = Field("", max_length=200)  # the agents with tools; empty: ``model``
    profile: str = Field("", max_length=80)  # the Model page's profile it came from, if any
    key_from: KeyFrom = "settings"
    key_env: str = Field("", max_length=128)  # the variable, for key_from "env"
    # A replay: every model call answered from the recorded calls of this run (its id);
    # no model server is asked (graph/service/replays.py).
    replay_of: str = Field("", max_length=64)
    # A fork with another prompt (graph/service/prompt_forks.py): the calls before its
    # checkpoint were answered from this run's recording; every call the fork makes goes
    # to the model named here and is marked live.
    fork_of: str = Field("", max_length=64)

    @field_validator("endpoint")
    @classmethod
    def _http_endpoint(cls, value: str) -> str:
        value = value.strip().rstrip("/")
        if value and not value.startswith(("http://", "https://")):
            raise ValueError(f"the endpoint {value!r} is not an http(s) URL")
        return value

    @field_validator("model", "worker", "profile", "key_env")
    @classmethod
    def _strip(cls, value: str) -> str:
        return value.strip()

    @model_validator(mode="after")
    def _names_its_variable(self) -> "ModelChoice":
        if self.key_from == "env" and not ENV_NAME.match(self.key_env):
            raise ValueError(
                f"the key's environment variable {self.key_env!r} is not a variable name "
                "(letters, digits and _, not starting with a digit)"
            )
        return self

    @model_serializer(mode="wrap")
    def _compact(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Fields at their defaults are left out: a choice made before profiles is
        recorded (in designs, experiments) exactly as it was."""
        data = handler(self)
        for name, default in (
            ("worker", ""),
            ("profile", ""),
            ("key_from", "settings"),
            ("replay_of", ""),
            ("fork_of", ""),
        ):
            if data.get(name) == default:
                data.pop(name)
        if not data.get("key_env"):
            data.pop("key_env", None)
        return data

    @property
    def scripted(self) -> bool:
        return not self.endpoint and not self.replay_of

    @property
    def label(self) -> str:
        if self.replay_of:
            return replay_label(self.replay_of)
        if self.fork_of:
            return (
                f"{self.model_copy(update={'fork_of': ''}).label} (fork of run {self.fork_of[:8]})"
            )
        if self.scripted:
            return SCRIPTED
        if self.worker and self.worker != self.model:
            return f"planner/executor {self.model or '?'}, workers {self.worker} @ {self.endpoint}"
        return f"{self.model or '?'} @ {self.endpoint}"

    def key(self, base: Settings) -> SecretStr | None:
        """The key a request to this endpoint carries (a ``SecretStr``), or None."""
        if self.key_from == "env":
            return env_key(self.key_env)
        if self.key_from == "typed":
            return typed_key(self.profile)
        if self.key_from == "settings":
            configured = (base.openai_base_url or OPENAI_API).rstrip("/")
            # the configured key, only for the server it was configured for
            return base.openai_api_key if self.endpoint == configured else None
        return None

    def key_problem(self) -> str:
        """Why the key this choice needs is missing, in words; "" when nothing is missing."""
        if self.scripted:
            return ""
        if self.key_from == "env" and env_key(self.key_env) is None:
            return (
                f"The model profile “{self.profile}” reads its key from the environment "
                f"variable {self.key_env}, which is not set in the app's environment."
            )
        if self.key_from == "typed" and typed_key(self.profile) is None:
            return (
                f"The key of the model profile “{self.profile}” was typed in the browser and "
                "is kept in memory only: the app has restarted since. Type it again on the "
                "Model page."
            )
        return ""

    def settings(self, base: Settings) -> Settings:
        """``base`` with this model in place of the configured one (the rest kept). A
        replay asks no server: its settings are the offline model's, its models the
        recording's (``RunService.model``)."""
        if self.scripted or self.replay_of:
            return base.model_copy(update={"provider": "scripted"})
        return base.model_copy(
            update={
                "provider": "openai",
                "openai_base_url": self.endpoint,
                "planner_model": self.model,
                "worker_model": self.worker or self.model,
                "openai_api_key": self.key(base),
            }
        )


def replay_label(run_id: str) -> str:
    return f"replay of run {run_id[:8]} (recorded replies, no model server)"


def configured_choice(settings: Settings) -> ModelChoice:
    """The model the settings name (the Model page's "In use"), as a choice; the planner's
    model when the planner and the workers differ."""
    if settings.resolved_provider == "scripted":
        return ModelChoice()
    return ModelChoice(
        endpoint=settings.openai_base_url or OPENAI_API, model=settings.planner_model
    )
