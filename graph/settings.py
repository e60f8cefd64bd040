"""Everything configurable in Stepwise, read once from the environment.

One typed object instead of scattered ``os.environ`` reads, so the app, the command
line and the tests all see the same configuration and can override it explicitly.
Secrets are ``SecretStr`` so they never print, log or serialise by accident.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal
from urllib.parse import parse_qsl, unquote, urlsplit

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from graph.redaction import redact, redact_url, remember_secrets, url_password

REPO_ROOT = Path(__file__).resolve().parent.parent

DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "offline scripted model": (0.0, 0.0),
    "gpt-4.1": (2.0, 8.0),
    "gpt-4.1-mini": (0.4, 1.6),
    "gpt-4.1-nano": (0.1, 0.4),
    "gpt-4o": (2.5, 10.0),
    "gpt-4o-mini": (0.15, 0.6),
}

# How a JSON reply is asked for: auto (the strongest the server takes, learnt), json_schema,
# json_object (with llama.cpp's schema field), json_object_bare (without it), none.
StructuredMode = Literal["auto", "json_schema", "json_object", "json_object_bare", "none"]
# How tools are offered: auto (native, prompted where the server or model cannot), native,
# prompted (the tools and a JSON action shape in the prompt).
ToolMode = Literal["auto", "native", "prompted"]


def header_pairs(text: str) -> dict[str, str]:
    """OTLP headers as the OTEL_EXPORTER_OTLP_HEADERS variable gives them: "name=value,..."
    URL-encoded."""
    pairs = (h.partition("=") for h in text.split(",") if "=" in h)
    return {unquote(k.strip()).lower(): unquote(v.strip()) for k, _, v in pairs}


class Settings(BaseSettings):
    """Stepwise configuration. Each field reads the environment variable in its alias."""

    # case_sensitive: only the STEPWISE_* aliases are read, never e.g. $HOME for `home`.
    # hide_input_in_errors: a refused value may be a secret (a webhook's token, a database
    # password), and pydantic would quote it whole in its message.
    model_config = SettingsConfigDict(
        populate_by_name=True, extra="ignore", case_sensitive=True, hide_input_in_errors=True
    )

    # Where the store, checkpoints and indexes live.
    home: Path = Field(Path(".stepwise"), alias="STEPWISE_HOME")
    # postgresql://user:password@host:5432/db: the store and the checkpoints live in that
    # PostgreSQL database, shared by every app process pointed at it; unset: SQLite files
    # under STEPWISE_HOME. A secret (it may hold a password): shown only without it.
    database_url: SecretStr | None = Field(None, alias="STEPWISE_DATABASE_URL")

    # Models. With neither a key nor a base URL, runs use the offline scripted model.
    provider: Literal["auto", "scripted", "openai"] = Field("auto", alias="STEPWISE_PROVIDER")
    openai_api_key: SecretStr | None = Field(None, alias="OPENAI_API_KEY")
    openai_base_url: str | None = Field(None, alias="OPENAI_BASE_URL")
    planner_model: str = Field("gpt-4.1-mini", alias="STEPWISE_PLANNER_MODEL")
    worker_model: str = Field("gpt-4.1-mini", alias="STEPWISE_WORKER_MODEL")
    structured_output: StructuredMode = Field("auto", alias="STEPWISE_STRUCTURED_OUTPUT")
    tool_calling: ToolMode = Field("auto", alias="STEPWISE_TOOL_CALLING")
    # Tokens a model may write in one reply: bounds a small model that rambles.
    max_tokens: int = Field(1024, alias="STEPWISE_MAX_TOKENS", ge=16, le=200_000)
    # Characters a run keeps of one model reply (text, or one tool call's arguments); the
    # rest is cut, saying so (graph/models/capped.py). Bounds the store and checkpoints.
    max_reply_chars: int = Field(65_536, alias="STEPWISE_MAX_REPLY_CHARS", ge=1024, le=50_000_000)
    request_timeout_s: float = Field(60.0, alias="STEPWISE_REQUEST_TIMEOUT", gt=0)
    # Seconds one model call may take in all, retries included: the read timeout above
    # starts again with every byte, so a server dripping bytes would hold a run forever.
    # A call of a kind (a route, a plan...) gets a share of it (graph/models/reply_limits.py).
    model_call_deadline_s: float = Field(
        600.0, alias="STEPWISE_MODEL_CALL_DEADLINE", gt=0, le=86_400
    )
    # Replies are read as they are written (streamed): a call whose server has sent no new
    # token for this many seconds is given up (a reply still arriving never is), and closing
    # the stream makes the server stop writing. Off: each reply comes whole.
    stream_replies: bool = Field(True, alias="STEPWISE_STREAM_REPLIES")
    stall_timeout_s: float = Field(30.0, alias="STEPWISE_STALL_TIMEOUT", gt=0, le=3_600)
    # Model calls a server is given at once; the rest wait in the app, in order, saying how
    # many are ahead. 0: learnt from the server (llama-cpp-python: 1; llama.cpp: its slots;
    # others: not limited).
    model_server_slots: int = Field(0, alias="STEPWISE_MODEL_SERVER_SLOTS", ge=0, le=256)
    max_retries: int = Field(2, alias="STEPWISE_MAX_RETRIES", ge=0, le=10)
    temperature: float = Field(0.0, alias="STEPWISE_TEMPERATURE", ge=0, le=2)
    # Seconds the offline scripted model pauses per call: lets a demo or an e2e test
    # watch a run unfold (and reload mid-run). 0 in normal use.
    scripted_delay_s: float = Field(0.0, alias="STEPWISE_SCRIPTED_DELAY", ge=0, le=60)
    # Up to this many seconds more per call, drawn at random: runs that differ only by
    # noise, as real servers' do (what an experiment's intervals must not call a win).
    scripted_jitter_s: float = Field(0.0, alias="STEPWISE_SCRIPTED_JITTER", ge=0, le=60)
    # Seeds those draws (one sequence per process), so a test of noise is reproducible.
    scripted_seed: int | None = Field(None, alias="STEPWISE_SCRIPTED_SEED")

    # Dollars per million tokens, (input, output), per model name; a model missing here
    # has an unknown cost. Override with STEPWISE_PRICES='{"my-model": [0.5, 1.5]}'.
    prices: dict[str, tuple[float, float]] = Field(default_factory=dict, alias="STEPWISE_PRICES")

    @field_validator("prices", mode="after")
    @classmethod
    def _with_default_prices(cls, value: dict) -> dict:
        """Configured prices add to (and override) the known ones."""
        return {**DEFAULT_PRICES, **value}

    # Seconds a process holds a run it is running without renewing its hold (it renews
    # every few seconds while the run is live): another app process on the same home may
    # take the run over only after that, so one run never runs twice.
    run_lease_s: float = Field(30.0, alias="STEPWISE_RUN_LEASE", gt=0, le=3600)

    # Worker processes the runs' streams go to; 0: worker threads of the app process.
    # Processes pay off only for CPU-bound runs (the offline scripted model) on several
    # cores: each costs ~1-2 s to start and ~150 MB, and runs waiting on a model server
    # already overlap on threads. So 0 by default; e.g. 2 on 2 cores for offline
    # experiments (bench/parallel_runs.py prints both).
    run_processes: int = Field(0, alias="STEPWISE_RUN_PROCESSES", ge=0, le=64)

    # Characters a question (or a follow-up message) may have: each is copied into the
    # run's state, events and prompts, so a 5 MB question once took 55 MB of disk.
    max_question_chars: int = Field(
        20_000, alias="STEPWISE_MAX_QUESTION_CHARS", ge=100, le=10_000_000
    )

    # Experiments: how many of an experiment's runs go at once (their own pool, so an
    # experiment never queues the runs people start by hand).
    experiment_workers: int = Field(4, alias="STEPWISE_EXPERIMENT_WORKERS", ge=1, le=64)

    # Run shape (the Design page may override these per design).
    max_replans: int = Field(3, alias="STEPWISE_MAX_REPLANS", ge=0, le=20)
    recursion_limit: int = Field(60, alias="STEPWISE_RECURSION_LIMIT", ge=5, le=10_000)
    # supervisor_bus: seconds a request on the bus may wait for its answer before the
    # supervisor escalates it to a human.
    bus_timeout_s: float = Field(30.0, alias="STEPWISE_BUS_TIMEOUT", gt=0, le=86_400)
    # hierarchical_teams: the one API base URL request_team may call (its allowlist);
    # empty: the small demo API Stepwise serves on loopback (graph/tools/demo_api.py).
    teams_api_base: str = Field("", alias="STEPWISE_TEAMS_API_BASE")
    # hierarchical_teams: seconds one HTTP call of request_team may take.
    teams_http_timeout_s: float = Field(10.0, alias="STEPWISE_TEAMS_HTTP_TIMEOUT", gt=0, le=300)

    # A LangGraph Server (``langgraph dev``, a self-hosted or cloud deployment) that runs the
    # app's runs (graph/service/server_runs.py) and that the Server page opens first; empty:
    # runs execute in this process's threads and the page suggests ``langgraph dev``'s address.
    server_url: str = Field("", alias="STEPWISE_SERVER_URL")
    # The server's key, sent as ``x-api-key`` to that server only; unset for ``langgraph dev``.
    server_api_key: SecretStr | None = Field(None, alias="STEPWISE_SERVER_API_KEY")

    # Who may do what once sign-in is on (.streamlit/secrets.toml [auth]): a TOML file giving
    # roles by e-mail or OIDC group (README "Sign-in and roles"); relative to the working folder.
    roles_file: Path = Field(Path(".streamlit/roles.toml"), alias="STEPWISE_ROLES_FILE")

    # Tools.
    tavily_api_key: SecretStr | None = Field(None, alias="TAVILY_API_KEY")
    sql_max_rows: int = Field(500, alias="STEPWISE_SQL_MAX_ROWS", ge=1, le=100_000)
    # Budgets of one model-written query: past any of them it is stopped and the model
    # told why, so a runaway query (a recursive CTE, a huge blob) cannot hold a run.
    sql_timeout_s: float = Field(5.0, alias="STEPWISE_SQL_TIMEOUT", gt=0, le=3_600)
    # SQLite virtual-machine steps (about 100 million a second); a question about 560
    # monthly prices needs a few million at most.
    sql_max_steps: int = Field(100_000_000, alias="STEPWISE_SQL_MAX_STEPS", ge=10_000)
    # Bytes one string or blob may grow to inside a query (SQLITE_LIMIT_LENGTH), and
    # the values of the rows it returns together.
    sql_max_value_bytes: int = Field(
        1_000_000, alias="STEPWISE_SQL_MAX_VALUE_BYTES", ge=1_000, le=1_000_000_000
    )
    data_dir: Path = Field(REPO_ROOT / "data", alias="STEPWISE_DATA_DIR")
    prompts_dir: Path = Field(REPO_ROOT / "prompts", alias="STEPWISE_PROMPTS_DIR")

    # Word of approvals outside the app: each new question a run waits on, and each one a
    # timeout answered, is POSTed here as JSON (graph/service/webhooks.py); unset: none.
    # A secret (its path or query often is the token): logs and pages show its host only.
    webhook_url: SecretStr | None = Field(None, alias="STEPWISE_WEBHOOK_URL")
    # json: Stepwise's own fields; slack: {"text": ...}, which Slack, Mattermost, Rocket.Chat
    # and Discord's /slack endpoints take.
    webhook_format: Literal["json", "slack"] = Field("json", alias="STEPWISE_WEBHOOK_FORMAT")
    # Attempts after the first when a POST fails (1 s, 2 s, 4 s... apart), on its own thread.
    webhook_retries: int = Field(3, alias="STEPWISE_WEBHOOK_RETRIES", ge=0, le=10)
    # Where people open the app: the start of the links a webhook sends to a card.
    app_url: str = Field("http://localhost:8501", alias="STEPWISE_APP_URL")
    # OpenTelemetry out (graph/service/otel_export.py): with an OTLP endpoint set, each run's
    # spans go there over OTLP/HTTP as it ends; the SDK reads the rest of the OTEL_*
    # variables itself (protocol http/protobuf, timeout, service name, resource). Headers
    # carry a backend's key: secrets.
    otel_endpoint: str | None = Field(None, alias="OTEL_EXPORTER_OTLP_ENDPOINT")
    otel_traces_endpoint: str | None = Field(None, alias="OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    otel_headers: SecretStr | None = Field(None, alias="OTEL_EXPORTER_OTLP_HEADERS")
    otel_traces_headers: SecretStr | None = Field(None, alias="OTEL_EXPORTER_OTLP_TRACES_HEADERS")
    otel_sdk_disabled: bool = Field(False, alias="OTEL_SDK_DISABLED")
    otel_traces_exporter: str = Field("otlp", alias="OTEL_TRACES_EXPORTER")
    # Message contents (questions, prompts, replies, tool arguments) in the spans: opt-in,
    # as the GenAI conventions advise.
    otel_capture_content: bool = Field(
        False, alias="OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
    )
    # LangSmith's key, when its tracing is on (LANGSMITH_TRACING=true, read by LangChain
    # itself): a secret here, taken out of everything Stepwise stores or sends.
    langsmith_api_key: SecretStr | None = Field(None, alias="LANGSMITH_API_KEY")

    # How much the engine and the service log on stderr (graph/logs.py): DEBUG, INFO,
    # WARNING or ERROR. Each record names its run.
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        "WARNING", alias="STEPWISE_LOG_LEVEL"
    )

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper_level(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value

    @field_validator("otel_sdk_disabled", "otel_capture_content", mode="before")
    @classmethod
    def _otel_flag(cls, value: object) -> object:
        """OpenTelemetry's own reading of its switches: anything but "true" is off (never
        an error that stops the app); the content switch also takes the GenAI
        instrumentations' modes that put contents on spans."""
        if not isinstance(value, str):
            return value
        return value.strip().lower() in ("true", "1", "span_only", "span_and_event")

    @model_validator(mode="after")
    def _remember_secrets(self) -> "Settings":
        """Every configured secret is taken out of any text stored or shown later."""
        remember_secrets(self.secret_values())
        return self

    @field_validator("database_url", mode="after")
    @classmethod
    def _no_empty_url(cls, value: SecretStr | None) -> SecretStr | None:
        """An empty STEPWISE_DATABASE_URL means unset: SQLite."""
        return value if value is not None and value.get_secret_value().strip() else None

    @field_validator("webhook_url", mode="after")
    @classmethod
    def _webhook_is_http(cls, value: SecretStr | None) -> SecretStr | None:
        """Empty means unset; anything else must be an http(s) address, said without it."""
        if value is None or not value.get_secret_value().strip():
            return None
        parts = urlsplit(value.get_secret_value().strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                "STEPWISE_WEBHOOK_URL must be an http:// or https:// address with a host "
                f"(it starts {parts.scheme or 'with no scheme'!r})"
            )
        return SecretStr(value.get_secret_value().strip())

    def secret_values(self) -> list[str]:
        """The configured secrets (API keys, the database URL and its password), in
        clear: only for ``redact``."""
        values = [
            value.get_secret_value()
            for value in (getattr(self, name) for name in type(self).model_fields)
            if isinstance(value, SecretStr)
        ]
        if self.database_url is not None:
            values.append(url_password(self.database_url.get_secret_value()) or "")
        if self.webhook_url is not None:  # its token, wherever a text quotes part of it
            parts = urlsplit(self.webhook_url.get_secret_value())
            path = parts.path.strip("/")
            values += [path, parts.query, *(v for _, v in parse_qsl(parts.query))]
            # a segment shaped like a token (a word like "services" is left alone)
            values += [
                s
                for s in path.split("/")
                if len(s) >= 20 or (len(s) >= 8 and any(c.isdigit() for c in s))
            ]
        for headers in (self.otel_headers, self.otel_traces_headers):
            if headers is not None:  # each header's value is a secret
                values += header_pairs(headers.get_secret_value()).values()
        return [v for v in values if v]

    def otlp_headers(self) -> dict[str, str] | None:
        """The headers sent with spans (the traces' own, else the OTLP ones), or None."""
        given = self.otel_traces_headers or self.otel_headers
        return header_pairs(given.get_secret_value()) if given is not None else None

    @property
    def otel_enabled(self) -> bool:
        """Whether runs' spans are sent to an OTLP backend (an endpoint set, the SDK and
        its trace exporter not switched off)."""
        endpoint = self.otel_traces_endpoint or self.otel_endpoint
        return bool(endpoint) and not self.otel_sdk_disabled and self.otel_traces_exporter != "none"

    @property
    def database_location(self) -> str:
        """Where the store is, for people: the database URL without its password, or
        the SQLite file's folder."""
        if self.database_url is None:
            return str(self.home)
        return redact_url(self.database_url.get_secret_value())

    def redact(self, text: str) -> str:
        """``text`` with this configuration's secrets (and any key-shaped text) taken out."""
        return redact(text, self.secret_values())

    @property
    def resolved_provider(self) -> Literal["scripted", "openai"]:
        """``auto`` means: the real client as soon as an endpoint or key is configured."""
        if self.provider != "auto":
            return self.provider
        return "openai" if (self.openai_api_key or self.openai_base_url) else "scripted"

    @property
    def model_label(self) -> str:
        """What the UI and the command line show as "the model in use"."""
        if self.resolved_provider == "scripted":
            return "offline scripted model"
        server = self.openai_base_url or "api.openai.com"
        if self.planner_model == self.worker_model:
            return f"{self.planner_model} @ {server}"
        return f"planner/executor {self.planner_model}, workers {self.worker_model} @ {server}"

    def public_dict(self) -> dict:
        """Settings safe to store with a run or an export: secrets reduced to 'set'/'unset'."""
        data = self.model_dump(mode="json")
        for key in (
            "openai_api_key",
            "tavily_api_key",
            "server_api_key",
            "webhook_url",
            "otel_headers",
            "otel_traces_headers",
            "langsmith_api_key",
        ):
            data[key] = "set" if getattr(self, key) else "unset"
        data["database_url"] = self.database_location if self.database_url else None
        return data


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read from the environment on first use."""
    return Settings()
