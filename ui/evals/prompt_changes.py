"""What a variant changed against the baseline, to show above its effect (issue #27
point 2): which prompts differ, each diff line against line as the Prompts page draws
it (``ui.prompt_view``), and each side's model. Pure functions on a recorded experiment."""

from __future__ import annotations

from graph.service.store import ExperimentRecord
from ui import prompt_view as pv
from ui.evals.setup_view import model_label

CONTEXT = 2  # unchanged lines kept around each change: a prompt is long, its edit short


def changes(record: ExperimentRecord, baseline: str) -> list[dict]:
    """Per variant but the baseline, in the experiment's order: ``{variant, model,
    baseline_model, prompts: [{name, title, rows: [DiffRow]}]}``, ``prompts`` holding
    only the prompts whose recorded text differs from the baseline's."""
    by_name = {v["name"]: v for v in record.variants}
    base = by_name[baseline]
    found = []
    for variant in record.variants:
        if variant["name"] == baseline:
            continue
        texts, base_texts = variant.get("prompts") or {}, base.get("prompts") or {}
        prompts = [
            {
                "name": name,
                "title": pv.short_name(name),
                "rows": pv.side_by_side(base_texts.get(name, ""), text, context=CONTEXT),
            }
            for name, text in texts.items()
            if text != base_texts.get(name, "")
        ]
        found.append(
            {
                "variant": variant["name"],
                "model": model_label(record, variant),
                "baseline_model": model_label(record, base),
                "prompts": prompts,
            }
        )
    return found


def headline(change: dict, baseline: str) -> str:
    """One line: which prompts differ and on which models, in words."""
    names = ", ".join(f"**{p['title']}**" for p in change["prompts"])
    what = f"prompts that differ: {names}" if names else "the same prompt texts"
    if change["model"] == change["baseline_model"]:
        model = f"both on {change['model']}"
    else:
        model = f"on {change['model']} (the baseline on {change['baseline_model']})"
    return f"**{change['variant']}** against **{baseline}**: {what}; {model}."


def diff_html(change: dict, prompt: dict, baseline: str) -> str:
    return pv.diff_html(prompt["rows"], baseline, change["variant"])
