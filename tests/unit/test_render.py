"""DOT drawing of compiled graphs."""

from graph.design import Design
from graph.plan_execute import build_graph
from graph.render import taken_edges, to_dot


def test_only_enabled_agents_are_drawn():
    dot = to_dot(build_graph(Design(enabled_agents=["web_researcher", "synthesizer"])))
    assert "\tweb_researcher" in dot and "\tsynthesizer" in dot
    for absent in ("data_researcher", "chart_generator", "chart_summarizer"):
        assert absent not in dot


def test_conditional_edges_are_dashed_and_patterns_labelled():
    dot = to_dot(build_graph(Design()))
    assert "__start__ -> planner\n" in dot  # the one fixed edge is solid
    assert 'executor -> web_researcher [style=dashed]' in dot
    assert 'chart_generator -> chart_summarizer [label=chain color="#2ca02c" penwidth=2 style=dashed]' in dot
    assert 'synthesizer -> __end__ [label=end color="#d62728" style=dashed]' in dot
    assert 'web_researcher -> executor [label=back color="#1f77b4" style=dashed]' in dot


def test_the_active_node_and_taken_edges_are_marked():
    path = ["planner", "executor", "web_researcher", "executor"]
    dot = to_dot(build_graph(Design()), active="executor", taken=taken_edges(path))
    assert 'executor [color="#e65100" fillcolor="#ffd54f" penwidth=3]' in dot
    assert 'executor -> web_researcher [color="#e65100" penwidth=3 style=bold]' in dot
    assert "executor -> synthesizer [style=dashed]" in dot
    assert taken_edges(path) == [("__start__", "planner"), ("planner", "executor"),
                                 ("executor", "web_researcher"), ("web_researcher", "executor")]
