"""A small model's slips in the lead supervisor's plan, repaired in code.

A subtask that depends on itself, or on one the plan does not list, waits forever; two
subtasks that wait on each other both do; a subtask listed twice does the work twice; a
team or subtask id named in another case goes nowhere. Each has one reading, so the plan
is repaired and the run says what was repaired, instead of failing after a repair round
the model may slip in again (seen: "subtask '2' depends on itself", twice, on a small
model). What has more than one reading is left for the check to refuse in words.

The schema cannot prevent these. "depends_on names only subtasks listed before this one"
needs a different enum at each position of the list: JSON Schema says that only with
``prefixItems``, which llama.cpp turns into a tuple of exactly that many subtasks; and no
rule relates one field's value to another's (a subtask's own id).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Protocol, Sequence, TypeVar

from typing_extensions import Self

from graph.kernel.slips import match_name, repair_name


class _Copied(Protocol):
    def model_copy(
        self, *, update: Mapping[str, Any] | None = None, deep: bool = False
    ) -> Self: ...


class _Draft(_Copied, Protocol):
    """What the repairs read of a drafted subtask (the lead's ``NewSubtask``)."""

    @property
    def team(self) -> str: ...

    @property
    def instruction(self) -> str: ...

    @property
    def depends_on(self) -> list[str]: ...


class _Cancel(_Copied, Protocol):
    @property
    def id(self) -> str: ...


class _Replan(_Copied, Protocol):
    """What the repairs read of a replan (the lead's ``Replan``)."""

    @property
    def keep(self) -> list[str]: ...

    @property
    def cancel(self) -> Sequence[_Cancel]: ...

    @property
    def add(self) -> Sequence[_Draft]: ...


class _Choice(_Copied, Protocol):
    @property
    def next_subtask_id(self) -> str: ...


D = TypeVar("D", bound=_Draft)
R = TypeVar("R", bound=_Replan)
C = TypeVar("C", bound=_Choice)


def label_of(draft: object, index: int) -> str:
    """The model's own label of a drafted subtask: its id, else its 1-based position."""
    return str(getattr(draft, "id", "")).strip() or str(index + 1)


def resolver(
    labels: list[str], existing: set[str], new_prefix: str = ""
) -> Callable[[object], int | str | None]:
    """Maps a model's reference (its own id, a 1-based position, "new:N" or an existing
    id) to the index of a drafted subtask (int), an existing id (str), or None when it
    names no subtask."""

    def resolve(ref: object) -> int | str | None:
        text = str(ref).strip()
        if new_prefix and text.lower().startswith(new_prefix):
            text = text[len(new_prefix) :].strip()
            return int(text) - 1 if text.isdigit() and 1 <= int(text) <= len(labels) else None
        if text in existing:
            return text
        if text in labels:
            return labels.index(text)
        if text.isdigit() and 1 <= int(text) <= len(labels) and not new_prefix:
            return int(text) - 1
        return None

    return resolve


def _reaches(deps: list[list], start: int, goal: int) -> bool:
    """Whether drafted subtask ``start`` waits on ``goal``, directly or through others."""
    seen, todo = set(), [start]
    while todo:
        i = todo.pop()
        if i == goal:
            return True
        if i not in seen:
            seen.add(i)
            todo += [t for t in deps[i] if isinstance(t, int)]
    return False


def _same_work(draft: _Draft) -> tuple[str, str]:
    return draft.team, " ".join(draft.instruction.split()).casefold()


def _dependencies(
    drafts: Sequence[_Draft],
    names: list[str],
    labels: list[str],
    existing: set[str],
    new_prefix: str,
    what: str,
) -> tuple[list[list[int | str]], list[str]]:
    """Each draft's dependencies resolved (an index, or an existing id), without those on
    itself or on no listed subtask; one in another case is read as the one it means."""
    resolve = resolver(labels, existing, new_prefix)
    notices: list[str] = []
    deps: list[list[int | str]] = []
    for i, d in enumerate(drafts):
        kept: list[int | str] = []
        for ref in map(str, d.depends_on):
            target = resolve(ref)
            if target is None and (match := match_name(ref, [*sorted(existing), *labels])):
                target = resolve(match)
                notices.append(f"{what} had subtask {names[i]} depend on {ref!r}: read as {match}.")
            if target is None:
                notices.append(
                    f"{what} had subtask {names[i]} depend on {ref!r}, which is no subtask of "
                    "the plan: that dependency was dropped."
                )
            elif target == i:
                notices.append(
                    f"{what} had subtask {names[i]} depend on itself: that dependency was dropped."
                )
            elif target not in kept:
                kept.append(target)
        deps.append(kept)
    return deps, notices


def _break_cycles(deps: list[list], names: list[str], what: str) -> list[str]:
    """Drops (in place) each dependency on a later subtask that waits on this one: the
    order listed decides which way a cycle runs. What is left has no cycle: a cycle needs
    a dependency on a later subtask, and each one kept does not lead back."""
    notices = []
    for i in range(len(deps)):
        for t in [t for t in deps[i] if isinstance(t, int) and t > i]:
            if _reaches(deps, t, i):
                deps[i].remove(t)
                notices.append(
                    f"{what} had subtask {names[i]} depend on subtask {names[t]}, listed after "
                    f"it, which waits on {names[i]}: that dependency was dropped to break the "
                    "cycle."
                )
    return notices


def _repeats(
    drafts: Sequence[_Draft], deps: list[list], names: list[str], what: str
) -> tuple[dict[int, int], list[list], list[str]]:
    """Subtasks repeating an earlier one's team and instruction and waiting on nothing
    more, each mapped to that earlier one, and ``deps`` with them replaced by it. One the
    earlier subtask waits on is no repeat: merging them would make a cycle."""
    repeats: dict[int, int] = {}
    notices = []
    first: dict[tuple[str, str], int] = {}
    for i, d in enumerate(drafts):
        j = first.setdefault(_same_work(d), i)
        if j == i or not set(deps[i]) <= {*deps[j], j} or _reaches(deps, j, i):
            continue
        repeats[i] = j
        deps = [[j if t == i else t for t in ds] for ds in deps]
        notices.append(
            f"{what} listed subtask {names[i]} with the same team and instruction as subtask "
            f"{names[j]}: only {names[j]} was kept."
        )
    return repeats, deps, notices


def repair_drafts(
    drafts: Sequence[D], teams: Sequence[str], existing: set[str], what: str, new_prefix: str = ""
) -> tuple[list[D], list[str]]:
    """The drafted subtasks with their unambiguous slips repaired, and a notice per repair
    starting with ``what`` ("The lead supervisor's plan"). In order: a team or a
    dependency in another case is read as the one it means; a dependency on itself or on
    no listed subtask is dropped; so is one on a later subtask that waits on this one; a
    subtask repeating an earlier one is dropped, and what waited on it waits on the
    earlier one. Labels come back as positions ("1", or "new:1")."""
    notices: list[str] = []
    labels = [label_of(d, i) for i, d in enumerate(drafts)]
    names = [f"{new_prefix}{i + 1}" if new_prefix else labels[i] for i in range(len(drafts))]
    fixed = []
    for i, d in enumerate(drafts):
        team, said = repair_name(d.team, teams, f"{what} sent subtask {names[i]} to team")
        fixed.append(d.model_copy(update={"team": team}))
        notices += said
    deps, said = _dependencies(fixed, names, labels, existing, new_prefix, what)
    notices += said + _break_cycles(deps, names, what)
    repeats, deps, said = _repeats(fixed, deps, names, what)
    notices += said
    kept = [i for i in range(len(fixed)) if i not in repeats]
    position = {i: n for n, i in enumerate(kept, 1)}
    out = []
    for i in kept:
        refs = []
        for t in deps[i]:
            ref = f"{new_prefix}{position[t]}" if isinstance(t, int) else t
            if ref not in refs:
                refs.append(ref)
        update: dict = {"depends_on": refs}
        if hasattr(fixed[i], "id"):  # a first plan's Subtask; a replan's have none
            update["id"] = str(position[i])
        out.append(fixed[i].model_copy(update=update))
    return out, notices


def repair_replan(replan: R, teams: Sequence[str], ids: set[str], what: str) -> tuple[R, list[str]]:
    """A replan with its slips repaired: the subtasks it adds as ``repair_drafts`` does,
    and an id it keeps or cancels in another case ("S2") read as the id it means."""
    known = sorted(ids)
    notices: list[str] = []
    keep = []
    for ref in replan.keep:
        sid, said = repair_name(ref, known, f"{what} kept subtask")
        keep.append(sid)
        notices += said
    cancel = []
    for c in replan.cancel:
        sid, said = repair_name(c.id, known, f"{what} cancelled subtask")
        cancel.append(c.model_copy(update={"id": sid}))
        notices += said
    add, said = repair_drafts(replan.add, teams, ids, what, new_prefix="new:")
    return replan.model_copy(update={"keep": keep, "cancel": cancel, "add": add}), notices + said


def repair_choice(decision: C, names: Sequence[str]) -> tuple[C, list[str]]:
    """A routing decision whose ``next_subtask_id`` is in another case ("S2", "finish")
    read as the one id it means."""
    sid, said = repair_name(
        decision.next_subtask_id, names, "The lead supervisor's routing named subtask"
    )
    return decision.model_copy(update={"next_subtask_id": sid}), said
