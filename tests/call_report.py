"""What a run on a real model spent its time on: each model call recorded in its events
(node, seconds, tokens out), printed by the tests on the llama.cpp server so a slower
machine shows where the time goes."""

from __future__ import annotations

from graph.service.store import Store


def model_calls(store: Store, run_id: str) -> list[dict]:
    return [
        e["data"]["llm_call"]
        for e in store.events(run_id, kinds=("custom",))
        if isinstance(e["data"], dict) and "llm_call" in e["data"]
    ]


def call_report(
    system: str, calls: list[dict], took_s: float, where: str = "the one-thread server"
) -> str:
    """Each model call's node, time, tokens and rate, and the run's whole time."""
    lines = [f"{system} on {where}: {took_s:.0f} s, {len(calls)} model calls"]
    for call in calls:
        latency = float(call.get("latency_s") or 0)
        out = call.get("output_tokens") or 0
        rate = f", {out / latency:.1f} tokens/s" if latency and out else ""
        lines.append(f"  {call.get('node') or '?'}: {latency:.1f} s, {out} tokens out{rate}")
    return "\n".join(lines)
