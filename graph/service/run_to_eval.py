"""Eval questions made from real runs: a run seen on the Run or History page becomes a
question of an eval set, with checks proposed from what that run actually did.

A proposal is a starting point the user edits before saving, so each check carries the
fact of the run it came from ("the run took 4 steps"), and every proposed check passes
on the run it was made from: the run is its own first evidence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from graph.service.eval_sets import Check, EvalQuestion, EvalSet, EvalSetError
from graph.service.evals import RunResult, evaluate
from graph.service.run_scales import note_added
from graph.service.store import Store

NEW_SET_DESCRIPTION = "Questions added from runs on the Run and History pages."

# What an answer says that a later run should say again: a cited document, a ticker, a
# figure. Dates ("2005-01-01") and step citations ("[sql:1]") are not kept: they name
# how this run went, not what it found.
_DOCUMENT = re.compile(r"\[(kb:[\w.-]+)\]")
_TICKER = re.compile(r"(?<![\w:-])[A-Z]{2,5}(?![\w:-])")
_FIGURE = re.compile(r"(?<![\w.:-])\d+(?:\.\d+)?%?(?![\w:-]|\.\d)")
_SCRIPTED_NOTE = re.compile(r"\(offline scripted model:[^)]*\)")


@dataclass(frozen=True)
class ProposedCheck:
    """A check proposed from a run, and the fact of the run it came from."""

    check: Check
    because: str


def answer_terms(answer: str, question: str, limit: int = 3) -> list[str]:
    """Words and figures of the answer worth checking again: the first cited document,
    the first ticker and the first figure that are not already in the question."""
    body = _SCRIPTED_NOTE.sub("", answer)
    lines = body.splitlines()
    if lines and lines[0].startswith("Answer to "):  # the scripted model repeats the question
        body = "\n".join(lines[1:])
    asked = question.lower()
    found: list[str] = []
    for pattern in (_DOCUMENT, _TICKER, _FIGURE):
        for match in pattern.finditer(body):
            term = match.group(1) if pattern.groups else match.group(0)
            if term.lower() not in asked and not _is_year(term) and term not in found:
                found.append(term)
                break
    return found[:limit]


def _is_year(term: str) -> bool:
    return term.isdigit() and len(term) == 4 and term[:2] in ("19", "20")


def checks_from_run(run: RunResult) -> list[ProposedCheck]:
    """Checks a run of this question should pass, read from what this run did: words of
    its answer, the agents that ran, its steps and replans, its chart, whether a human
    stepped in. Only what the run shows is proposed (no chart check without a chart)."""
    proposed: list[ProposedCheck] = []
    if run.final_answer:
        for term in answer_terms(run.final_answer, run.question):
            proposed.append(
                ProposedCheck(Check(kind="answer_contains", value=term), "in the run's answer")
            )
    if run.agents_used:
        proposed.append(
            ProposedCheck(
                Check(kind="uses_agents", value=run.agents_used),
                "the agents that ran, in order",
            )
        )
    if run.steps:
        proposed.append(
            ProposedCheck(
                Check(kind="max_steps", value=run.steps), f"the run took {run.steps} step(s)"
            )
        )
    proposed.append(
        ProposedCheck(
            Check(kind="max_replans", value=run.replans), f"the run replanned {run.replans} time(s)"
        )
    )
    if run.chart:
        proposed.append(ProposedCheck(Check(kind="chart_produced"), "the run drew a chart"))
    if run.status == "done" and not run.human_decisions:
        proposed.append(
            ProposedCheck(Check(kind="no_human_help"), "the run finished with no human decision")
        )
    return proposed


def proposal_from_run(store: Store, run_id: str) -> tuple[RunResult, list[ProposedCheck]]:
    """The run as a check reads it, and the checks proposed from it."""
    run = RunResult.from_store(store, run_id)
    return run, checks_from_run(run)


def passes_on(question: EvalQuestion, run: RunResult) -> list[str]:
    """The labels of the question's checks that its own run fails (an edit can make a
    check the run never met): said before saving, not refused."""
    return [r.label for r in evaluate(question, run) if not r.passed]


def add_question(
    store: Store,
    set_name: str,
    question: EvalQuestion,
    *,
    new_set: bool,
    run_id: str | None = None,
) -> tuple[EvalSet, str]:
    """Save ``question`` into the set ``set_name`` (a new set when ``new_set``); the saved
    set and a sentence saying what happened. A question the set already asks (same words,
    any case) has its checks replaced instead of being asked twice. ``run_id``, the run
    it came from, is then scored on the set's scale (``run_scales``)."""
    name = set_name.strip()
    if not name:
        raise EvalSetError("Give the new eval set a name.")
    existing = store.load_eval_set(name)
    if new_set and existing is not None:
        raise EvalSetError(
            f"An eval set named “{name}” already exists: pick it in the list to add to it, "
            "or give the new set another name."
        )
    if not new_set and existing is None:
        raise EvalSetError(f"There is no eval set named “{name}” any more.")
    if existing is None:
        saved = EvalSet(name=name, description=NEW_SET_DESCRIPTION, questions=[question])
        what = f"Saved the new eval set “{name}” with this question"
    else:
        asked = question.question.casefold()
        questions = list(existing.questions)
        same = next((i for i, q in enumerate(questions) if q.question.casefold() == asked), None)
        if same is None:
            questions.append(question)
            what = f"Added the question to “{name}” as question {len(questions)}"
        else:
            questions[same] = question
            what = f"“{name}” already asked this question (question {same + 1}): its checks were replaced"
        saved = existing.model_copy(update={"questions": questions})
    store.save_eval_set(saved)
    if run_id is not None:
        note_added(store, run_id, saved.name)
    return saved, f"{what}; {len(question.checks)} check(s)."
