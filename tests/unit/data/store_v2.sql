-- A store file at schema version 2, written by Stepwise's store before numbered
-- migrations (main at a85310a), dumped with sqlite3's iterdump: one row in every table.
BEGIN TRANSACTION;
CREATE TABLE active_prompts (
    prompt_name TEXT PRIMARY KEY,
    version_id INTEGER NOT NULL REFERENCES prompt_versions (id)
);
INSERT INTO "active_prompts" VALUES('plan_execute/planner',1);
CREATE TABLE decisions (
    interrupt_id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    decision TEXT NOT NULL,
    decided_by TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    decided_at REAL NOT NULL,
    item_json TEXT NOT NULL
);
INSERT INTO "decisions" VALUES('int-1','run-waiting','approve','alice','ok',1.79615540552172350883e+09,'{"id": "int-1", "kind": "approval"}');
CREATE TABLE designs (
    name TEXT PRIMARY KEY,
    design_json TEXT NOT NULL,
    updated_at REAL NOT NULL
);
INSERT INTO "designs" VALUES('current','{"system":"plan_execute","enabled_agents":["web_researcher","data_researcher","chart_generator","chart_summarizer","report_writer","synthesizer"],"max_replans":2,"recursion_limit":60,"prompts":{},"approvals":{},"pace_s":0.0,"escalate_at_cap":true,"approval_timeout_s":600.0,"approvals_by":"human","model":null,"timeout_action":"reject","bus_timeout_s":30.0,"guardrail":false,"guardrail_classifier":false,"hooks":[]}',1.79615540551794314379e+09);
CREATE TABLE eval_sets (
    name TEXT PRIMARY KEY,
    eval_set_json TEXT NOT NULL,
    updated_at REAL NOT NULL
);
INSERT INTO "eval_sets" VALUES('basics','{"name":"basics","description":"","questions":[{"question":"q1","checks":[]}]}',1.79615540552143836019e+09);
CREATE TABLE event_texts (
    sha TEXT PRIMARY KEY,
    text TEXT NOT NULL
);
INSERT INTO "event_texts" VALUES('47e7fdf57e547414a04a94919b22e6da7392636ac11a2c73c647caf43906d746','finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding finding ');
CREATE TABLE events (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    ts REAL NOT NULL,
    kind TEXT NOT NULL,
    node TEXT NOT NULL DEFAULT '',
    namespace TEXT NOT NULL DEFAULT '',
    step INTEGER,
    data_json TEXT NOT NULL,
    event_key TEXT,
    PRIMARY KEY (run_id, seq)
);
INSERT INTO "events" VALUES('run-old',1,1.0,'update','planner','',1,'{"messages": [{"id": "m1", "content": {"$text": "47e7fdf57e547414a04a94919b22e6da7392636ac11a2c73c647caf43906d746"}, "step": 1, "agent": "planner"}]}','update:t1');
INSERT INTO "events" VALUES('run-old',2,2.0,'state','','',NULL,'{"rows": [{"step": 1}], "final_answer": "AAPL", "counts": {"steps": 1, "replans": 0}}',NULL);
INSERT INTO "events" VALUES('run-old',3,3.0,'end','','',NULL,'{"status": "done", "reason": ""}',NULL);
CREATE TABLE experiment_runs (
    experiment_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    variant TEXT NOT NULL,
    question_index INTEGER NOT NULL,
    repeat INTEGER NOT NULL,
    PRIMARY KEY (experiment_id, variant, question_index, repeat)
);
INSERT INTO "experiment_runs" VALUES('exp1','run-old','A',0,0);
CREATE TABLE experiments (
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
, approvals TEXT);
INSERT INTO "experiments" VALUES('exp1','first experiment','{"name":"basics","description":"","questions":[{"question":"q1","checks":[]}]}','[{"name": "A", "prompts": {}, "versions": {}}]',1,2,'{"system":"plan_execute","enabled_agents":["web_researcher","data_researcher","chart_generator","chart_summarizer","report_writer","synthesizer"],"max_replans":2,"recursion_limit":60,"prompts":{},"approvals":{},"pace_s":0.0,"escalate_at_cap":true,"approval_timeout_s":600.0,"approvals_by":"human","model":null,"timeout_action":"reject","bus_timeout_s":30.0,"guardrail":false,"guardrail_classifier":false,"hooks":[]}','{"home": "/tmp/oldhome", "provider": "scripted", "openai_api_key": "unset", "openai_base_url": null, "planner_model": "gpt-4.1-mini", "worker_model": "gpt-4.1-mini", "structured_output": "auto", "tool_calling": "auto", "max_tokens": 1024, "max_reply_chars": 65536, "request_timeout_s": 60.0, "model_call_deadline_s": 120.0, "max_retries": 2, "temperature": 0.0, "scripted_delay_s": 0.0, "prices": {"offline scripted model": [0.0, 0.0], "gpt-4.1": [2.0, 8.0], "gpt-4.1-mini": [0.4, 1.6], "gpt-4.1-nano": [0.1, 0.4], "gpt-4o": [2.5, 10.0], "gpt-4o-mini": [0.15, 0.6]}, "run_lease_s": 30.0, "experiment_workers": 4, "max_replans": 3, "recursion_limit": 60, "bus_timeout_s": 30.0, "teams_api_base": "", "teams_http_timeout_s": 10.0, "tavily_api_key": "unset", "sql_max_rows": 500, "sql_timeout_s": 5.0, "sql_max_steps": 100000000, "sql_max_value_bytes": 1000000, "data_dir": "/work/main/data", "prompts_dir": "/work/main/prompts", "resolved_provider": "scripted"}','running',1.79615540552152419097e+09,NULL,NULL,'auto');
CREATE TABLE judge_jobs (
    id TEXT PRIMARY KEY,
    experiment_id TEXT,
    total INTEGER NOT NULL,
    judged INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL,
    error TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    finished_at REAL
);
INSERT INTO "judge_jobs" VALUES('job1','exp1',1,0,0,'running','',1.79615540552175617216e+09,NULL);
CREATE TABLE judgements (
    run_id TEXT PRIMARY KEY,
    model_label TEXT NOT NULL,
    scores_json TEXT NOT NULL,
    judged_at REAL NOT NULL
);
INSERT INTO "judgements" VALUES('run-old','judge','{"correct": 1}',1.79615540552169108395e+09);
CREATE TABLE model_modes (
    server TEXT NOT NULL,
    model TEXT NOT NULL,
    modes_json TEXT NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (server, model)
);
INSERT INTO "model_modes" VALUES('http://x/v1','small','{"structured": "json_object"}',1.79615540552165889745e+09);
CREATE TABLE prompt_versions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    prompt_name TEXT NOT NULL,
    label TEXT NOT NULL,
    text TEXT NOT NULL,
    created_at REAL NOT NULL
);
INSERT INTO "prompt_versions" VALUES(1,'plan_execute/planner','old','Plan for: {user_query}
Agents:
{agent_list}
{replan_section}
',1.79615540551808094979e+09);
CREATE TABLE queued_redirects (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    spec_json TEXT NOT NULL,
    note TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL
);
INSERT INTO "queued_redirects" VALUES(1,'run-waiting','{"kind": "message", "text": "hi"}','note',1.79615540552178382877e+09);
CREATE TABLE runs (
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
    snapshot_json TEXT,
    owner TEXT,
    lease_until REAL
);
INSERT INTO "runs" VALUES('run-old','Which stock grew the most?','plan_execute','{"system":"plan_execute","enabled_agents":["web_researcher","data_researcher","chart_generator","chart_summarizer","report_writer","synthesizer"],"max_replans":2,"recursion_limit":60,"prompts":{},"approvals":{},"pace_s":0.0,"escalate_at_cap":true,"approval_timeout_s":600.0,"approvals_by":"human","model":null,"timeout_action":"reject","bus_timeout_s":30.0,"guardrail":false,"guardrail_classifier":false,"hooks":[]}','{"plan_execute/planner": 1}','{"home": "/tmp/oldhome", "provider": "scripted", "openai_api_key": "unset", "openai_base_url": null, "planner_model": "gpt-4.1-mini", "worker_model": "gpt-4.1-mini", "structured_output": "auto", "tool_calling": "auto", "max_tokens": 1024, "max_reply_chars": 65536, "request_timeout_s": 60.0, "model_call_deadline_s": 120.0, "max_retries": 2, "temperature": 0.0, "scripted_delay_s": 0.0, "prices": {"offline scripted model": [0.0, 0.0], "gpt-4.1": [2.0, 8.0], "gpt-4.1-mini": [0.4, 1.6], "gpt-4.1-nano": [0.1, 0.4], "gpt-4o": [2.5, 10.0], "gpt-4o-mini": [0.15, 0.6]}, "run_lease_s": 30.0, "experiment_workers": 4, "max_replans": 3, "recursion_limit": 60, "bus_timeout_s": 30.0, "teams_api_base": "", "teams_http_timeout_s": 10.0, "tavily_api_key": "unset", "sql_max_rows": 500, "sql_timeout_s": 5.0, "sql_max_steps": 100000000, "sql_max_value_bytes": 1000000, "data_dir": "/work/main/data", "prompts_dir": "/work/main/prompts"}','done','','offline scripted model',1.79615540552042698852e+09,1.79615540552068781851e+09,3.0,'AAPL',1,0,NULL,NULL,'{"rows": [{"step": 1}], "final_answer": "AAPL", "counts": {"steps": 1, "replans": 0}}',NULL,NULL);
INSERT INTO "runs" VALUES('run-waiting','second','plan_execute','{"system":"plan_execute","enabled_agents":["web_researcher","data_researcher","chart_generator","chart_summarizer","report_writer","synthesizer"],"max_replans":2,"recursion_limit":60,"prompts":{},"approvals":{},"pace_s":0.0,"escalate_at_cap":true,"approval_timeout_s":600.0,"approvals_by":"human","model":null,"timeout_action":"reject","bus_timeout_s":30.0,"guardrail":false,"guardrail_classifier":false,"hooks":[]}','{}','{}','queued','','m',1.79615540552134680743e+09,NULL,NULL,NULL,0,0,NULL,NULL,NULL,NULL,NULL);
CREATE TABLE schema_version (version INTEGER NOT NULL);
INSERT INTO "schema_version" VALUES(2);
CREATE INDEX prompt_versions_by_name ON prompt_versions (prompt_name, id);
CREATE INDEX runs_by_created ON runs (created_at);
CREATE INDEX runs_by_status ON runs (status);
CREATE INDEX decisions_by_time ON decisions (decided_at);
CREATE UNIQUE INDEX events_by_key ON events (run_id, event_key)
    WHERE event_key IS NOT NULL;
DELETE FROM "sqlite_sequence";
INSERT INTO "sqlite_sequence" VALUES('prompt_versions',1);
INSERT INTO "sqlite_sequence" VALUES('queued_redirects',1);
COMMIT;
