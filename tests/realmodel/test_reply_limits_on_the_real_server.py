"""A reply asked for at most 64 tokens gets at most 64 on the real llama.cpp server.

llama-cpp-python's server reads only ``max_tokens``; ``langchain-openai`` sends the limit
as ``max_completion_tokens``, which that server ignores, so a rambling model ran until the
context was full. Counted from the server's own ``usage``, for each structured-output mode
and for tool calls written in the reply.
"""

from __future__ import annotations

import openai
import pytest
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

from graph.models.modes import ModeBook
from graph.models.server import ServerChatModel
from graph.models.structured import tight_schema

pytestmark = pytest.mark.timeout(900)

LIMIT = 64
# The 135M model writes 135 tokens to this, then stops by itself.
POEM = "Write a short poem of eight lines about the sea."
# Makes the 135M model write on until its context is full (seen: 600 s and more).
RAMBLE = (
    "Write a long, detailed story about a dragon who learns to bake bread, with many "
    "characters and many events, in at least ten paragraphs."
)


class Story(BaseModel):
    title: str
    story: str


@tool
def save_story(text: str) -> str:
    """Save a story. text: the whole story, for example: Once upon a time..."""
    return "saved"


def _model(llama, **extra) -> ServerChatModel:
    return ServerChatModel(
        model="smollm2-135m",
        base_url=llama.base_url,
        api_key="not-needed",
        max_retries=0,
        timeout=600,
        call_deadline_s=600,
        temperature=0,
        max_tokens=LIMIT,
        modes=ModeBook(),
        # whole replies: counted from the server's own usage, which llama-cpp-python sends
        # with no stream (a streamed reply's tokens are counted by Stepwise; see
        # test_streamed_calls_on_the_real_server.py)
        stream_replies=False,
        **extra,
    )


def test_the_server_itself_ignores_the_limit_field_langchain_openai_sends(llama):
    """What the change is for: the client as it is asks for 64 and gets more (a prompt
    the model stops by itself: asked to ramble, it ran past 600 s)."""
    plain = ChatOpenAI(
        model="smollm2-135m",
        base_url=llama.base_url,
        api_key="not-needed",
        max_retries=0,
        timeout=600,
        temperature=0,
        max_tokens=LIMIT,
    )
    reply = plain.invoke([HumanMessage(POEM)])
    assert reply.usage_metadata["output_tokens"] > LIMIT, reply.usage_metadata
    bounded = _model(llama).invoke([HumanMessage(POEM)])
    assert bounded.usage_metadata["output_tokens"] == LIMIT, bounded.usage_metadata
    assert bounded.response_metadata["stepwise"]["cut_at"] == LIMIT


def test_a_call_asked_for_64_tokens_gets_at_most_64_in_every_mode(llama):
    request = {"name": "Story", "schema": tight_schema(Story)}
    written: dict[str, int] = {}
    cut: dict[str, object] = {}
    for mode in ("json_schema", "json_object", "json_object_bare", "none"):
        model = _model(llama, structured_setting=mode)
        try:
            reply = model.bind(json_request=request).invoke([HumanMessage(RAMBLE)])
        except openai.APIStatusError as exc:
            # This server refuses json_schema (HTTP 500 naming response_format).
            assert mode == "json_schema" and "response_format" in str(exc.body), exc
            continue
        written[mode] = reply.usage_metadata["output_tokens"]
        stepwise = reply.response_metadata["stepwise"]
        assert stepwise["structured"] == mode
        assert stepwise["token_field"] == "max_tokens and max_completion_tokens"
        cut[mode] = stepwise.get("cut_at")

    prompted = _model(llama, tools_setting="prompted").bind_tools([save_story])
    reply = prompted.invoke([HumanMessage(f"{RAMBLE} Then save it with save_story.")])
    written["prompted tool call"] = reply.usage_metadata["output_tokens"]
    cut["prompted tool call"] = reply.response_metadata["stepwise"].get("cut_at")
    assert reply.response_metadata["stepwise"]["tools"] == "prompted"

    assert set(written) >= {"json_object", "json_object_bare", "none", "prompted tool call"}
    assert all(0 < n <= LIMIT for n in written.values()), written
    # The limit did the stopping, and the reply says it was cut there.
    assert LIMIT in cut.values(), (written, cut)
    assert all(cut[m] == LIMIT for m, n in written.items() if n == LIMIT), (written, cut)
