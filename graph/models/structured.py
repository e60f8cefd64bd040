"""Asking a model for JSON we can trust: tight schemas out, validation and one repair in.

``ask_json`` sends the prompt with a ``json_request`` (the schema's name and a tight JSON
Schema); the server model (``ServerChatModel``) turns it into the strongest
``response_format`` the server takes and says which mode it used. Whatever the mode, the
reply is parsed and validated here against the pydantic model, plus the caller's own
``check``; a bad reply gets one repair round with the problem fed back.

Schemas are tight because grammar-constrained decoding follows them to the letter: a
small model given a free-key map fills it with nonsense keys, given an enum of the
enabled agents it picks one of them. ``tight_schema`` inlines references, closes every
object, requires every field, caps lists, and pins the fields a caller names to their
allowed values. It sets no ``maxLength``: llama.cpp unrolls it into a grammar rule per
character, and a few hundred characters make its server refuse the grammar and crash
(seen: exit 139). A reply's length is bounded instead by its call kind's token budget
(``reply_limits``), sent in the field the server reads; a reply cut at that limit is a
format problem like any other, repaired by asking for a shorter answer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Generic, Mapping, Sequence, TypeVar

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import Runnable, RunnableConfig
from pydantic import BaseModel, ValidationError

from graph.errors import StepwiseError
from graph.models.replies import parse_json_object, reply_text
from graph.prompts import PromptSet, PromptSpec, register

T = TypeVar("T", bound=BaseModel)

SHAPE_PROMPT = "models/json_shape"

register(
    PromptSpec(
        SHAPE_PROMPT,
        "The JSON shape stated in the prompt when the server cannot be sent a json_schema.",
        frozenset({"schema"}),
        frozenset({"schema"}),
    )
)


class ModelReplyError(StepwiseError, RuntimeError):
    """A model reply that stayed unusable after the repair attempt; says why in words."""

    def __init__(self, message: str, replies: list[AIMessage] | None = None):
        super().__init__(message)
        self.replies = replies or []


@dataclass
class JsonReply(Generic[T]):
    value: T
    replies: list[AIMessage]  # every model reply, the repaired one last
    repaired: bool
    notices: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- schemas


def _inline(node: Any, defs: dict) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            return _inline(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
        return {k: _inline(v, defs) for k, v in node.items() if k != "$defs"}
    if isinstance(node, list):
        return [_inline(v, defs) for v in node]
    return node


def _tighten(node: Any, enums: Mapping[str, tuple], max_items: int) -> Any:
    if isinstance(node, list):
        return [_tighten(v, enums, max_items) for v in node]
    if not isinstance(node, dict):
        return node
    node = {
        k: (
            {name: _tighten(p, enums, max_items) for name, p in v.items()}
            if k == "properties"
            else _tighten(v, enums, max_items)
        )
        for k, v in node.items()
        if k not in ("title", "default", "description")
    }
    if node.get("type") == "object" and "properties" in node:
        node["additionalProperties"] = False
        node["required"] = list(node["properties"])
        for name, values in enums.items():
            prop = node["properties"].get(name)
            if prop is None:
                continue
            is_list = prop.get("type") == "array" and "items" in prop
            if not values:  # nothing is allowed: an empty list, or the field left free
                if is_list:
                    prop["maxItems"] = 0
                continue
            target = prop["items"] if is_list else prop
            for bound in ("maxLength", "minLength", "minimum", "maximum"):
                target.pop(bound, None)
            target["enum"] = list(values)
    elif node.get("type") == "array":
        node["maxItems"] = min(node.get("maxItems", max_items), max_items)
    return node


@lru_cache(maxsize=256)
def _tight(schema: type[BaseModel], enums: tuple[tuple[str, tuple], ...], max_items: int) -> str:
    raw = schema.model_json_schema()
    inlined = _inline(raw, raw.get("$defs") or {})
    return json.dumps(_tighten(inlined, dict(enums), max_items))


def tight_schema(
    schema: type[BaseModel], enums: Mapping[str, Sequence] | None = None, max_items: int = 12
) -> dict:
    """The JSON Schema sent for ``schema``: references inlined, objects closed with every
    field required, arrays capped at ``max_items``, and each field named in
    ``enums`` (at any depth; for a list, its items) pinned to the values given. Cached:
    the same question asks the same schema."""
    key = tuple(sorted((k, tuple(v)) for k, v in (enums or {}).items()))
    return json.loads(_tight(schema, key, max_items))


def shape_text(schema: dict, prompts: PromptSet | None = None) -> str:
    """The shape stated in the prompt when the server cannot be sent the schema itself."""
    return (prompts or PromptSet()).render(SHAPE_PROMPT, schema=json.dumps(schema))


# --------------------------------------------------------------------------- replies


def _where(loc: tuple) -> str:
    """An error's place for a person: ``steps[1].action`` (lists counted from 1)."""
    text = ""
    for part in loc:
        text += f"[{part + 1}]" if isinstance(part, int) else f"{'.' if text else ''}{part}"
    return text or "value"


def _validate(
    text: str,
    schema: type[T],
    check: Callable[[T], None] | None,
    repair: Callable[[T], tuple[T, list[str]]] | None = None,
) -> tuple[T, list[str]]:
    try:
        value = schema.model_validate(parse_json_object(text))
    except ValidationError as exc:
        problems = "; ".join(f"{_where(e['loc'])}: {e['msg']}" for e in exc.errors()[:5])
        raise ValueError(f"the JSON does not have the expected fields ({problems})") from None
    repaired: list[str] = []
    if repair:
        value, repaired = repair(value)
    if check:
        check(value)  # raises ValueError with a readable message
    return value, repaired


@dataclass
class JsonAsk(Generic[T]):
    """One node's structured request, built from its state and prompt texts: what
    ``ask_json`` sends and how it judges the reply. A node builds one and asks it; the
    playground builds the same one from a stored state and sends it once."""

    prompt: str
    schema: type[T]
    label: str
    repair_prompt: Callable[[str, str], str]
    check: Callable[[T], None] | None = None
    enums: Mapping[str, Sequence] | None = None
    kind: str | None = None
    repair: Callable[[T], tuple[T, list[str]]] | None = None


@dataclass
class OneTry(Generic[T]):
    """One reply to a ``JsonAsk`` with no repair round: the value when it was usable, else
    ``problem`` in words."""

    reply: AIMessage
    value: T | None
    problem: str
    notices: list[str]


def bound_for(model: BaseChatModel, ask: JsonAsk[Any]) -> Runnable[LanguageModelInput, BaseMessage]:
    """``model`` bound with the JSON request and the reply budget of ``ask``."""
    request = {"name": ask.schema.__name__, "schema": tight_schema(ask.schema, ask.enums)}
    return model.bind(json_request=request, **({"call_kind": ask.kind} if ask.kind else {}))


def judge_reply(reply: AIMessage, ask: JsonAsk[T]) -> OneTry[T]:
    """``reply`` parsed, repaired and checked as ``ask_json`` does, the problem said."""
    stepwise = (reply.response_metadata or {}).get("stepwise") or {}
    notices = list(stepwise.get("notes", []))
    try:
        value, fixed = _validate(reply_text(reply), ask.schema, ask.check, ask.repair)
        return OneTry(reply, value, "", notices + fixed)
    except ValueError as exc:
        problem = str(exc)
        if cut := stepwise.get("cut_at"):
            problem = f"the reply was cut at {cut} tokens, its limit"
        return OneTry(reply, None, problem, notices)


def ask_once(
    model: BaseChatModel, ask: JsonAsk[T], config: RunnableConfig | None = None
) -> OneTry[T]:
    """One request of ``ask``, judged, with no repair round (one request per sample)."""
    reply = bound_for(model, ask).invoke([HumanMessage(content=ask.prompt)], config)
    return judge_reply(_ai(reply), ask)


def _ai(reply: BaseMessage) -> AIMessage:
    """A chat model's reply, as the AIMessage it always is."""
    assert isinstance(reply, AIMessage), type(reply)
    return reply


def ask_json(
    model: BaseChatModel,
    prompt: str | JsonAsk[T],
    schema: type[T] | None = None,
    *,
    label: str = "",
    repair_prompt: Callable[[str, str], str] | None = None,
    check: Callable[[T], None] | None = None,
    enums: Mapping[str, Sequence] | None = None,
    kind: str | None = None,
    repair: Callable[[T], tuple[T, list[str]]] | None = None,
) -> JsonReply[T]:
    """Ask for JSON matching ``schema``; on a bad reply, one repair round with the error.

    ``prompt`` may be a whole ``JsonAsk`` (a node's request built by its seam), else the
    request's parts are given one by one.
    ``enums`` pins fields of the schema sent to their allowed values (the enabled agents,
    say); ``check`` adds rules the schema cannot express and says in words what is wrong;
    ``kind`` (a key of ``reply_limits.REPLY_TOKENS``) sizes the reply's token budget.
    ``repair`` runs before ``check``: it fixes a slip whose intent is unambiguous (a case
    slip in a name, say) and returns the value with a notice per fix, so a small model's
    slip costs neither a repair round nor the run.
    Raises ``ModelReplyError`` naming ``label`` and the last problem when both fail.
    """
    if isinstance(prompt, JsonAsk):
        ask = prompt
    else:
        assert schema is not None and repair_prompt is not None, "a prompt text needs both"
        ask = JsonAsk(prompt, schema, label, repair_prompt, check, enums, kind, repair)
    bound = bound_for(model, ask)
    notices: list[str] = []
    messages: list[BaseMessage] = [HumanMessage(content=ask.prompt)]
    replies: list[AIMessage] = []
    error = ""
    for attempt in range(2):
        reply = _ai(bound.invoke(messages))
        replies.append(reply)
        tried = judge_reply(reply, ask)
        notices += tried.notices
        if tried.value is not None:
            return JsonReply(tried.value, replies, repaired=attempt > 0, notices=notices)
        error = asked = tried.problem
        stepwise = (reply.response_metadata or {}).get("stepwise") or {}
        if cut := stepwise.get("cut_at"):
            # Not a model that cannot write JSON: one that wrote too much of it.
            asked = f"your reply was cut at {cut} tokens: answer shorter"
        notices.append(f"{ask.label} reply unusable: {error}.")
        messages = messages + [
            reply,
            HumanMessage(content=ask.repair_prompt(asked, reply_text(reply))),
        ]
    raise ModelReplyError(
        f"{ask.label} gave unusable output twice; last problem: {error}.", replies
    )


def format_kwargs(mode: str, request: dict) -> dict:
    """The request fields that ask for a JSON reply in ``mode`` (graph.models.modes)."""
    if mode == "json_schema":
        return {
            "response_format": {
                "type": "json_schema",
                "json_schema": {
                    "name": request["name"],
                    "schema": request["schema"],
                    "strict": False,
                },
            }
        }
    if mode == "json_object":
        return {"response_format": {"type": "json_object", "schema": request["schema"]}}
    if mode == "json_object_bare":
        return {"response_format": {"type": "json_object"}}
    return {}


def with_text(messages: list[BaseMessage], text: str) -> list[BaseMessage]:
    """``text`` added to the last user turn (some chat templates refuse two in a row)."""
    if messages and isinstance(messages[-1], HumanMessage):
        last = messages[-1]
        content = last.content if isinstance(last.content, str) else str(last.content)
        return [*messages[:-1], HumanMessage(content=f"{content}\n\n{text}", name=last.name)]
    return [*messages, HumanMessage(content=text)]
