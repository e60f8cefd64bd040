"""The offline scripted model: a deterministic chat model that is honest about being one.

It is not an LLM and never says it is one: the UI calls it "offline scripted model".
It reads what it is sent the way a model would have to (the agent list and the user
query in the Planner prompt, the step and its result in the Executor prompt, the
tools it was given and what they returned) and answers by fixed rules, so an edited
prompt changes its answers and whole runs work end to end with no network.

What it can do is deliberately small: plan steps for the enabled agents, decide the
executor's routing (including replans when a step returns nothing usable), write
SQL for a handful of question shapes over the stock database, call search, chart and
caption tools, and stitch a final answer from the findings with their citations. For
supervisor_bus it recognises the supervisor by the ``"next_agent"`` key of its JSON
example (research, then writing, then review, then FINISH), and chains a second tool
where a worker has one (a search is followed by reading its top document, formatted
output by saving it as a draft).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool

from graph.models import tool_prompting

LABEL = "offline scripted model"

COMPANIES = {"microsoft": "MSFT", "amazon": "AMZN", "ibm": "IBM", "google": "GOOG",
             "alphabet": "GOOG", "apple": "AAPL"}
TICKERS = set(COMPANIES.values())
_NOT_COMPANIES = {
    "what", "which", "how", "why", "when", "where", "who", "chart", "plot", "compare", "show",
    "find", "fetch", "the", "i", "and", "in", "of", "use", "using", "search", "try", "sql",
    "database", "stock", "stocks", "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december", "nasdaq", "s", "p",
    "ceo", "us", "usa", "answer", "list", "give", "tell", "did", "does", "do", "is", "was",
    "are", "were", "a", "an", "between", "from", "to", "for", "step", "then", "also", "its",
    "iphone", "ipod", "ipo", "aws", "dot", "com", "crash", "crisis", "lehman", "vista",
    "windows", "lenovo", "wall", "street", "year", "years", "final", "symbols", "period",
    "save", "report", "keep", "write", "titled", "findings",
}
USELESS_MARKERS = ("no usable results", "no results", "error:", "refused")


def count_tokens(text: str) -> int:
    """A plain word-and-punctuation count: what the scripted model reports as usage."""
    return len(re.findall(r"\w+|[^\w\s]", text))


class ScriptedChatModel(BaseChatModel):
    """Deterministic rules behind LangChain's chat-model interface, with tool calling."""

    is_scripted: bool = True
    model_name: str = LABEL
    delay_s: float = 0.0  # a pause per call, so a demo or a test can watch a run unfold

    @property
    def _llm_type(self) -> str:
        return "stepwise-scripted"

    def bind_tools(self, tools, *, tool_choice: Any = None, **kwargs):
        """Accept LangChain tools, functions, pydantic classes or OpenAI tool dicts."""
        formatted = [convert_to_openai_tool(t) for t in tools]
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    def _generate(self, messages: list[BaseMessage], stop=None, run_manager=None,
                  tools: list[dict] | None = None, tool_choice: Any = None,
                  **kwargs) -> ChatResult:
        if self.delay_s:
            time.sleep(self.delay_s)
        if not tools and tool_prompting.is_prompted(messages):
            # Tools offered in the prompt (a server without native tool calls): read the
            # conversation back, apply the same rules, write the reply as the JSON action.
            offered = [{"function": {"name": n}} for n in tool_prompting.offered_tools(messages)]
            inner = self._generate(tool_prompting.from_prompted(messages), tools=offered)
            reply = inner.generations[0].message
            message = AIMessage(content=tool_prompting.encode_reply(reply),
                                usage_metadata=reply.usage_metadata,
                                response_metadata={"model_name": LABEL})
            return ChatResult(generations=[ChatGeneration(message=message)])
        tool_names = [t["function"]["name"] for t in tools or []]
        forced = tool_choice not in (None, "auto", "none")
        if forced and len(tool_names) == 1 and tool_names[0] not in TOOL_RULES:
            # with_structured_output: answer the task as JSON, delivered as the tool's args.
            args = json.loads(_answer_text(messages))
            message = AIMessage(content="", tool_calls=[_call(tool_names[0], args)])
        elif tool_names and not isinstance(messages[-1], ToolMessage):
            message = _use_tool(messages, tool_names)
        elif tool_names and (follow := _follow_up(messages, tool_names)) is not None:
            message = follow
        else:
            message = AIMessage(content=_answer_text(messages))
        read = sum(count_tokens(_text(m)) for m in messages)
        wrote = count_tokens(message.content) + sum(
            count_tokens(json.dumps(c["args"])) for c in message.tool_calls)
        message.usage_metadata = {"input_tokens": read, "output_tokens": wrote,
                                  "total_tokens": read + wrote}
        message.response_metadata = {"model_name": LABEL}
        return ChatResult(generations=[ChatGeneration(message=message)])


# --------------------------------------------------------------------------- dispatch


def _text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)


def _call(name: str, args: dict) -> dict:
    return {"name": name, "args": args, "id": f"call_{uuid.uuid5(uuid.NAMESPACE_OID, name + json.dumps(args, sort_keys=True)).hex[:12]}", "type": "tool_call"}


def _task_prompt(messages: list[BaseMessage]) -> str:
    """The prompt that states the task: a repair request refers back to the first one."""
    humans = [_text(m) for m in messages if isinstance(m, HumanMessage)]
    return humans[0] if humans else ""


def _answer_text(messages: list[BaseMessage]) -> str:
    prompt = _task_prompt(messages)
    if isinstance(messages[-1], ToolMessage):
        return _summarise_tool_result(messages)
    if prompt.startswith("Connection check.") and (asked := re.search(r"JSON only: (\{.*\})", prompt)):
        return asked.group(1)  # the Model page's check: the reply it asks for
    if '"verdict"' in prompt:
        return json.dumps(guardrail_verdict(prompt))
    if (teams := teams_answer(prompt)) is not None:
        return json.dumps(teams)
    if '"next_agent"' in prompt:
        return json.dumps(supervisor_decision(prompt))
    if '"goto"' in prompt:
        return json.dumps(executor_decision(prompt))
    if '"agent"' in prompt and '"action"' in prompt:
        return json.dumps(plan_for(prompt))
    if "Findings" in prompt:
        return synthesize(prompt)
    return (f"[{LABEL}] I follow fixed rules and have none for this request. "
            "Configure a real model (OPENAI_BASE_URL / OPENAI_API_KEY) for free-form answers.")


# --------------------------------------------------------------------------- planner


def allowed_values(prompt: str, field: str) -> list[str] | None:
    """The values a prompt allows for a JSON field, from its line ``"field" must be one of:
    a, b, c.`` (None when the prompt has no such line)."""
    found = re.search(rf'"{re.escape(field)}" must be one of: (.+?)(?:\.\s|\.?$)', prompt, re.M)
    if not found:
        return None
    return [v.strip() for v in found.group(1).split(",") if v.strip()]


def _agents_offered(prompt: str) -> list[str]:
    """The agents a prompt lets us use: its list of allowed values, else its agent list."""
    allowed = allowed_values(prompt, "agent")
    if allowed is not None:
        return allowed
    return re.findall(r"^- ([a-z]+_[a-z_]+):", prompt, re.M)


def _user_query(prompt: str) -> str:
    found = re.findall(r'User (?:query|question)\s*[.:]*\s*"?(.+?)"?\s*$', prompt, re.M)
    if found:
        return found[-1].strip()
    lines = [line for line in prompt.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _clauses(question: str) -> list[str]:
    parts = re.split(r"(?<=[.?!;])\s+|,\s*and\s+|\s+and then\s+|\s+and\s+(?=(?:how|what|why|"
                     r"which|when|who)\b)", question.strip())
    return [p.strip(" .?!;,") for p in parts if p and p.strip(" .?!;,")]


def _symbols(text: str) -> list[str]:
    found = []
    for word in re.findall(r"[A-Za-z][A-Za-z.]+", text):
        sym = word.upper() if word.upper() in TICKERS else COMPANIES.get(word.lower())
        if sym and sym not in found:
            found.append(sym)
    return found


def _unknown_companies(text: str) -> list[str]:
    """Capitalised names that are not companies in the database (e.g. "Tesla")."""
    names = []
    for match in re.finditer(r"(?<![.?!]\s)(?<!^)\b([A-Z][a-z]{2,})(?:'s)?\b", text):
        word = match.group(1)
        if word.lower() not in _NOT_COMPANIES and word.lower() not in COMPANIES:
            names.append(word)
    return names


def _years(text: str) -> list[int]:
    return [int(y) for y in re.findall(r"\b(19[89]\d|20[0-2]\d)\b", text)]


def _is_chart(text: str) -> bool:
    return bool(re.search(r"\b(chart|plot|graph|visuali[sz]e|draw)\b", text, re.I))


def _is_data(text: str) -> bool:
    return bool(re.search(
        r"\b(stock|stocks|price|prices|grew|growth|gain|average|highest|lowest|return|"
        r"performed|database|percent|fell|drop)\b", text, re.I))


def _hints(clause: str, question: str) -> str:
    """Symbols and period from the clause, else inherited from the whole question."""
    symbols = _symbols(clause) or _unknown_companies(clause) or _symbols(question)
    years = _years(clause) or _years(question)
    parts = []
    if symbols:
        parts.append("symbols: " + ", ".join(symbols))
    if years:
        parts.append(f"period: {min(years)}-{max(years)}")
    return f" ({'; '.join(parts)})" if parts else ""


def plan_for(prompt: str) -> dict:
    """A plan (fresh or revised) from what the Planner prompt says."""
    agents = _agents_offered(prompt)
    if revision := re.search(r"revision at step (\d+) because: (.*)", prompt):
        current = re.search(r"Current plan:\s*(\{.*?\n\})", prompt, re.S)
        if current:
            written = json.loads(current.group(1))
            plan = ({str(i): s for i, s in enumerate(written["steps"], 1)}
                    if "steps" in written else written)
            return _as_steps(_revise(plan, int(revision.group(1)), agents))
    question = _user_query(prompt)
    steps: list[dict] = []

    def add(agent: str, action: str) -> None:
        if agent in agents:
            steps.append({"agent": agent, "action": action})

    have_series = False
    wants_report = False
    for clause in _clauses(question):
        hints = _hints(clause, question)
        if _ASKS_APPROVAL.search(clause) and not _is_data(clause):
            continue  # an instruction about approvals, not something to research
        if _is_report(clause):
            wants_report = True
        elif _is_chart(clause):
            if not have_series:
                add("data_researcher", f"Fetch the monthly prices to chart{hints}.")
            add("chart_generator", f"Chart the monthly prices fetched earlier{hints}.")
            have_series = True
        elif _is_data(clause):
            researcher = "data_researcher" if "data_researcher" in agents else "web_researcher"
            add(researcher, f"Using the stock database, answer: {clause}{hints}.")
        else:
            researcher = "web_researcher" if "web_researcher" in agents else "data_researcher"
            add(researcher, f"Search the documents for: {clause}.")
    if wants_report:
        add("report_writer", f"Save the findings so far as a report titled \"{question}\".")
    add("synthesizer", f"Answer the user's question from the findings: {question}")
    if not steps and agents:  # nothing fits: let the one agent there is do what it can
        add(agents[0], f"Do what you can for: {question}")
    _flag_for_approval(steps, prompt, question)
    return {"steps": steps}


def _as_steps(plan: dict) -> dict:
    """The seed's ``{"1": {...}}`` map in the shape the Planner is asked for."""
    return {"steps": [plan[k] for k in sorted(plan, key=int)]}


_ASKS_APPROVAL = re.compile(r"\b(ask me|my approval|approve each|check with me)\b", re.I)


def _is_report(text: str) -> bool:
    return bool(re.search(r"\b(save|write|keep|store|file)\b.*\breport\b|\breport\b.*\b(save|file)\b",
                          text, re.I))


def _flag_for_approval(steps: list[dict], prompt: str, question: str) -> None:
    """Flag what the prompt says to flag: agents it lists as having side effects, and
    every research step when the user asked to approve steps."""
    risky = set(re.findall(r"^- ([a-z_]+):[^\n]*side effects", prompt, re.M))
    asked = _ASKS_APPROVAL.search(question)
    for step in steps:
        if step["agent"] in risky:
            step.update(approval=True, approval_reason=f"{step['agent']} has side effects.")
        elif asked and step["agent"] != "synthesizer":
            step.update(approval=True, approval_reason="The user asked to approve the steps.")


def _revise(plan: dict, step: int, agents: list[str]) -> dict:
    """Unblock step ``step``: hand it to the other researcher, keep every other step."""
    block = dict(plan.get(str(step), {}))
    agent, action = block.get("agent"), block.get("action", "")
    topic = re.sub(r"^(Using the stock database, answer|Search the documents for|"
                   r"Try again more broadly): ", "", action).rstrip(".")
    if agent == "data_researcher" and "web_researcher" in agents:
        block = {"agent": "web_researcher", "action": f"Search the documents for: {topic}."}
    elif agent == "web_researcher" and "data_researcher" in agents and _is_data(topic):
        block = {"agent": "data_researcher", "action": f"Using the stock database, answer: {topic}."}
    elif agent not in agents:
        fallback = next((a for a in ("web_researcher", "data_researcher", "synthesizer")
                         if a in agents), agents[0] if agents else agent)
        block = {"agent": fallback, "action": action}
    else:
        block = {"agent": agent, "action": f"Try again more broadly: {topic}."}
    revised = dict(plan)
    revised[str(step)] = block
    return revised


# --------------------------------------------------------------------------- executor


def _field(prompt: str, label: str) -> str:
    found = re.search(rf"^- {label} \.*: ?(.*)$", prompt, re.M)
    return found.group(1).strip() if found else ""


def _useful(result: str) -> bool:
    lowered = result.lower()
    return bool(result) and result != "(not run yet)" and not any(
        marker in lowered for marker in USELESS_MARKERS)


def executor_decision(prompt: str) -> dict:
    """The seed's three cases, in order: replan, next step, current step."""
    step = int(_field(prompt, "Current step index") or 1)
    plan = json.loads(_field(prompt, "Full plan") or "{}")
    result = _field(prompt, "Result of current step")
    attempts = int(_field(prompt, r"Replan attempts \(step\)") or 0)
    cap = re.search(r"After (\d+) replans", prompt)
    max_replans = int(cap.group(1)) if cap else 3
    block, nxt = plan.get(str(step), {}), plan.get(str(step + 1))
    question = _field(prompt, "User query")

    if result == "(not run yet)" or not result:
        return {"replan": False, "goto": block.get("agent", "planner"),
                "reason": f"Step {step} has not run yet.",
                "query": _standalone(block.get("action", question), question)}
    if not _useful(result) and attempts < max_replans:
        return {"replan": True, "goto": "planner",
                "reason": f"Step {step} ({block.get('agent')}) produced no usable data: "
                          f"{result[:160]}", "query": ""}
    why = "has a useful result" if _useful(result) else \
        f"still has no usable data after {attempts} replan(s); moving on"
    if nxt:
        return {"replan": False, "goto": nxt["agent"], "reason": f"Step {step} {why}.",
                "query": _standalone(nxt.get("action", ""), question)}
    return {"replan": False, "goto": "end", "reason": f"Step {step} {why}; the plan is complete.",
            "query": ""}


def _standalone(action: str, question: str) -> str:
    return action if question in action else f"{action} (User question: {question})"


# --------------------------------------------------------------------------- workers


def _use_tool(messages: list[BaseMessage], tool_names: list[str]) -> AIMessage:
    """Call the first tool we have a rule for, with arguments drawn from the request."""
    request = _text(next((m for m in reversed(messages) if isinstance(m, HumanMessage)),
                         HumanMessage(content="")))
    system = "\n".join(_text(m) for m in messages if isinstance(m, SystemMessage))
    for name in tool_names:
        if rule := TOOL_RULES.get(name):
            args = rule(request, system)
            if isinstance(args, str):  # the rule explains why it cannot call the tool
                return AIMessage(content=args)
            return AIMessage(content="", tool_calls=[_call(name, args)])
    return AIMessage(content=f"No usable results: the {LABEL} has no rule for the tools "
                             f"{', '.join(tool_names)}.")


def _search_args(request: str, system: str) -> dict:
    query = re.sub(r"^(Search the documents for|Try again more broadly|Using the stock "
                   r"database, answer):\s*", "", request)
    return {"query": re.sub(r"\s*\((symbols|period|User question):.*?\)", "", query).strip(" .")}


def _chart_args(request: str, system: str) -> dict | str:
    datasets = re.findall(r"^- (sql:\d+): columns ([\w, ]+)", system, re.M)
    for dataset_id, cols in reversed(datasets):
        columns = [c.strip() for c in cols.split(",")]
        if "date" in columns and "price" in columns:
            return {"dataset_id": dataset_id, "x": "date", "y": "price",
                    "color": "symbol" if "symbol" in columns else None, "mark": "line",
                    "title": "Monthly closing price"}
    for dataset_id, cols in reversed(datasets):
        columns = [c.strip() for c in cols.split(",")]
        numeric = [c for c in columns if c.endswith(("_pct", "price", "avg_price"))]
        if "symbol" in columns and numeric:
            return {"dataset_id": dataset_id, "x": "symbol", "y": numeric[-1], "mark": "bar",
                    "title": numeric[-1].replace("_", " ")}
    return "No usable results: no dataset with prices has been fetched yet, so there is nothing to chart."


def _sql_args(request: str, system: str) -> dict | str:
    if "stocks" not in system:
        return "No usable results: the database schema I was given has no stocks table."
    return {"sql": write_sql(request)}


def _report_args(request: str, system: str) -> dict:
    title = re.search(r'titled "(.+?)"', request)
    findings = request.split("Findings so far:", 1)
    body = findings[1].strip() if len(findings) > 1 else "(no findings yet)"
    return {"title": title.group(1) if title else "Stepwise report", "body": body}


TOOL_RULES = {
    "search_knowledge_base": _search_args,
    "run_sql": _sql_args,
    "make_chart": _chart_args,
    "describe_chart": lambda request, system: {},
    "save_report": _report_args,
    "fetch_document": lambda request, system: _fetch_args(request),
    "format_output": lambda request, system: _format_args(request),
    "write_draft": lambda request, system: _format_args(request),
    "check_citations": lambda request, system: {"text": _received(request) or request},
    # the Model page's connection check: "Call the tool echo with the word pong."
    "echo": lambda request, system: {"word": (re.findall(r"with the word (\w+)", request)
                                              or ["pong"])[0]},
}


def write_sql(request: str) -> str:
    """SQL for the question shapes the scripted model knows: growth, averages, extremes, series."""
    # The instruction decides; the user's question appended to it only fills gaps.
    instruction, _, context = request.partition("(User question:")
    hint_symbols = re.search(r"symbols: ([^;)]+)", instruction)
    if hint_symbols:
        symbols = [s.strip().upper() for s in hint_symbols.group(1).split(",") if s.strip()]
    else:
        symbols = (_symbols(instruction) or [n.upper() for n in _unknown_companies(instruction)]
                   or _symbols(context))
    years = _years(instruction) or _years(context)
    request = instruction
    start = f"{min(years)}-01-01" if years else "2000-01-01"
    end = f"{max(years)}-12-31" if years else "2010-12-31"
    where = f"date BETWEEN '{start}' AND '{end}'"
    if symbols:
        where += " AND symbol IN (" + ", ".join(f"'{s}'" for s in symbols) + ")"
    text = request.lower()
    if re.search(r"\b(chart|plot|monthly prices|price series|fetch the monthly)\b", text):
        return f"SELECT date, symbol, price FROM stocks WHERE {where} ORDER BY date, symbol"
    if re.search(r"\b(grew|grow|growth|gain|gained|rise|rose|increase|change|changed|"
                 r"return|perform|performed|fell|fall|drop|dropped|decline|lost)\b", text):
        order = "ASC" if re.search(r"\b(fell|fall|drop|dropped|decline|lost|worst)\b", text) else "DESC"
        return (
            "WITH span AS (SELECT symbol, MIN(date) AS first_date, MAX(date) AS last_date "
            f"FROM stocks WHERE {where} GROUP BY symbol) "
            "SELECT s.symbol, s.first_date, f.price AS first_price, s.last_date, "
            "l.price AS last_price, ROUND(100.0 * (l.price - f.price) / f.price, 1) AS growth_pct "
            "FROM span s JOIN stocks f ON f.symbol = s.symbol AND f.date = s.first_date "
            "JOIN stocks l ON l.symbol = s.symbol AND l.date = s.last_date "
            f"ORDER BY growth_pct {order}")
    if re.search(r"\b(average|mean)\b", text):
        return (f"SELECT symbol, ROUND(AVG(price), 2) AS avg_price, COUNT(*) AS months "
                f"FROM stocks WHERE {where} GROUP BY symbol ORDER BY avg_price DESC")
    if re.search(r"\b(highest|peak|max|maximum|lowest|min|minimum|bottom)\b", text):
        agg, order = ("MIN", "ASC") if re.search(r"\b(lowest|min|minimum|bottom)\b", text) else ("MAX", "DESC")
        return (f"SELECT symbol, date, price FROM stocks s WHERE {where} AND price = "
                f"(SELECT {agg}(price) FROM stocks t WHERE t.symbol = s.symbol AND "
                f"t.{where.replace('symbol IN', 't.symbol IN')}) ORDER BY price {order}")
    return f"SELECT date, symbol, price FROM stocks WHERE {where} ORDER BY date, symbol"


def _summarise_tool_result(messages: list[BaseMessage]) -> str:
    result = messages[-1]
    content = _text(result)
    name = getattr(result, "name", "") or _tool_name(messages, result)
    if content.startswith(("NO RESULTS", "ERROR")):
        return f"No usable results: {content.splitlines()[0]}"
    if name == "search_knowledge_base":
        hits = re.findall(r"^(\[kb:[^\]]+\]) (.+)$", content, re.M)
        return "Findings: " + "; ".join(f"{title} {source}" for source, title in hits[:3])
    if name == "run_sql":
        return _read_rows(content)
    if name == "make_chart":
        return content
    if name == "describe_chart":
        return _caption(content)
    if name == "save_report":
        return content
    if name == "fetch_document":
        return _findings_with_reading(messages, content)
    return content


def _tool_name(messages: list[BaseMessage], result: ToolMessage) -> str:
    """Which tool produced ``result``: over HTTP a tool message carries only the call id."""
    for message in reversed(messages):
        for call in getattr(message, "tool_calls", None) or []:
            if call.get("id") == result.tool_call_id:
                return call["name"]
    return ""


def _read_rows(content: str) -> str:
    lines = content.splitlines()
    count = re.search(r"^(\d+) row", lines[1] if len(lines) > 1 else "")
    if not count or count.group(1) == "0":
        return f"No usable results: the query returned no rows. {lines[0]}"
    header = lines[2].split(" | ")
    top = "; ".join(lines[3:6])
    first = ", ".join(f"{k} {v}" for k, v in zip(header, lines[3].split(" | ")))
    return (f"The query returned {count.group(1)} row(s) with columns {', '.join(header)}. "
            f"Top rows: {top}. Reading: first row {first}.")


def _caption(content: str) -> str:
    rows = re.findall(r"^(\S+): first ([\d.]+) at (\S+), last ([\d.]+) at (\S+), min ([\d.]+) "
                      r"at (\S+), max ([\d.]+) at (\S+)", content, re.M)
    if not rows:
        return "No usable results: the chart has no figures to describe."

    def change(r):
        return (float(r[3]) - float(r[1])) / float(r[1]) * 100

    best = max(rows, key=change)
    worst = min(rows, key=change)
    text = (f"{best[0]} moved from {best[1]} ({best[2]}) to {best[3]} ({best[4]}), "
            f"{change(best):+.1f}%, the largest change of {len(rows)} series.")
    if worst is not best:
        text += f" {worst[0]} went from {worst[1]} to {worst[3]} ({change(worst):+.1f}%)."
    return text


# --------------------------------------------------------------------------- synthesizer


_STEP_PREFIX = re.compile(r"^- Step \d+ \(\w+\):\s*")


def synthesize(prompt: str) -> str:
    """The findings restated per step, each with the source ids it came with."""
    question = _user_query(prompt)
    section = re.search(r"Findings, step by step:\s*(.*?)\n\s*Sources you may cite:", prompt, re.S)
    findings = [line.strip() for line in (section.group(1) if section else "").splitlines()
                if line.strip().startswith("- Step")]
    useful = [f for f in findings if _useful(f)]
    caption = re.search(r"Chart caption \(if a chart was made\): (.+)$", prompt, re.M)
    lines = [f"FINAL ANSWER: Answer to \"{question}\", from the steps that ran:"]
    for finding in useful:
        finding = _STEP_PREFIX.sub("", finding)
        if finding.startswith("Chart made") and caption:
            continue  # the caption below says it with figures
        reading = re.search(r"Reading: (.*)", finding)
        lines.append("- " + (reading.group(1) if reading else finding))
    if caption and caption.group(1).strip() not in ("", "none"):
        lines.append(f"- Chart: {caption.group(1).strip()}")
    if not useful:
        lines.append("- No step found usable data, so this question cannot be answered "
                     "from the knowledge base or the database.")
    lines.append(f"\n({LABEL}: answer assembled by rules from the findings above.)")
    return "\n".join(lines)


# --------------------------------------------------------------------------- supervisor bus


def supervisor_decision(prompt: str) -> dict:
    """The supervisor_bus routing: the first offered agent that has neither answered nor
    been ruled out, in the order offered (research, writing, review); FINISH after."""
    agents = [a for a in allowed_values(prompt, "next_agent") or [] if a != "FINISH"]
    answered = re.search(r"^Answered so far: (.*)$", prompt, re.M)
    answered_names = {a.strip() for a in (answered.group(1) if answered else "").split(",")}
    excluded = re.search(r"^Do not ask again: (.*)$", prompt, re.M)
    excluded_line = excluded.group(1) if excluded else ""
    asked = re.search(r'^User question: "(.*)"\s*$', prompt, re.M)
    question = asked.group(1) if asked else _user_query(prompt)
    for agent in agents:
        if agent in answered_names or re.search(rf"\b{re.escape(agent)} \(", excluded_line):
            continue
        return {"next_agent": agent, "task": _bus_task(agent, question),
                "reason": f"{agent} has not answered yet; its part comes next."}
    return {"next_agent": "FINISH", "task": "",
            "reason": "Every agent that can help has answered or been ruled out."}


def _bus_task(agent: str, question: str) -> str:
    if agent == "researcher":
        return f"Search the documents for: {question}"
    if agent == "writer":
        return (f'Write the answer to "{question}" from the findings you received, format '
                "it and save it as a draft.")
    if agent == "reviewer":
        return f'Check that the sources cited in the material you received exist ("{question}").'
    return f"Do your part for: {question}"


_RECEIVED = "Messages you received for this task:"


def _received(request: str) -> str:
    """The forwarded messages of a bus request, without their "- from x (id):" heads."""
    if _RECEIVED not in request:
        return ""
    block = request.split(_RECEIVED, 1)[1]
    return "\n".join(re.sub(r"^- from \w+ \([^)]*\):\s*", "", line).strip()
                     for line in block.strip().splitlines() if line.strip())


def _format_args(request: str) -> dict:
    title = re.search(r'answer to "(.+?)"', request)
    return {"title": title.group(1) if title else "Answer",
            "body": _received(request) or "(no findings were received)"}


def _fetch_args(request: str) -> dict | str:
    found = re.search(r"\[(kb:[^\]\s]+)\]", request)
    if not found:
        return "No usable results: no document id to fetch."
    return {"doc_id": found.group(1)}


def _follow_up(messages: list[BaseMessage], tool_names: list[str]) -> AIMessage | None:
    """After some tools comes a second one, once: a search is followed by reading its top
    document, formatted output by saving it as a draft."""
    last = messages[-1]
    name = getattr(last, "name", "") or _tool_name(messages, last)
    follow = {"search_knowledge_base": "fetch_document", "format_output": "write_draft"}.get(name)
    called = {c["name"] for m in messages for c in getattr(m, "tool_calls", None) or []}
    content = _text(last)
    if follow not in tool_names or follow in called or content.startswith(("NO RESULTS", "ERROR", "REFUSED")):
        return None
    if follow == "fetch_document":
        args = _fetch_args(content)
        if isinstance(args, str):
            return None
    else:
        title = re.match(r"# (.+)", content)
        args = {"title": title.group(1) if title else "Answer", "body": content}
    return AIMessage(content="", tool_calls=[_call(follow, args)])


def _findings_with_reading(messages: list[BaseMessage], content: str) -> str:
    """The search findings, with the first sentences of the document read after them."""
    if content.startswith("NO RESULTS"):
        return f"No usable results: {content.splitlines()[0]}"
    searched = next((_text(m) for m in reversed(messages) if isinstance(m, ToolMessage)
                     and (m.name or _tool_name(messages, m)) == "search_knowledge_base"), "")
    hits = re.findall(r"^(\[kb:[^\]]+\]) (.+)$", searched, re.M)
    lines = content.splitlines()
    source = lines[0].split(" ", 1)[0] if lines else ""
    body = " ".join(line.strip() for line in lines[2:] if line.strip())
    reading = " ".join(re.split(r"(?<=[.!?])\s+", body)[:2])[:400]
    findings = "; ".join(f"{title} {src}" for src, title in hits[:3])
    text = f"Findings: {findings}." if findings else "Findings:"
    return f"{text}\nFrom {source}: {reading}"


# --------------------------------------------------------------------------- guardrail


SECRETS = re.compile(r"\b(password|passwords|api[ _-]?keys?|secret|credentials?|jailbreak)\b",
                     re.IGNORECASE)


def guardrail_verdict(prompt: str) -> dict:
    """The guardrail classifier, scripted: it refuses messages asking for secrets or a
    jailbreak (the pattern and scope checks run before it, in code) and passes the rest."""
    message = prompt.split('"""')[1] if prompt.count('"""') >= 2 else prompt
    if hit := SECRETS.search(message):
        return {"verdict": "refuse", "reason": f"It asks about {hit.group(0).lower()}, which the "
                "agents must never handle."}
    return {"verdict": "pass", "reason": "Nothing in it tries to change the agents' rules."}


# --------------------------------------------------------------------------- hierarchical teams
#
# The lead supervisor's plan, replan and routing, each team supervisor's choice of
# worker, and the workers' tool calls. A request is cut into clauses at the verbs that
# start a new intent ("check ... and find ..."); each clause becomes one subtask for the
# team its words call for, with an instruction written from that clause alone.

_TEAM_VERBS = (r"(?:check|verify|confirm|ensure|make sure|find|search|look|list|get|give|"
               r"build|return|send|post|submit|register|upload|provide|tell)")
_API_WORDS = re.compile(r"\b(api|endpoint|server|service)\b", re.I)
_SEND_WORDS = re.compile(r"\b(send|post|submit|register|upload|provide)\b", re.I)
_HEALTH_WORDS = re.compile(r"\b(health|healthy|up|alive|status|available|availability|"
                           r"reachable|running)\b", re.I)
_SEARCH_WORDS = re.compile(r"\b(news|sites?|sources|outlets|urls?|links?|search|find|look)\b",
                           re.I)
_REFERS_BACK = re.compile(r"\b(their|them|those|these|the sites|the urls|found)\b", re.I)
_URL = re.compile(r"https?://[^\s,\"'<>)]+")


def teams_answer(prompt: str) -> dict | None:
    """The reply to a hierarchical_teams supervisor prompt, or None for any other prompt."""
    if '"next_subtask_id"' in prompt:
        return teams_route(prompt)
    if '"next_worker"' in prompt:
        return teams_team_decision(prompt)
    if '"keep"' in prompt and '"cancel"' in prompt:
        return teams_replan_for(prompt)
    if '"subtasks"' in prompt and '"depends_on"' in prompt:
        return teams_plan_for(prompt)
    return None


def _request_clauses(text: str) -> list[str]:
    parts = re.split(rf"(?<=[.?!;])\s+|,\s*(?:and\s+)?(?:then\s+)?(?={_TEAM_VERBS}\b)|"
                     rf"\s+(?:and\s+then|then|and)\s+(?={_TEAM_VERBS}\b)", text.strip(),
                     flags=re.I)
    return [p.strip(" .?!;,") for p in parts if p and p.strip(" .?!;,")]


def _clause_kind(clause: str) -> str:
    if _SEND_WORDS.search(clause) and _API_WORDS.search(clause):
        return "send"
    if _HEALTH_WORDS.search(clause) and _API_WORDS.search(clause):
        return "health"
    if _SEARCH_WORDS.search(clause) or not _API_WORDS.search(clause):
        return "search"
    return "health"


def _news_topic(text: str) -> str:
    found = re.search(r"\b(?:about|on|covering|regarding)\s+(.+?)(?:\s+and return\b|,| with "
                      r"query terms\b|\.\s|\.?$)", text, re.I)
    topic = found.group(1) if found else re.sub(
        r"^(?:please\s+)?(?:find|search|look up|look for|list|get|give me)\s+(?:some\s+|the\s+)?"
        r"(?:reliable\s+|trusted\s+)?(?:news\s+)?(?:sites|sources|outlets)?\s*", "", text, flags=re.I)
    return topic.strip(" .?!\"'") or text.strip(" .?!")


def _teams_drafts(request: str) -> list[dict]:
    """One draft subtask per clause: {label, team, kind, instruction, depends_on}."""
    drafts: list[dict] = []
    for clause in _request_clauses(request):
        kind = _clause_kind(clause)
        label = str(len(drafts) + 1)
        if kind == "health":
            drafts.append({"id": label, "team": "request_team", "depends_on": [],
                           "instruction": "Check the API's health endpoint and report whether "
                                          "the API is healthy and available."})
        elif kind == "send":
            urls = _URL.findall(clause)
            searches = [d["id"] for d in drafts if d["team"] == "search_team"]
            depends = [searches[-1]] if searches and (_REFERS_BACK.search(clause) or not urls) else []
            what = (f"these site URLs: {', '.join(urls)}" if urls else
                    "the site URLs found by the subtask it depends on")
            drafts.append({"id": label, "team": "request_team", "depends_on": depends,
                           "instruction": f"Send {what} to the API's /sites endpoint and report "
                                          "what it stored."})
        else:
            topic = _news_topic(clause)
            drafts.append({"id": label, "team": "search_team", "depends_on": [],
                           "instruction": f"Find reliable news sites about {topic} and return "
                                          "full Google News search URLs for each site, with "
                                          f"query terms about {topic}."})
    return drafts


def _offered_teams(prompt: str) -> list[str]:
    return allowed_values(prompt, "team") or []


def teams_plan_for(prompt: str) -> dict:
    """The lead supervisor's plan: a subtask per clause, for the teams that are on (a
    clause whose team is off is left out rather than handed to the wrong team)."""
    asked = re.search(r'^User request: "(.*)"\s*$', prompt, re.M)
    offered = _offered_teams(prompt)
    drafts = [d for d in _teams_drafts(asked.group(1) if asked else "") if d["team"] in offered]
    kept = {d["id"] for d in drafts}
    for d in drafts:
        d["depends_on"] = [x for x in d["depends_on"] if x in kept]
        d["status"] = "pending"
    return {"subtasks": drafts}


_SUBTASK_LINE = re.compile(r"^- (s\d+) \[(\w+)\] status=(\w+)(?: depends_on=[\w,]+)?: "
                           r"(.*?)(?: \| result: .*?)?(?: \| reason: .*)?$", re.M)


def teams_replan_for(prompt: str) -> dict:
    """Keep the open subtasks the edited request still asks for word for word, cancel the
    other open ones, add what no done or kept subtask covers."""
    asked = re.search(r'^Edited request \(revision \d+\): "(.*)"\s*$', prompt, re.M)
    offered = _offered_teams(prompt)
    fresh = [d for d in _teams_drafts(asked.group(1) if asked else "") if d["team"] in offered]
    existing = [(sid, team, status, text) for sid, team, status, text in _SUBTASK_LINE.findall(prompt)]
    matched: dict[str, str] = {}  # fresh label -> existing id covering it
    keep, cancel = [], []
    for sid, team, status, text in existing:
        twin = next((d for d in fresh if (d["team"], d["instruction"]) == (team, text)
                     and d["id"] not in matched), None)
        if status in ("pending", "delegated"):
            if twin:
                keep.append(sid)
                matched[twin["id"]] = sid
            else:
                cancel.append({"id": sid, "reason": "the edited request no longer asks for it"})
        elif status == "done" and twin:
            matched[twin["id"]] = sid
    add, positions = [], {}
    for d in fresh:
        if d["id"] in matched:
            continue
        positions[d["id"]] = len(add) + 1
        add.append(d)
    for d in add:
        d["depends_on"] = [matched.get(x) or f"new:{positions[x]}" for x in d["depends_on"]
                           if x in matched or x in positions]
        d.pop("id")
    return {"keep": keep, "cancel": cancel, "add": add}


def teams_route(prompt: str) -> dict:
    ids = re.findall(r"^- id=(\S+) ", prompt, re.M)
    if not ids:
        return {"next_subtask_id": "FINISH", "reason": "No subtask is listed."}
    return {"next_subtask_id": ids[0], "reason": f"{ids[0]} comes first in the plan."}


def teams_team_decision(prompt: str) -> dict:
    team = re.search(r"^You supervise (\w+)", prompt, re.M)
    team = team.group(1) if team else ""
    offered = [w for w in allowed_values(prompt, "next_worker") or [] if w != "FINISH"]
    found = re.search(r"^Your subtask, the only work you have: (.*)$", prompt, re.M)
    instruction = found.group(1) if found else ""
    reported = dict(re.findall(r"^- (\w+) \((ok|failed)\):", prompt, re.M))
    if "failed" in reported.values():
        return {"next_worker": "FINISH", "task": "",
                "reason": "A worker failed; the team reports what it has."}
    wanted: list[tuple[str, str]] = []
    if team == "request_team":
        if _HEALTH_WORDS.search(instruction) and not _SEND_WORDS.search(instruction):
            wanted.append(("health_checker", "Call the API's health endpoint once and report "
                                             "whether the API is healthy."))
        if _SEND_WORDS.search(instruction):
            urls = _URL.findall(instruction)
            wanted.append(("site_requester",
                           f"Send these site URLs to the API: {', '.join(urls)}" if urls else
                           "Send the site URLs in the results handed to your team to the "
                           "API's /sites endpoint and report what it stored."))
        if not wanted:
            wanted.append(("health_checker", "Call the API's health endpoint once and report "
                                             "whether the API is healthy."))
    else:
        topic = _news_topic(instruction)
        wanted = [("searcher", f"Find reliable news sites about {topic}."),
                  ("url_builder", "Build Google News search URLs for the sites found, with "
                                  f"the query terms: {topic}")]
    for worker, task in wanted:
        if worker in offered and worker not in reported:
            return {"next_worker": worker, "task": task,
                    "reason": f"{worker} has not reported yet; its part comes next."}
    return {"next_worker": "FINISH", "task": "",
            "reason": "Every worker this subtask needs has reported."}


def _api_base_in(system: str) -> str:
    found = re.search(r"API base URL: (\S+)", system)
    return found.group(1).rstrip("/") if found else ""


def _http_post_args(request: str, system: str) -> dict | str:
    base = _api_base_in(system)
    urls = [u for u in dict.fromkeys(_URL.findall(request)) if not u.startswith(base or "\0")]
    if not urls:
        return "No usable results: no site URLs were given to send."
    return {"url": f"{base}/sites", "body": {"sites": urls}}


def _build_urls_args(request: str, system: str) -> dict | str:
    sites = re.findall(r"^\s*-\s+([a-z0-9.-]+\.[a-z]{2,})\s+\(", request, re.M)
    query = re.search(r"query terms: (.+?)\.?\s*$", request, re.M)
    if not sites:
        return "No usable results: no sites were given to build URLs for."
    return {"sites": list(dict.fromkeys(sites)), "query": query.group(1) if query else ""}


TOOL_RULES.update({
    "http_get": lambda request, system: {"url": f"{_api_base_in(system)}/health"},
    "http_post": _http_post_args,
    "find_news_sites": lambda request, system: {"topic": _news_topic(request.splitlines()[0]
                                                                     if request else "")},
    "build_news_urls": _build_urls_args,
})
