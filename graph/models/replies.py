"""Reading a model's reply: its text, and the JSON object in it.

Both the structured-output path and the tool-prompting path read replies this way, and so
do the agents that take a model's words as their result.
"""

from __future__ import annotations

import json
import re

from langchain_core.messages import BaseMessage


def reply_text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)


_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.S)


def parse_json_object(text: str) -> object:
    """The JSON object in a reply, tolerating code fences and prose around it, and raw
    line breaks or tabs inside its strings (small models write multi-line texts as they
    would show them; ``strict=False`` reads them as the characters they are)."""
    text = text.strip()
    if fenced := _FENCE.match(text):
        text = fenced.group(1)
    try:
        return json.loads(text, strict=False)
    except RecursionError:  # a repair round can fix it: say it like any other bad JSON
        raise ValueError("the reply's JSON is nested too deeply to read") from None
    except json.JSONDecodeError as first_error:
        start, end = text.find("{"), text.rfind("}")
        if 0 <= start < end:
            try:
                return json.loads(text[start : end + 1], strict=False)
            except (json.JSONDecodeError, RecursionError):
                pass
        raise ValueError(
            f"the reply is not valid JSON ({first_error.msg} at line "
            f"{first_error.lineno} column {first_error.colno})"
        ) from None
