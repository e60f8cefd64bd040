"""The store's schema as numbered migrations, run on start (``Database.migrate``).

Each migration is applied once, in order, and ``schema_version`` records the last one; a
new one is appended with the next number and never edits an earlier one. Every step is
also safe on a database that already has part of it, because files made before the steps
were numbered (version 1 and 2) gained tables and columns on open without a new number.

DDL is written as SQLite spells it; ``graph.service.database`` turns it into PostgreSQL
(``{rowid}``: the insertion order some reads sort by, implicit on SQLite).
"""

from __future__ import annotations

from graph.service.database import REFUSED_STATE, Migration, Transaction

_VERSION_1 = """
CREATE TABLE IF NOT EXISTS designs (
    name TEXT PRIMARY KEY,
    design_json TEXT NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS prompt_versions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    prompt_name TEXT NOT NULL,
    label TEXT NOT NULL,
    text TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS prompt_versions_by_name ON prompt_versions (prompt_name, id);
CREATE TABLE IF NOT EXISTS active_prompts (
    prompt_name TEXT PRIMARY KEY,
    version_id INTEGER NOT NULL REFERENCES prompt_versions (id)
);
CREATE TABLE IF NOT EXISTS runs (
    {rowid}
    id TEXT PRIMARY KEY,
    question TEXT NOT NULL,
    system TEXT NOT NULL,
    design_json TEXT NOT NULL,
    prompt_versions_json TEXT NOT NULL DEFAULT '{}',
    settings_json TEXT NOT NULL DEFAULT '{}',
    status TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    model_label TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    started_at REAL,
    finished_at REAL,
    final_answer TEXT,
    step_count INTEGER NOT NULL DEFAULT 0,
    replan_count INTEGER NOT NULL DEFAULT 0,
    parent_run TEXT,
    parent_checkpoint TEXT,
    snapshot_json TEXT
);
CREATE INDEX IF NOT EXISTS runs_by_created ON runs (created_at);
CREATE INDEX IF NOT EXISTS runs_by_status ON runs (status);
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    ts REAL NOT NULL,
    kind TEXT NOT NULL,
    node TEXT NOT NULL DEFAULT '',
    namespace TEXT NOT NULL DEFAULT '',
    step INTEGER,
    data_json TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS event_texts (
    sha TEXT PRIMARY KEY,
    text TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS eval_sets (
    name TEXT PRIMARY KEY,
    eval_set_json TEXT NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS experiments (
    {rowid}
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    eval_set_json TEXT NOT NULL,
    variants_json TEXT NOT NULL,
    repeats INTEGER NOT NULL,
    max_workers INTEGER NOT NULL,
    design_json TEXT NOT NULL,
    settings_json TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at REAL NOT NULL,
    finished_at REAL,
    rerun_of TEXT
);
CREATE TABLE IF NOT EXISTS experiment_runs (
    {rowid}
    experiment_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    variant TEXT NOT NULL,
    question_index INTEGER NOT NULL,
    repeat INTEGER NOT NULL,
    PRIMARY KEY (experiment_id, variant, question_index, repeat)
);
CREATE TABLE IF NOT EXISTS model_modes (
    server TEXT NOT NULL,
    model TEXT NOT NULL,
    modes_json TEXT NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (server, model)
);
CREATE TABLE IF NOT EXISTS judgements (
    run_id TEXT PRIMARY KEY,
    model_label TEXT NOT NULL,
    scores_json TEXT NOT NULL,
    judged_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS decisions (
    interrupt_id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    decision TEXT NOT NULL,
    decided_by TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    decided_at REAL NOT NULL,
    item_json TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS decisions_by_time ON decisions (decided_at);
CREATE TABLE IF NOT EXISTS judge_jobs (
    id TEXT PRIMARY KEY,
    experiment_id TEXT,
    total INTEGER NOT NULL,
    judged INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL,
    error TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    finished_at REAL
)
"""

_QUEUED_REDIRECTS = """
CREATE TABLE IF NOT EXISTS queued_redirects (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    spec_json TEXT NOT NULL,
    note TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL
)
"""

_EVENTS_BY_KEY = """
CREATE UNIQUE INDEX IF NOT EXISTS events_by_key ON events (run_id, event_key)
    WHERE event_key IS NOT NULL
"""


def _tables(tx: Transaction) -> None:
    """Version 1: designs, prompt versions, runs and their events, eval sets, experiments,
    model modes, judgements, decisions and judge jobs."""
    tx.script(_VERSION_1)


def _leases(tx: Transaction) -> None:
    """Version 2: run leases (owner, lease_until), event keys, queued redirects."""
    tx.add_column("runs", "owner", "TEXT")
    tx.add_column("runs", "lease_until", "REAL")
    tx.add_column("events", "event_key", "TEXT")
    tx.script(_QUEUED_REDIRECTS)
    tx.script(_EVENTS_BY_KEY)


def _catch_up(tx: Transaction) -> None:
    """Version 3: what version-2 files gained on open without a number (who decides an
    experiment's approvals; any table an older file lacks), so every file at 3 has it all."""
    _tables(tx)
    _leases(tx)
    # auto / human / design; NULL: older experiments, whose runs waited for a person.
    tx.add_column("experiments", "approvals", "TEXT")


_MODEL_PROFILES = """
CREATE TABLE IF NOT EXISTS model_profiles (
    name TEXT PRIMARY KEY,
    endpoint TEXT NOT NULL,
    planner_model TEXT NOT NULL,
    worker_model TEXT NOT NULL,
    key_from TEXT NOT NULL,
    key_env TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS active_model_profile (
    slot TEXT PRIMARY KEY,
    name TEXT NOT NULL
)
"""


def _model_profiles(tx: Transaction) -> None:
    """Version 4: the Model page's model profiles and which one is active. No key column:
    a typed key is kept in the app's memory only, an environment variable by its name."""
    tx.script(_MODEL_PROFILES)


_HUMAN_REVIEWS = """
CREATE TABLE IF NOT EXISTS annotations (
    run_id TEXT NOT NULL,
    reviewer TEXT NOT NULL DEFAULT '',
    score INTEGER NOT NULL,
    note TEXT NOT NULL DEFAULT '',
    annotated_at REAL NOT NULL,
    PRIMARY KEY (run_id, reviewer)
);
CREATE TABLE IF NOT EXISTS pairwise_judgements (
    pair_key TEXT NOT NULL,
    reviewer TEXT NOT NULL DEFAULT '',
    experiment_id TEXT,
    question TEXT NOT NULL,
    run_a TEXT NOT NULL,
    run_b TEXT NOT NULL,
    choice TEXT NOT NULL,
    note TEXT NOT NULL DEFAULT '',
    judged_at REAL NOT NULL,
    PRIMARY KEY (pair_key, reviewer)
);
CREATE INDEX IF NOT EXISTS pairwise_by_experiment ON pairwise_judgements (experiment_id)
"""


def _human_reviews(tx: Transaction) -> None:
    """Version 5: people's judgements (``human_reviews``): a score and note per run, and
    which of two answers to one question is better. ``reviewer`` is '' when the app has no
    sign-in: one judgement per item and person either way."""
    tx.script(_HUMAN_REVIEWS)


_EVAL_SET_RUNS = """
CREATE TABLE IF NOT EXISTS eval_set_runs (
    run_id TEXT NOT NULL,
    eval_set TEXT NOT NULL,
    added_at REAL NOT NULL,
    PRIMARY KEY (run_id, eval_set)
)
"""
# The model judge's 1-5, as ``score_scales.JUDGE_SCALE`` writes it: the only scale there
# was before version 6. Spelled out, so this step never changes with the code.
_JUDGE_SCALE_JSON = '{"low":1,"high":5,"low_word":"poor","high_word":"good","labels":[]}'


def _score_scales(tx: Transaction) -> None:
    """Version 6: each annotation keeps the scale it was given on (a later change of its
    eval set's scale never reinterprets it; the older ones were all on the judge's 1-5),
    and which eval set a run was added to (its scores are on that set's scale)."""
    tx.add_column("annotations", "scale_json", "TEXT")
    tx.execute(
        "UPDATE annotations SET scale_json = ? WHERE scale_json IS NULL", (_JUDGE_SCALE_JSON,)
    )
    tx.script(_EVAL_SET_RUNS)


# The counts version 1 kept in columns of their own, as a plan counts them.
_OLD_COUNTS = (
    "'{\"steps\": ' || CAST(step_count AS TEXT) || ', \"replans\": ' "
    "|| CAST(replan_count AS TEXT) || '}'"
)


def _run_counts(tx: Transaction) -> None:
    """Version 7: a run's counts as its system defines them (``System.counts``: a bus
    counts requests and messages, a plan steps and replans), in one JSON column. The
    old ``step_count`` and ``replan_count`` move into it and are no longer written."""
    tx.add_column("runs", "counts_json", "TEXT")
    tx.execute(f"UPDATE runs SET counts_json = {_OLD_COUNTS} WHERE counts_json IS NULL")


_AUDIT_LOG = """
CREATE TABLE IF NOT EXISTS audit_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at REAL NOT NULL,
    by_whom TEXT NOT NULL,
    action TEXT NOT NULL,
    subject TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS audit_log_by_time ON audit_log (at)
"""


def _audit_log(tx: Transaction) -> None:
    """Version 8: who saved or activated a prompt version and who changed the design."""
    tx.script(_AUDIT_LOG)


_MCP_SERVERS = """
CREATE TABLE IF NOT EXISTS mcp_servers (
    name TEXT PRIMARY KEY,
    transport TEXT NOT NULL,
    command TEXT NOT NULL DEFAULT '',
    args_json TEXT NOT NULL DEFAULT '[]',
    env_json TEXT NOT NULL DEFAULT '{}',
    url TEXT NOT NULL DEFAULT '',
    added_by TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS mcp_tool_policies (
    server TEXT NOT NULL,
    tool TEXT NOT NULL,
    policy TEXT NOT NULL,
    annotations_json TEXT NOT NULL DEFAULT '{}',
    updated_at REAL NOT NULL,
    PRIMARY KEY (server, tool)
)
"""


def _mcp_servers(tx: Transaction) -> None:
    """Version 9: the Tools page's MCP servers and each tool's policy (its default from
    the tool's annotations). ``env_json`` maps each variable to a ``${VAR}`` reference or
    to null: a typed value is kept in the app's memory only, like a typed API key."""
    tx.script(_MCP_SERVERS)


def _mcp_choices(tx: Transaction) -> None:
    """Version 10: who chose a tool's policy on the Tools page (empty: the default from its
    annotations, refreshed when they change), and a server's status: ``pending`` when it
    came from an imported design and nobody has confirmed its command yet (nothing is
    started until then), else ``active``."""
    tx.add_column("mcp_tool_policies", "chosen_by", "TEXT NOT NULL DEFAULT ''")
    tx.add_column("mcp_servers", "status", "TEXT NOT NULL DEFAULT 'active'")


_USER_AGENTS = """
CREATE TABLE IF NOT EXISTS user_agents (
    name TEXT PRIMARY KEY,
    definition_json TEXT NOT NULL,
    updated_by TEXT NOT NULL DEFAULT '',
    updated_at REAL NOT NULL
)
"""


def _user_agents(tx: Transaction) -> None:
    """Version 11: the agents defined on the Design page (issue 30.1), each a
    ``UserAgent`` as JSON: its MCP tools are named by server, never by command."""
    tx.script(_USER_AGENTS)


# PostgreSQL only: a statement calls it to give up its transaction, with ``reason`` as
# the error (SQLSTATE ``REFUSED_STATE``: ``database.Refused``), when what the statements pipelined after it
# assumed does not hold. VOLATILE, so it is only called on the rows that reach it.
_REFUSE_FUNCTION = """
CREATE OR REPLACE FUNCTION stepwise_refuse(reason TEXT) RETURNS BOOLEAN
LANGUAGE plpgsql VOLATILE AS $body$
BEGIN
    RAISE EXCEPTION USING MESSAGE = reason, ERRCODE = '{REFUSED_STATE}';
END
$body$
""".replace("{REFUSED_STATE}", REFUSED_STATE)


def _refuse_function(tx: Transaction) -> None:
    """Version 12: on PostgreSQL, ``stepwise_refuse(reason)``: the event log stores a
    batch in one round trip, its first statement refusing the transaction when the run
    is not this process's or the batch's seqs or keys are not new (``Events.append``).
    Nothing on SQLite."""
    if tx.db.dialect == "postgresql":
        tx.execute(_REFUSE_FUNCTION)


MIGRATIONS = [
    Migration(1, "designs, prompts, runs, events, experiments and the rest", _tables),
    Migration(2, "run leases, event keys, queued redirects", _leases),
    Migration(3, "catch-up of what version 2 added unnumbered", _catch_up),
    Migration(4, "model profiles", _model_profiles),
    Migration(5, "people's annotations and pairwise judgements", _human_reviews),
    Migration(6, "score scales of annotations; runs added to eval sets", _score_scales),
    Migration(7, "runs' counts as their system defines them", _run_counts),
    Migration(8, "the audit log: who changed prompts and designs", _audit_log),
    Migration(9, "MCP tool servers and their tools' policies", _mcp_servers),
    Migration(10, "MCP tools' chosen policies; pending imported servers", _mcp_choices),
    Migration(11, "agents defined in the browser", _user_agents),
    Migration(12, "PostgreSQL: a function giving up a pipelined transaction", _refuse_function),
]
SCHEMA_VERSION = MIGRATIONS[-1].version
