"""The offline scripted model: deterministic, tool calling, structured output, honest label."""

from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from pydantic import BaseModel

from graph.models.chat import SCRIPTED_LABEL, make_chat_model, model_label
from graph.models.scripted import ScriptedChatModel, count_tokens
from graph.plan_execute.offline_tools import write_sql
from graph.settings import Settings
from graph.tools.database import open_database


def test_the_default_model_is_the_scripted_one_and_says_so():
    model = make_chat_model("planner", Settings())
    assert isinstance(model, ScriptedChatModel)
    assert model_label(model) == SCRIPTED_LABEL == "offline scripted model"
    assert Settings().model_label == "offline scripted model"
    reply = model.invoke("Tell me a joke")
    assert "offline scripted model" in reply.content  # no pretending to be an LLM


def test_a_configured_endpoint_switches_to_chat_openai():
    model = make_chat_model(
        "worker", Settings(openai_base_url="http://127.0.0.1:9/v1", worker_model="w-model")
    )
    from langchain_openai import ChatOpenAI

    assert isinstance(model, ChatOpenAI) and model.model_name == "w-model"
    assert Settings(openai_base_url="http://127.0.0.1:9/v1").model_label.endswith(
        "@ http://127.0.0.1:9/v1"
    )


def test_replies_are_deterministic_and_report_counted_usage():
    prompt = (
        'Plan: "agent" and "action".\n"agent" must be one of: web_researcher, synthesizer.\n'
        'User query: "Why did IBM sell its PC division?"'
    )
    a, b = ScriptedChatModel().invoke(prompt), ScriptedChatModel().invoke(prompt)
    assert a.content == b.content
    assert a.usage_metadata["input_tokens"] == count_tokens(prompt)
    assert a.usage_metadata["output_tokens"] == count_tokens(a.content)


def test_bound_tools_are_called_with_arguments_drawn_from_the_request():
    @tool
    def search_knowledge_base(query: str) -> str:
        """Search."""
        return "x"

    model = ScriptedChatModel().bind_tools([search_knowledge_base])
    reply = model.invoke(
        [
            SystemMessage("You research."),
            HumanMessage("Search the documents for: the iPhone launch."),
        ]
    )
    assert reply.tool_calls[0]["name"] == "search_knowledge_base"
    assert reply.tool_calls[0]["args"] == {"query": "the iPhone launch"}
    done = model.invoke(
        [
            HumanMessage("q"),
            reply,
            ToolMessage("NO RESULTS: the iPhone launch", tool_call_id=reply.tool_calls[0]["id"]),
        ]
    )
    assert not done.tool_calls and done.content.startswith("No usable results")


def test_structured_output_returns_the_schema():
    class Decision(BaseModel):
        replan: bool
        goto: str
        reason: str
        query: str

    prompt = (
        "- User query ..............: Why?\n- Current step index ......: 1\n"
        '- Full plan ...............: {"1": {"agent": "web_researcher", "action": "Search: why"}}\n'
        '- Result of current step ..: (not run yet)\n"goto": ...'
    )
    decision = ScriptedChatModel().with_structured_output(Decision).invoke(prompt)
    assert decision == Decision(
        replan=False,
        goto="web_researcher",
        reason="Step 1 has not run yet.",
        query="Search: why (User question: Why?)",
    )


def test_written_sql_gives_true_answers_on_the_bundled_data():
    db = open_database()
    growth = db.query(write_sql("Which stock grew the most between 2005 and 2009?"), 10)
    assert growth.rows[0][0] == "AAPL" and growth.rows[0][-1] == 448.1
    lowest = db.query(write_sql("What was the lowest price of Amazon in 2001?"), 10)
    assert lowest.rows == [["AMZN", "2001-09-01", 5.97]]
    average = db.query(write_sql("Compare the average price of IBM and Microsoft in 2008"), 10)
    assert [r[0] for r in average.rows] == ["IBM", "MSFT"]
