"""Model messages as every system keeps them: tagged with the step and agent they belong
to, and the words a router may answer to end the work."""

from __future__ import annotations

# What a supervisor, an executor or a team's router may answer to say "nothing more to do".
FINISH_WORDS = frozenset({"finish", "end", "__end__", "done", "none", "stop"})


def tag_messages(messages: list, step: int | None, agent: str) -> list:
    """Copies of ``messages`` marked with the step and agent they belong to.

    The Run page and the trace title and group messages by step and agent; the mark
    rides in ``response_metadata``, which is never sent back to a model.
    """
    tagged = []
    for m in messages:
        copy = m.model_copy(deep=False)
        copy.response_metadata = {**(m.response_metadata or {}), "step": step, "agent": agent}
        if not getattr(copy, "name", None) and copy.type == "ai":
            copy.name = agent
        tagged.append(copy)
    return tagged
