"""What the offline scripted model's rules read from each prompt, as data the UI shows.

A prompt engineer on the default install edits prompts that a rule-based model answers:
most wording makes no difference to it. This table says, per prompt, what the rules take
from the prompt as sent (which lines, which quoted words), which edits therefore change
what it does, and what it ignores. It is written from the rules beside this file, and
tests/unit/test_scripted_reads.py runs the model on edited prompts to hold it to its
claims.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PromptReading:
    reads: str  # what the rules take from the prompt as sent
    effective: tuple[str, ...]  # edits that change what the offline model does
    ignored: str  # what makes no difference to it


_NOTHING = "Nothing: its wording never reaches a rule."
_ROLE = (
    "Nothing of its wording: the agent's tool calls are built from the task it is given, "
    "not from its role."
)
_NEVER_SENT = PromptReading(
    "Nothing: its rules read only the first request of a call, and their JSON is always "
    "usable, so this prompt never reaches them.",
    (),
    "All of it.",
)

READS: dict[str, PromptReading] = {
    "plan_execute/planner": PromptReading(
        'It takes the prompt for a plan request by the quoted words "agent" and '
        '"action". It reads the agents it may plan for from the line `"agent" must be '
        "one of: …` (else the `- name:` lines of the agent list), agents whose line says "
        '"side effects" (flagged for approval), and the question from the last line '
        "starting `User query:`. In a revision it reads the planner_replan section.",
        (
            'Writing the `"agent" must be one of:` list by hand with fewer agents: it '
            "plans with those agents only.",
            "Changing the `User query:` line: it plans for whatever question that line holds.",
            'Removing the quoted word "agent" or "action": it no longer sees a plan '
            "request, and the run fails.",
        ),
        'Everything else: the guidelines, the example, limits such as "use at most 3 '
        "steps\", tone and wording. Its steps come from fixed rules over the question's "
        "clauses (data, chart, report, search), ending with the synthesizer.",
    ),
    "plan_execute/planner_fresh": PromptReading(
        "Nothing of its own: it is placed in the Planner prompt, whose lines the rules read.",
        (),
        "All of it.",
    ),
    "plan_execute/planner_replan": PromptReading(
        "The line `… revision at step N because: …` (which step to unblock) and the plan "
        "after `Current plan:`.",
        (
            'Rewording "revision at step {current_step} because:" or "Current plan:": '
            "it no longer sees a revision and writes a fresh plan instead.",
        ),
        "The advice on how to replan: it always hands the blocked step to the other "
        "researcher (or retries it more broadly) and keeps every other step.",
    ),
    "plan_execute/executor": PromptReading(
        'It takes the prompt for the Executor\'s by the quoted word "goto". It reads the '
        "context lines `- Current step index …:`, `- Full plan …:`, `- Result of current "
        "step …:`, `- Replan attempts (step) …:` and `- User query …:`, and its replan cap "
        'from "After N replans".',
        (
            'Changing the number in "After {max_replans} replans" (say, "After 1 '
            "replans\"): it stops asking for replans sooner (the run's own cap still holds).",
            "Renaming or removing a context line: it misreads the state (a missing result "
            'reads as "not run yet").',
        ),
        "The tasks, guidelines and priorities: it follows the source design's three cases "
        "(replan a step with no usable result, else the next step's agent, else the end).",
    ),
    "plan_execute/agent_system": PromptReading(_ROLE, (), "All of its wording."),
    "plan_execute/web_researcher": PromptReading(_ROLE, (), "All of it."),
    "plan_execute/data_researcher": PromptReading(
        'Only whether the word "stocks" is in it, which {schema} always puts there; the '
        "SQL is written from the step's instruction by fixed question shapes.",
        (),
        "All of its wording.",
    ),
    "plan_execute/chart_generator": PromptReading(
        "The dataset lines `- sql:N: columns …` that {datasets} fills in: it charts the "
        "latest one with a date and a price (a line) or a symbol and a figure (bars).",
        (),
        "The instructions on choosing columns and marks.",
    ),
    "plan_execute/chart_summarizer": PromptReading(_NOTHING, (), "All of it."),
    "plan_execute/report_writer": PromptReading(_ROLE, (), "All of it."),
    "plan_execute/synthesizer": PromptReading(
        'It takes the prompt for the synthesizer\'s by the word "Findings". It reads the '
        '`User question:` line, the lines starting "- Step" between "Findings, step by '
        'step:" and "Sources you may cite:", and the line "Chart caption (if a chart '
        'was made): …".',
        (
            'Rewording "Sources you may cite:": it finds no findings and answers that no '
            "step found usable data.",
            'Removing the word "Findings": it no longer sees a synthesizer prompt and '
            "answers that it has no rule for it.",
        ),
        "Instructions on style, citations or length: it restates each finding by rule.",
    ),
    "plan_execute/repair": _NEVER_SENT,
    "supervisor_bus/supervisor": PromptReading(
        'It takes the prompt for the supervisor\'s by the quoted word "next_agent". It '
        'reads the agents it may route to, in order, from the line `"next_agent" must be '
        "one of: …`, who has answered from `Answered so far:`, who is ruled out from `Do "
        'not ask again:`, and the question from `User question: "…"`.',
        (
            'Writing the `"next_agent" must be one of:` list by hand in another order or '
            "without an agent: it routes in that order, to those agents only.",
            "Removing the `Answered so far:` line: it no longer sees who has answered.",
        ),
        "How to decide: it routes to the first agent offered that has not answered, then FINISH.",
    ),
    "supervisor_bus/researcher": PromptReading(_ROLE, (), "All of it."),
    "supervisor_bus/writer": PromptReading(_ROLE, (), "All of it."),
    "supervisor_bus/reviewer": PromptReading(_ROLE, (), "All of it."),
    "supervisor_bus/request": PromptReading(
        "All of it, as the worker's task: the researcher searches for its whole text, the "
        'writer takes the title from `answer to "…"` and the body from the messages '
        'after "Messages you received for this task:".',
        ("Adding words around {task}: the researcher's search includes them.",),
        "Nothing that ends up in the request text is ignored.",
    ),
    "supervisor_bus/repair": _NEVER_SENT,
    "hierarchical_teams/plan": PromptReading(
        'It takes the prompt for a plan by the quoted words "subtasks" and '
        '"depends_on". It reads the teams from the line `"team" must be one of: …` and '
        'the request from `User request: "…"`.',
        (
            'Writing the `"team" must be one of:` list by hand without a team: the parts '
            "of the request for that team are left out.",
        ),
        "The rules and the example: it makes one subtask per clause of the request, by "
        "fixed verb rules.",
    ),
    "hierarchical_teams/replan": PromptReading(
        'It takes the prompt for a replan by the quoted words "keep" and "cancel". It '
        'reads `Edited request (revision N): "…"`, the `"team" must be one of:` line '
        "and the subtask lines `- sN [team] status=…: instruction`.",
        ("Rewording the `Edited request (revision …):` line: it no longer sees the edit.",),
        "The rules: it keeps open subtasks the edited request repeats word for word, "
        "cancels the rest and adds the new parts.",
    ),
    "hierarchical_teams/route": PromptReading(
        'It takes the prompt by the quoted word "next_subtask_id" and reads the `- id=…` '
        "lines: it always picks the first.",
        (),
        "All its wording.",
    ),
    "hierarchical_teams/team_supervisor": PromptReading(
        'It takes the prompt by the quoted word "next_worker". It reads `You supervise '
        '<team>`, the line `"next_worker" must be one of: …`, `Your subtask, the only '
        "work you have: …` and the report lines `- worker (ok|failed):`.",
        (
            'Rewording "You supervise {team}" or "Your subtask, the only work you have:": '
            "it no longer knows its team or its subtask.",
        ),
        "How to pick: each team's workers go in a fixed order, then FINISH.",
    ),
    "hierarchical_teams/worker_task": PromptReading(
        "All of it, as the worker's task: the searcher takes its topic from the first "
        'line, the url_builder reads the `- domain (` lines and "query terms: …", the '
        "site_requester sends the URLs in it.",
        ('Adding a line before "Task: {task}": the searcher searches for that line\'s words.',),
        "Nothing that ends up in the task text is ignored.",
    ),
    "hierarchical_teams/health_checker": PromptReading(
        'The line "API base URL: …" ({api_base}): the address it calls.',
        ('Changing or removing "API base URL: {api_base}": the call goes elsewhere.',),
        "The rest of its wording.",
    ),
    "hierarchical_teams/site_requester": PromptReading(
        'The line "API base URL: …" ({api_base}): the address it posts to.',
        ('Changing or removing "API base URL: {api_base}": the call goes elsewhere.',),
        "The rest of its wording.",
    ),
    "hierarchical_teams/searcher": PromptReading(_ROLE, (), "All of it."),
    "hierarchical_teams/url_builder": PromptReading(_ROLE, (), "All of it."),
    "hierarchical_teams/repair": _NEVER_SENT,
    "guardrail/classifier": PromptReading(
        'It takes the prompt by the quoted word "verdict" and reads the message between '
        'the first pair of `"""`: it refuses a message naming passwords, API keys, '
        "secrets, credentials or a jailbreak and passes the rest.",
        (
            'Removing the `"""` around {message}: it reads the whole prompt, whose own '
            'words ("keys or passwords") then make it refuse every message.',
        ),
        "What the rules say to refuse: its word list is fixed.",
    ),
    "models/json_shape": PromptReading(
        "Nothing: the offline model takes structured output natively; this prompt goes "
        "only to servers without json_schema.",
        (),
        "All of it.",
    ),
    "models/tool_calling": PromptReading(
        "Nothing: the offline model takes tool calls natively; this prompt goes only to "
        "servers without native tool calls.",
        (),
        "All of it.",
    ),
    "judge/gpa": PromptReading(
        "Nothing: the offline model cannot judge, so this prompt is never sent to it.",
        (),
        "All of it.",
    ),
}

UNDESCRIBED = PromptReading(
    "Not described: read the rules for this system under graph/models/scripted/.", (), ""
)


# A user agent's own prompt (graph.agents.user_agents registers the family; the models'
# layer sits below the agents' and names the prefix itself).
USER_AGENT_PREFIX = "user_agents/"
USER_AGENT = PromptReading(
    "Only its tool lines, as {tools} writes them (“- name (read-only): …”): it calls the "
    "first tool listed as read-only, with arguments from the step's text, or says a real "
    "model is needed.",
    (
        "Removing {tools}: no tool is listed, so its rules call none and say they have no "
        "rule for its tools.",
    ),
    "Everything else: its role, its instructions, {name} and {description}.",
)


def reading(name: str) -> PromptReading:
    """What the offline model's rules read from prompt ``name``."""
    if name.startswith(USER_AGENT_PREFIX) and name not in READS:
        return USER_AGENT
    return READS.get(name, UNDESCRIBED)
