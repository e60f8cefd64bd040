"""How the Server page answers an interrupt of any graph: a question in words, its
choices, or a standard human-in-the-loop request (``graph.kernel.hitl``) decided with
approve, edit, reject or respond. Split from ``server_console`` (the server calls)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graph.kernel.hitl import STANDARD_DECISIONS, Asked, asked_actions, decision_for, resume_for
from graph.service.server_console import ServerError

# Keys of a simple interrupt value that hold its question, in the order looked for.
QUESTION_KEYS = ("question", "prompt", "message", "text", "query")
# Keys of a simple interrupt value that list the answers it takes.
CHOICE_KEYS = ("options", "choices")


@dataclass(frozen=True)
class AnswerForm:
    """How an interrupt can be answered: a question in words and, when the value says
    so, the answers it takes as buttons; ``asked`` holds the actions of a standard
    human-in-the-loop request (LangChain's ``HITLRequest`` or agent-inbox's older
    ``HumanInterrupt``, see ``graph.kernel.hitl``), ``decisions`` the standard decisions
    (approve / edit / reject / respond) every one of them allows."""

    question: str | None
    choices: list[str]
    asked: list[Asked]
    decisions: list[str]

    @property
    def actions(self) -> list[dict]:
        return [{"name": a.name, "args": a.args, "description": a.description} for a in self.asked]

    @property
    def simple(self) -> bool:
        return self.question is not None or bool(self.asked)


def answer_form(value: Any) -> AnswerForm:
    """Reads an interrupt's value: a string is a question; a mapping with a question key
    (``question``, ``prompt``...) and maybe ``options`` is a question with choices; a
    standard human-in-the-loop request (LangChain's ``action_requests`` +
    ``review_configs``, or agent-inbox's ``action_request`` + ``config``) asks to decide
    on actions. Anything else is answered as JSON."""
    if isinstance(value, str):
        return AnswerForm(value, [], [], [])
    if asked := asked_actions(value):
        common = set.intersection(*(set(a.allowed) for a in asked))
        return AnswerForm(None, [], asked, [d for d in STANDARD_DECISIONS if d in common])
    if isinstance(value, list) and len(value) == 1:
        return answer_form(value[0])
    if not isinstance(value, dict):
        return AnswerForm(None, [], [], [])
    question = next((value[k] for k in QUESTION_KEYS if isinstance(value.get(k), str)), None)
    choices = next(
        (
            [str(c) for c in value[k]]
            for k in CHOICE_KEYS
            if isinstance(value.get(k), list) and all(isinstance(c, (str, int)) for c in value[k])
        ),
        [],
    )
    return AnswerForm(question, choices, [], [])


def decisions_answer(
    form: AnswerForm, decision: str, message: str = "", edited: list[dict] | None = None
) -> Any:
    """The resume value of a standard human-in-the-loop request: ``decision`` on every
    action it asks about (``edited``: each action's edited args, for ``edit``), in the
    request's own shape. ``ServerError`` says why it cannot be sent."""
    if decision == "edit" and (edited is None or len(edited) != len(form.asked)):
        raise ServerError("Edit the arguments of every action first.")
    try:
        return resume_for(
            form.asked,
            [
                decision_for(asked, decision, (edited or [])[i] if edited else None, message)
                for i, asked in enumerate(form.asked)
            ],
        )
    except ValueError as exc:
        raise ServerError(str(exc)) from None
