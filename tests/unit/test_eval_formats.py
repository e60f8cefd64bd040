"""Eval data in the field's formats (issue #27 point 5): LangSmith- and Langfuse-shaped
JSONL files imported into the store and exported back unchanged, checks carried in
metadata, a line that does not fit named with its field and nothing imported."""

from __future__ import annotations

import json

import pytest

from graph.service.eval_formats import FormatError, export_jsonl, import_jsonl
from graph.service.eval_sets import Check, EvalQuestion, EvalSet, load_starter

# As LangSmith exports examples: inputs and outputs objects, metadata, its own fields.
LANGSMITH = [
    {
        "id": "0b4d7a2e-6c1f-4d0a-9a55-7f1c9f0a1b11",
        "inputs": {"question": "Why did IBM sell its PC division to Lenovo?", "lang": "en"},
        "outputs": {"answer": "To focus on services and software."},
        "metadata": {"source": "analyst notes", "dataset_split": ["base"]},
        "split": "base",
    },
    {
        "inputs": {"question": "How did Tesla's stock do in 2008?"},
        "outputs": None,
        "metadata": {"stepwise_checks": [{"kind": "answer_contains", "value": "TSLA"}]},
    },
    {"inputs": {"query": "Which stock grew the most between 2005 and 2009?"}, "outputs": {}},
]
# As Langfuse keeps dataset items: input any JSON, expectedOutput, metadata, status.
LANGFUSE = [
    {
        "id": "item-1",
        "input": "Why did IBM sell its PC division to Lenovo?",
        "expectedOutput": "To focus on services and software.",
        "metadata": {"topic": "deals"},
        "status": "ACTIVE",
    },
    {
        "input": {"question": "How did Tesla's stock do in 2008?", "user": "u1"},
        "expectedOutput": {"mentions": ["TSLA"]},
        "metadata": None,
        "sourceTraceId": "trace-9",
    },
    {
        "input": "What caused the dot-com crash?",
        "metadata": {
            "stepwise_checks": [{"kind": "max_steps", "value": 4}, {"kind": "chart_produced"}]
        },
    },
]


def jsonl(lines: list[dict]) -> str:
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)


@pytest.mark.parametrize(("shape", "lines"), [("langsmith", LANGSMITH), ("langfuse", LANGFUSE)])
def test_a_dataset_file_imported_into_the_store_exports_back_unchanged(store, shape, lines):
    text = jsonl(lines)
    store.save_eval_set(import_jsonl(text.encode(), "from the field"))
    stored = store.load_eval_set("from the field")
    assert export_jsonl(stored, shape) == text  # byte for byte: fields, order, nulls

    questions = [q.question for q in stored.questions]
    assert questions[0] == "Why did IBM sell its PC division to Lenovo?"
    assert questions[1] == "How did Tesla's stock do in 2008?"
    checked = stored.questions[1] if shape == "langsmith" else stored.questions[2]
    assert checked.checks and "stepwise_checks" not in checked.metadata


def test_a_stepwise_set_goes_out_in_either_shape_and_comes_back_the_same():
    starter = load_starter()
    for shape in ("langsmith", "langfuse"):
        text = export_jsonl(starter, shape)
        first = json.loads(text.splitlines()[0])
        if shape == "langsmith":
            assert set(first) == {"inputs", "metadata"}
            assert first["inputs"] == {"question": starter.questions[0].question}
        else:
            assert first["input"] == starter.questions[0].question
        back = import_jsonl(text, "starter", starter.description)
        assert [(q.question, q.checks) for q in back.questions] == [
            (q.question, q.checks) for q in starter.questions
        ]
        assert export_jsonl(back, shape) == text


def test_an_edited_question_goes_out_with_its_new_text_and_its_other_fields():
    imported = import_jsonl(jsonl(LANGFUSE), "x")
    edited = imported.questions[0].model_copy(update={"question": "Why did IBM sell it?"})
    line = json.loads(export_jsonl(imported.model_copy(update={"questions": [edited]}), "langfuse"))
    assert line == {**LANGFUSE[0], "input": "Why did IBM sell it?"}


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([LANGSMITH[0], "{not json"], "line 2: not JSON"),
        ([LANGSMITH[0], {"outputs": {}}], "line 2: no 'inputs' field"),
        ([LANGSMITH[0], {"inputs": "just text"}], "line 2, field inputs: must be an object"),
        ([LANGSMITH[0], {"inputs": {"a": 1}}], "line 2, field inputs: no question in it"),
        ([LANGFUSE[0], {"input": "q", "metadata": "x"}], "line 2, field metadata: must be an"),
        (
            [
                LANGFUSE[0],
                "",  # a blank line: skipped, still counted
                {"input": "q", "metadata": {"stepwise_checks": [{"kind": "max_steps"}]}},
            ],
            "line 3, field metadata.stepwise_checks[0]: max_steps needs a whole number",
        ),
        ([{"question": "q"}], "line 1: neither LangSmith's shape"),
        ([LANGSMITH[0], [1, 2]], "line 2: not a JSON object"),
    ],
)
def test_a_line_that_does_not_fit_is_named_with_its_field(lines, message):
    text = "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines)
    with pytest.raises(FormatError) as caught:
        import_jsonl(text, "bad")
    assert str(caught.value).startswith(message), str(caught.value)


def test_an_empty_file_is_refused_in_words():
    with pytest.raises(FormatError, match="The file has no lines"):
        import_jsonl("\n\n", "empty")


def test_edits_in_the_tables_keep_each_unchanged_questions_imported_fields():
    from graph.service.eval_sets import with_kept_fields

    imported = import_jsonl(jsonl(LANGFUSE), "x")
    edited = EvalSet(
        name="x",
        questions=[
            EvalQuestion(question=LANGFUSE[0]["input"], checks=[Check(kind="chart_produced")]),
            EvalQuestion(question="A new question"),
        ],
    )
    kept = with_kept_fields(edited, imported)
    assert kept.questions[0].reference == LANGFUSE[0]["expectedOutput"]
    assert kept.questions[0].origin["line"]["id"] == "item-1"
    assert kept.questions[0].checks == [Check(kind="chart_produced")]
    assert kept.questions[1].origin is None
