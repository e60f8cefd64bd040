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


def tool_report(store: Store, run_id: str, tool: str) -> str:
    """Whether ``tool`` was really called in the run (a small model may answer without
    it, or call it with arguments it refuses): how often, how often it answered without
    an error, and its first reply."""
    replies = [
        str(m.get("content") or "")
        for m in store.messages(run_id)
        if m.get("type") == "tool" and m.get("name") == tool
    ]
    if not replies:
        return f"{tool} was not called: the model answered without it"
    failed = sum("returned an error" in r for r in replies)
    return (
        f"{tool} really called {len(replies)} time(s), {len(replies) - failed} without an "
        f"error; first reply: {replies[0][:160]!r}"
    )
