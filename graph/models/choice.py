"""A model picked by name, not by the environment: the offline scripted model, or a model
on an OpenAI-compatible endpoint. An experiment's variant (and so each of its runs'
designs) carries one, so two variants can run one prompt on two models.

A choice holds an endpoint and a model name, never a key: the key comes from the
settings (the environment), and only for the endpoint those settings name, so a key is
never sent to a server it was not configured for.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from graph.models.modes import OPENAI_API
from graph.settings import Settings

SCRIPTED = "offline scripted model"


class ModelChoice(BaseModel):
    """``endpoint`` empty: the offline scripted model; else a base URL and a model name."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    endpoint: str = Field("", max_length=500)
    model: str = Field("", max_length=200)
    # A replay: every model call answered from the recorded calls of this run (its id);
    # no model server is asked (graph/service/replays.py).
    replay_of: str = Field("", max_length=64)

    @field_validator("endpoint")
    @classmethod
    def _http_endpoint(cls, value: str) -> str:
        value = value.strip().rstrip("/")
        if value and not value.startswith(("http://", "https://")):
            raise ValueError(f"the endpoint {value!r} is not an http(s) URL")
        return value

    @field_validator("model")
    @classmethod
    def _strip(cls, value: str) -> str:
        return value.strip()

    @property
    def scripted(self) -> bool:
        return not self.endpoint and not self.replay_of

    @property
    def label(self) -> str:
        if self.replay_of:
            return replay_label(self.replay_of)
        return SCRIPTED if self.scripted else f"{self.model or '?'} @ {self.endpoint}"

    def settings(self, base: Settings) -> Settings:
        """``base`` with this model in place of the configured one (the rest kept). A
        replay asks no server: its settings are the offline model's, its models the
        recording's (``RunService.model``)."""
        if self.scripted or self.replay_of:
            return base.model_copy(update={"provider": "scripted"})
        configured = (base.openai_base_url or OPENAI_API).rstrip("/")
        return base.model_copy(
            update={
                "provider": "openai",
                "openai_base_url": self.endpoint,
                "planner_model": self.model,
                "worker_model": self.model,
                # the configured key, only for the server it was configured for
                "openai_api_key": base.openai_api_key if self.endpoint == configured else None,
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
