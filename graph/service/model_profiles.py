"""Named model profiles, chosen in the browser: which model new runs, experiments and the
judge use, without restarting the app.

A profile is an endpoint, the planning roles' model, the workers' model, and where its
key comes from: none, an environment variable it names, or typed in the browser. The
store keeps every field but a typed key, which has no column: it lives in this process's
memory only (``graph.models.keys``) and is gone on restart. Two profiles are always
there and never stored: the environment's settings (first, the one in use until another
is made active) and the offline scripted model.

A profile becomes a ``ModelChoice`` (what a run's design records: name, endpoint, models,
where the key comes from) and, through it, a copy of the settings with the model fields
replaced.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from graph.errors import StepwiseError
from graph.models.choice import SCRIPTED, ModelChoice, configured_choice
from graph.models.keys import ENV_NAME, env_key, forget_typed_key, put_typed_key, typed_key
from graph.service.store import Store
from graph.settings import Settings

ENVIRONMENT = "from the environment"
OFFLINE = SCRIPTED
BUILT_IN = (ENVIRONMENT, OFFLINE)
KEY_SOURCES = ("none", "env", "typed")
_ACTIVE = "active"


class ProfileError(StepwiseError, ValueError):
    """A profile that cannot be added, made active or deleted; the message says why."""


class ModelProfile(BaseModel):
    """A stored profile (a built-in one has ``built_in`` set and is never stored)."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(min_length=1, max_length=80)
    endpoint: str = Field("", max_length=500)  # empty: the offline scripted model
    planner_model: str = Field("", max_length=200)
    worker_model: str = Field("", max_length=200)
    key_from: Literal["settings", "none", "env", "typed"] = "none"
    key_env: str = Field("", max_length=128)
    built_in: bool = False

    @field_validator("name", "planner_model", "worker_model", "key_env")
    @classmethod
    def _strip(cls, value: str) -> str:
        return value.strip()

    def choice(self) -> ModelChoice:
        """What a run's design records of this profile (never a key)."""
        if not self.endpoint:
            return ModelChoice(profile=self.name)
        return ModelChoice(
            endpoint=self.endpoint,
            model=self.planner_model,
            worker=self.worker_model if self.worker_model != self.planner_model else "",
            profile=self.name,
            key_from=self.key_from,
            key_env=self.key_env,
        )

    @property
    def scripted(self) -> bool:
        return not self.endpoint


def _environment(settings: Settings) -> ModelProfile:
    choice = configured_choice(settings)
    return ModelProfile(
        name=ENVIRONMENT,
        endpoint=choice.endpoint,
        planner_model=settings.planner_model if choice.endpoint else "",
        worker_model=settings.worker_model if choice.endpoint else "",
        key_from="settings",
        built_in=True,
    )


class ModelProfiles:
    """The profiles in one store, and which one is active, for one app process."""

    def __init__(self, store: Store, settings: Settings):
        self.db = store.database
        self.settings = settings

    # ------------------------------------------------------------------ reading

    def all(self) -> list[ModelProfile]:
        """The environment's profile, the offline model, then the stored ones by name."""
        rows = self.db.query("SELECT * FROM model_profiles ORDER BY name")
        return [
            _environment(self.settings),
            ModelProfile(name=OFFLINE, built_in=True),
            *(_profile(row) for row in rows),
        ]

    def get(self, name: str) -> ModelProfile | None:
        return next((p for p in self.all() if p.name == name), None)

    def active(self) -> ModelProfile:
        """The active profile; the environment's when none was chosen, or the chosen one
        was deleted by another app process on the same store."""
        rows = self.db.query("SELECT name FROM active_model_profile WHERE slot = ?", (_ACTIVE,))
        found = self.get(rows[0]["name"]) if rows else None
        return found or _environment(self.settings)

    def choice(self) -> ModelChoice | None:
        """The active profile as a run's design records it; None for the environment's
        (a design without a model runs on the settings, as every run before profiles)."""
        active = self.active()
        return None if active.name == ENVIRONMENT else active.choice()

    def settings_of(self, profile: ModelProfile | None = None) -> Settings:
        """The settings a run on ``profile`` (default: the active one) is made with."""
        profile = profile or self.active()
        if profile.name == ENVIRONMENT:
            return self.settings
        return profile.choice().settings(self.settings)

    def key_state(self, profile: ModelProfile) -> str:
        """Where the profile's key comes from and whether it is there, in words (never
        the key)."""
        if profile.scripted:
            return "no key needed"
        if profile.key_from == "settings":
            return "OPENAI_API_KEY: " + ("set" if self.settings.openai_api_key else "unset")
        if profile.key_from == "env":
            present = env_key(profile.key_env) is not None
            return f"from ${profile.key_env}: {'set' if present else 'not set'}"
        if profile.key_from == "typed":
            kept = typed_key(profile.name) is not None
            return "typed here: in memory" if kept else "typed here: gone (type it again)"
        return "none"

    # ------------------------------------------------------------------ changing

    def add(
        self,
        name: str,
        endpoint: str,
        planner_model: str,
        worker_model: str = "",
        key_from: str = "none",
        key_env: str = "",
        key: str = "",
    ) -> ModelProfile:
        """Store a new profile; a typed ``key`` goes to memory only. ProfileError says
        what is wrong (nothing is stored then)."""
        name, endpoint = (name or "").strip(), (endpoint or "").strip().rstrip("/")
        planner_model = (planner_model or "").strip()
        if not name:
            raise ProfileError("Give the profile a name.")
        if name in BUILT_IN:
            raise ProfileError(f"“{name}” is a built-in profile: pick another name.")
        if self.get(name) is not None:
            raise ProfileError(f"There is already a profile named “{name}”.")
        if not endpoint:
            raise ProfileError("Give the server's endpoint, e.g. http://localhost:8000/v1.")
        if not planner_model:
            raise ProfileError("Give the model name the server serves (its /v1/models lists it).")
        if key_from not in KEY_SOURCES:
            raise ProfileError(f"The key comes from one of: {', '.join(KEY_SOURCES)}.")
        if key_from == "env" and not ENV_NAME.match((key_env or "").strip()):
            raise ProfileError(
                "Name the environment variable that holds the key (letters, digits and _, "
                "not starting with a digit), e.g. MY_SERVER_KEY."
            )
        if key_from == "typed" and not (key or "").strip():
            raise ProfileError("Type the key, or pick “no key” for a server that needs none.")
        try:
            profile = ModelProfile(
                name=name,
                endpoint=endpoint,
                planner_model=planner_model,
                worker_model=(worker_model or "").strip() or planner_model,
                key_from=key_from,
                key_env=(key_env or "").strip() if key_from == "env" else "",
            )
            profile.choice()  # the endpoint's own checks (an http(s) URL)
        except ValidationError as exc:
            raise ProfileError(_words(exc)) from None
        if key_from == "typed":
            put_typed_key(name, key)
        self.db.execute(
            "INSERT INTO model_profiles (name, endpoint, planner_model, worker_model, "
            "key_from, key_env, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                profile.name,
                profile.endpoint,
                profile.planner_model,
                profile.worker_model,
                profile.key_from,
                profile.key_env,
                time.time(),
            ),
        )
        return profile

    def type_key(self, name: str, key: str) -> None:
        """Keep a typed key again (after a restart) for a profile whose key is typed."""
        profile = self._stored(name)
        if profile.key_from != "typed":
            raise ProfileError(f"The profile “{name}” does not take a typed key.")
        if not (key or "").strip():
            raise ProfileError("The key is empty: type it.")
        put_typed_key(name, key)

    def activate(self, name: str) -> ModelProfile:
        """Make a profile the one new runs, experiments and the judge use."""
        profile = self.get(name)
        if profile is None:
            raise ProfileError(f"There is no profile named “{name}”.")
        self.db.execute(
            "INSERT INTO active_model_profile (slot, name) VALUES (?, ?) "
            "ON CONFLICT(slot) DO UPDATE SET name = excluded.name",
            (_ACTIVE, name),
        )
        return profile

    def delete(self, name: str) -> None:
        """Forget a stored profile (and its typed key); the environment's becomes active if
        it was. Runs made on it keep their record of it."""
        self._stored(name)
        with self.db.transaction() as tx:
            tx.execute("DELETE FROM model_profiles WHERE name = ?", (name,))
            tx.execute(
                "DELETE FROM active_model_profile WHERE slot = ? AND name = ?", (_ACTIVE, name)
            )
        forget_typed_key(name)

    def _stored(self, name: str) -> ModelProfile:
        if name in BUILT_IN:
            raise ProfileError(f"“{name}” is built in: it cannot be changed or deleted.")
        rows = self.db.query("SELECT * FROM model_profiles WHERE name = ?", (name,))
        if not rows:
            raise ProfileError(f"There is no profile named “{name}”.")
        return _profile(rows[0])


def _profile(row: Any) -> ModelProfile:  # a database row
    return ModelProfile(
        name=row["name"],
        endpoint=row["endpoint"],
        planner_model=row["planner_model"],
        worker_model=row["worker_model"],
        key_from=row["key_from"],
        key_env=row["key_env"],
    )


def _words(exc: ValidationError) -> str:
    error = exc.errors()[0]
    field = ".".join(str(p) for p in error.get("loc", ()))
    message = str(error.get("msg", "")).removeprefix("Value error, ")
    return f"{field}: {message}." if field else f"{message}."
