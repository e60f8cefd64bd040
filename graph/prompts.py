"""Prompt templates: plain text files in ``prompts/``, filled by LangChain prompt templates.

A non-programmer edits the text; code only fills the placeholders. Each prompt
declares which placeholders it may use and which it must use, so a typo such as
``{user_qeury}`` is rejected with a message naming it before it can reach a run.
Literal braces in a prompt (a JSON example, say) are written doubled: ``{{`` and ``}}``.

A *family* of prompts (``register_family``) names prompts that have no file: every name
``<prefix>/<member>`` is a known prompt, with the family's placeholders and, as its default,
whatever the family's ``default`` gives for that member (a user agent's prompt is its own
definition's; ``graph.agents.user_agents`` registers that family).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable, Mapping

from langchain_core.prompts import PromptTemplate
from langchain_core.prompts.string import get_template_variables

from graph.errors import StepwiseError
from graph.settings import get_settings


@dataclass(frozen=True)
class PromptSpec:
    name: str  # "<system>/<file stem>", e.g. "plan_execute/planner"
    purpose: str
    allowed: frozenset[str]
    required: frozenset[str] = frozenset()
    sample: Mapping[str, str] = field(default_factory=dict)  # values for a preview


class PromptError(StepwiseError, ValueError):
    """A prompt template that cannot be used; the message names the prompt and the problem."""


_SPECS: dict[str, PromptSpec] = {}


@dataclass(frozen=True)
class PromptFamily:
    """Prompts named ``<prefix>/<member>`` for any member (no "/" in it), none with a file."""

    prefix: str
    purpose: str
    allowed: frozenset[str]
    default: Callable[[str], str]  # member -> its default text
    required: frozenset[str] = frozenset()


_FAMILIES: dict[str, PromptFamily] = {}


def register(spec: PromptSpec) -> PromptSpec:
    """Hosted systems declare their prompts at import time."""
    _SPECS[spec.name] = spec
    _checked.cache_clear()  # texts checked against an earlier spec of that name
    return spec


def register_family(
    prefix: str,
    allowed: frozenset[str],
    purpose: str,
    default: Callable[[str], str],
    required: frozenset[str] = frozenset(),
) -> PromptFamily:
    """Declare a family of prompts (see the module's note); ``default(member)`` is the text
    a member's prompt has when no version of it is active."""
    family = PromptFamily(prefix, purpose, frozenset(allowed), default, frozenset(required))
    _FAMILIES[prefix] = family
    _checked.cache_clear()
    return family


def family_of(name: str) -> PromptFamily | None:
    """The family ``name`` belongs to (None: it is a registered prompt, or unknown)."""
    if name in _SPECS:
        return None
    prefix, slash, member = name.partition("/")
    if not slash or not member or "/" in member:
        return None
    return _FAMILIES.get(prefix)


def is_known(name: str) -> bool:
    """A registered prompt, or a member of a registered family."""
    return name in _SPECS or family_of(name) is not None


def prompt_names(system: str | None = None) -> list[str]:
    return [n for n in _SPECS if system is None or n.startswith(system + "/")]


def prompt_spec(name: str) -> PromptSpec:
    if name in _SPECS:
        return _SPECS[name]
    if family := family_of(name):
        return PromptSpec(name, family.purpose, family.allowed, family.required)
    raise PromptError(f"No prompt named {name!r}.")


def default_text(name: str, prompts_dir: Path | None = None) -> str:
    """The shipped text of a prompt, from its file; a family member's, from its family."""
    if family := family_of(name):
        return family.default(name.partition("/")[2])
    path = (prompts_dir or get_settings().prompts_dir) / f"{prompt_spec(name).name}.txt"
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PromptError(f"Prompt file {path} is missing.") from None


def template_errors(name: str, text: str) -> list[str]:
    """Every reason ``text`` cannot serve as prompt ``name``; empty when it can."""
    spec = prompt_spec(name)
    try:
        used = set(get_template_variables(text, "f-string"))
    except ValueError as exc:
        return [f"{name}: {exc} (write literal braces as {{{{ and }}}})."]
    errors = []
    if "" in used:
        errors.append(f"{name}: empty placeholder {{}}; name the value, e.g. {{user_query}}.")
    for var in sorted(used - spec.allowed - {""}):
        errors.append(
            f"{name}: unknown placeholder {{{var}}}; "
            f"allowed: {', '.join('{' + a + '}' for a in sorted(spec.allowed)) or 'none'}."
        )
    for var in sorted(spec.required - used):
        errors.append(f"{name}: missing placeholder {{{var}}}, which this prompt must use.")
    return errors


@lru_cache(maxsize=512)
def _checked(name: str, text: str) -> PromptTemplate:
    """The template of ``text``, checked once: a run renders the same few texts at every
    step, and parsing and checking each again was work repeated per model call."""
    if errors := template_errors(name, text):
        raise PromptError(" ".join(errors))
    return PromptTemplate.from_template(text)


def render(name: str, text: str, values: Mapping[str, object]) -> str:
    """Fill a validated template. Values the template does not use are ignored. Checked,
    its placeholders are plain names, which ``str.format`` (in C) fills as LangChain's
    formatter (in Python) does."""
    template = _checked(name, text)
    return text.format(**{k: values.get(k, "") for k in template.input_variables})


class PromptSet:
    """The prompt texts one run uses: shipped defaults, overridden by the active versions.

    Validated as a whole on creation, so a run never starts with a broken template.
    """

    def __init__(self, overrides: Mapping[str, str] | None = None, prompts_dir: Path | None = None):
        overrides = dict(overrides or {})
        if unknown := sorted(name for name in overrides if not is_known(name)):
            raise PromptError(f"Unknown prompt(s): {', '.join(unknown)}.")
        self.texts = {
            name: overrides.get(name) or default_text(name, prompts_dir) for name in _SPECS
        }
        self.given_texts = {name: text for name, text in overrides.items() if text}
        # a family member's text only where one is given: without, its default applies
        self.texts.update({n: t for n, t in self.given_texts.items() if n not in _SPECS})
        errors = [e for name, text in self.texts.items() for e in template_errors(name, text)]
        if errors:
            raise PromptError(" ".join(errors))

    def given(self, name: str) -> str | None:
        """The text this set was given for ``name`` (its active version), or None when its
        default applies."""
        return self.given_texts.get(name)

    def render(self, name: str, **values: object) -> str:
        if name not in self.texts:  # registered after this set was made: its shipped text
            self.texts[name] = default_text(name)
        return render(name, self.texts[name], values)
