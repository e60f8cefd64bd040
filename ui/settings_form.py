"""A system's own settings on the Design page, drawn from its settings model's JSON schema
(``graph.kernel.system.SystemSettings``): per field a number box, a switch, a choice or a
text box, with the field's title as label, its description as help and its bounds, so a
system adds a setting without any page changing."""

from __future__ import annotations

from typing import Any

import streamlit as st

from graph.kernel.design import Design
from graph.kernel.system import System


def key(system: str, field: str) -> str:
    """A setting's widget key: the system's name in it, as two systems may share a name."""
    return f"setting:{system}:{field}"


def widget_keys(systems: dict[str, System]) -> list[str]:
    return [key(n, f) for n, s in systems.items() for f in s.settings_model.model_fields]


def inputs(system: System, values: dict[str, Any], section: str) -> dict[str, Any]:
    """The widgets of the system's settings shown in ``section`` ("run", the default of a
    field, or "approvals"), each starting at ``values`` (the design's); what they hold."""
    fields = system.settings_model.model_json_schema().get("properties", {})
    return {
        name: _widget(key(system.name, name), name, spec, values[name])
        for name, spec in fields.items()
        if spec.get("section", "run") == section
    }


def _widget(widget_key: str, name: str, spec: dict, value: Any) -> Any:
    label, help_text = spec.get("title") or name, spec.get("description")
    if "enum" in spec:
        options = spec["enum"]
        return st.selectbox(
            label, options, index=options.index(value), key=widget_key, help=help_text
        )
    if spec.get("type") == "boolean":
        return st.toggle(label, value=bool(value), key=widget_key, help=help_text)
    if spec.get("type") in ("integer", "number"):
        kind = int if spec["type"] == "integer" else float
        step = kind(spec.get("step", 1))
        low = spec.get("minimum")
        if low is None and "exclusiveMinimum" in spec:
            low = spec["exclusiveMinimum"] + step
        high = spec.get("maximum", spec.get("exclusiveMaximum"))
        return st.number_input(
            label,
            # a value stored below the widget's least (an exclusive bound) still shows
            min_value=None if low is None else kind(min(low, value)),
            max_value=None if high is None else kind(high),
            value=kind(value),
            step=step,
            key=widget_key,
            help=help_text,
        )
    return st.text_input(
        label, value=str(value), max_chars=spec.get("maxLength"), key=widget_key, help=help_text
    )


def with_settings(design: Design, system: System, chosen: dict[str, Any]) -> Design:
    """``design`` with the system's settings as ``chosen`` on the page, checked by the
    system's model; DesignError names the system and the field of a value it refuses (a
    text box left empty, say)."""
    own = {**design.settings.get(system.name, {}), **chosen}
    updated = design.model_copy(update={"settings": {**design.settings, system.name: own}})
    checked = updated.settings_of(system.settings_model).model_dump(mode="json")
    return updated.model_copy(update={"settings": {**design.settings, system.name: checked}})
