"""The Run page's data rules, without Streamlit: step durations and message titles."""

from ui.run_view import format_duration, message_title, step_durations


def _state(ts: float, **statuses: str) -> dict:
    rows = [{"step": int(k.removeprefix("s")), "status": v} for k, v in statuses.items()]
    return {"ts": ts, "kind": "state", "data": {"rows": rows}}


def test_a_step_is_timed_from_its_first_run_to_its_end_across_a_replan():
    events = [_state(0.0, s1="pending", s2="pending"),
              _state(1.0, s1="running", s2="pending"),
              _state(2.0, s1="replanned", s2="pending"),
              _state(4.0, s1="running", s2="pending"),
              _state(5.5, s1="done", s2="running")]
    assert step_durations(events, end_ts=7.0) == {1: 4.5, 2: 1.5}


def test_a_step_still_running_when_the_run_ended_counts_up_to_the_end():
    events = [_state(10.0, s1="running")]
    assert step_durations(events, end_ts=12.5) == {1: 2.5}
    assert step_durations(events, end_ts=None) == {}


def test_durations_read_in_seconds_then_minutes():
    assert format_duration(None) == ""
    assert format_duration(1.26) == "1.3 s"
    assert format_duration(75) == "1 min 15 s"


def test_message_titles_say_who_sent_what_to_whom():
    assert message_title({"type": "human", "name": "agent_query", "agent": "web_researcher",
                          "step": 1}) == "executor → web_researcher · the step's request (step 1, web_researcher)"
    assert message_title({"type": "ai", "name": "data_researcher", "agent": "data_researcher",
                          "step": 2, "tool_calls": [{"name": "run_sql"}]}) == \
        "data_researcher · model reply, calling a tool (step 2, data_researcher)"
    assert message_title({"type": "tool", "name": "run_sql", "agent": "data_researcher",
                          "step": 2}) == "tool run_sql · result (step 2, data_researcher)"
