"""Reading the JSON object in a model's reply (graph/models/replies.py)."""

import pytest

from graph.models.replies import parse_json_object


def test_a_raw_line_break_inside_a_string_is_read_as_one():
    # seen from SmolLM2 on the real server: a plan step's text written over two lines
    reply = '{"steps": [{"agent": "synthesizer", "action": "Answer:\n- first\tpoint"}]}'
    assert parse_json_object(reply) == {
        "steps": [{"agent": "synthesizer", "action": "Answer:\n- first\tpoint"}]
    }


def test_the_object_is_found_inside_prose_with_a_raw_line_break():
    reply = 'Here is the plan:\n{"reason": "two\nlines"}\nDone.'
    assert parse_json_object(reply) == {"reason": "two\nlines"}


def test_text_with_no_object_is_a_sentence_naming_where():
    with pytest.raises(ValueError, match=r"not valid JSON \(.* at line 1 column 1\)"):
        parse_json_object("I cannot make a plan.")
