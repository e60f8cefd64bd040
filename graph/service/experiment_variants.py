"""Defining an experiment: its variants (prompt texts on a model), who answers its runs'
approvals, the design each variant's runs use, and the model settings a rerun must match.

A variant is a set of prompt texts (Planner and Executor versions together) on a model
(the one in use: the active model profile; or one picked by endpoint and name: two
prompts on one model, or one prompt on two models). What an experiment ran with is
recorded in full: every prompt's text per variant (not just the edits, so a later change
to a default prompt file cannot change a rerun), the design, and the public model
settings; a rerun refuses to run on other model settings (``model_settings_difference``).

Who answers its runs' approvals is the experiment's choice (``APPROVALS``): by default
the experiment decides at once (read-only steps approved, side-effecting ones not
performed, recorded as such), so nothing waits; or a person decides (timeouts off), or
the design's own policy (its timeout and default).
"""

from __future__ import annotations

from typing import Iterable

from pydantic import BaseModel, Field, field_validator

from graph.errors import StepwiseError
from graph.kernel.design import Design
from graph.kernel.system import get_system
from graph.models.choice import ModelChoice
from graph.prompts import PromptError, PromptSet, default_text, prompt_names
from graph.service.store import Store
from graph.settings import Settings

# Settings that change what a model answers; a rerun must match them. With the offline
# scripted model only the provider matters (it reads none of the others).
MODEL_SETTINGS = (
    "resolved_provider",
    "openai_base_url",
    "planner_model",
    "worker_model",
    "structured_output",
    "temperature",
)
# Who answers the approvals an experiment's runs ask for, as the form offers it.
APPROVALS = {
    "auto": "Decide automatically: read-only steps approved, side-effecting steps not "
    "performed (nothing waits)",
    "human": "Ask a human: runs wait on the Approvals page until someone decides",
    "design": "The design's policy: as the Design page says, with its timeout and default",
}


class ExperimentError(StepwiseError, ValueError):
    """An experiment that cannot start or rerun; the message says why."""


class Variant(BaseModel):
    """A named set of prompt texts; prompts it does not name keep the design's text."""

    name: str = Field(min_length=1, max_length=80)
    prompts: dict[str, str] = Field(default_factory=dict)  # prompt name -> text
    versions: dict[str, int] = Field(default_factory=dict)  # prompt name -> stored version id
    model: ModelChoice | None = None  # None: the model settings in use

    @field_validator("name")
    @classmethod
    def _name_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("a variant needs a name")
        return value.strip()

    @classmethod
    def from_versions(
        cls,
        store: Store,
        name: str,
        version_ids: Iterable[int],
        model: ModelChoice | None = None,
    ) -> Variant:
        """A variant from stored prompt versions (e.g. a Planner and an Executor version)."""
        prompts, versions = {}, {}
        for version_id in version_ids:
            version = store.prompt_version(int(version_id))
            if version is None:
                raise ExperimentError(f"No prompt version {version_id}.")
            if version.prompt_name in prompts:
                raise ExperimentError(
                    f"Variant {name!r} has two versions of {version.prompt_name}: pick one."
                )
            prompts[version.prompt_name] = version.text
            versions[version.prompt_name] = version.id
        return cls(name=name, prompts=prompts, versions=versions, model=model)


def full_prompt_texts(design: Design, variant: Variant) -> dict[str, str]:
    """Every prompt of the design's system as this variant runs it (validated)."""
    get_system(design.system)  # a system declares its prompts when imported
    names = prompt_names(design.system)
    if stray := sorted(set(variant.prompts) - set(names)):
        raise ExperimentError(
            f"Variant {variant.name!r} sets prompt(s) that {design.system} "
            f"does not use: {', '.join(stray)}."
        )
    base = {n: t for n, t in design.prompts.items() if n in names}
    try:
        texts = PromptSet({**base, **variant.prompts}).texts
    except PromptError as exc:
        raise ExperimentError(f"Variant {variant.name!r}: {exc}") from None
    return {n: texts[n] for n in names}


def run_design(
    design: Design,
    texts: dict[str, str],
    approvals: str = "auto",
    model: ModelChoice | None = None,
) -> Design:
    """The design a variant's runs use: its texts (only those that differ from the files,
    so the Run page shows real edits), its model, and who answers approvals: the
    experiment ("auto"), a person with no timeout ("human"), or the design ("design")."""
    overrides = {n: t for n, t in texts.items() if t != default_text(n)}
    update: dict = {"prompts": overrides, "model": model, "approvals_by": "human"}
    if approvals == "auto":
        update["approvals_by"] = "experiment"
    if approvals != "design":
        update["approval_timeout_s"] = 0.0
    return design.model_copy(update=update)


def model_settings_difference(recorded: dict, current: Settings) -> list[str]:
    """How the current model settings differ from recorded ones, in words; empty if not."""
    now = {**current.public_dict(), "resolved_provider": current.resolved_provider}
    keys: tuple[str, ...] = MODEL_SETTINGS
    if recorded.get("resolved_provider") == now["resolved_provider"] == "scripted":
        keys = ("resolved_provider",)
    return [
        f"{k} was {recorded.get(k)!r}, now {now.get(k)!r}"
        for k in keys
        if recorded.get(k) != now.get(k)
    ]
