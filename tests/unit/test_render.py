"""DOT drawing of compiled graphs."""

from graph.kernel.design import Design
from graph.kernel.render import taken_edges, to_dot
from graph.plan_execute import SYSTEM
from ui.views import view_of

build_graph = SYSTEM.build_graph


def test_only_enabled_agents_are_drawn():
    dot = to_dot(build_graph(Design(enabled_agents=["web_researcher", "synthesizer"])))
    assert "\tweb_researcher" in dot and "\tsynthesizer" in dot
    for absent in ("data_researcher", "chart_generator", "chart_summarizer"):
        assert absent not in dot


def test_conditional_edges_are_dashed_and_patterns_coloured():
    dot = to_dot(build_graph(Design()), SYSTEM)
    assert "__start__ -> planner\n" in dot  # the one fixed edge is solid
    assert "executor -> web_researcher [style=dashed]" in dot
    assert 'chart_generator -> chart_summarizer [color="#2ca02c" penwidth=2 style=dashed]' in dot
    assert 'synthesizer -> __end__ [color="#d62728" style=dashed]' in dot
    assert 'web_researcher -> executor [color="#1f77b4" style=dashed]' in dot
    # no words on the edges: they widen the drawing past a half-width column (#15)
    assert "label=back" not in dot and "label=chain" not in dot


def test_the_drawing_stays_narrow_and_its_labels_readable_whatever_the_agent_count():
    """Issue #15: six agents under the executor are stacked two to a row (invisible
    edges) with names on two lines, and every label is 13 pt (17 px, above the page's
    16 px body text); the browser test measures the rendered labels."""
    from graph.plan_execute.agents import AGENTS

    six = to_dot(build_graph(Design(enabled_agents=list(AGENTS))), SYSTEM)
    one = to_dot(build_graph(Design(enabled_agents=["synthesizer"])), SYSTEM)
    assert "fontsize=13" in six.split("node [", 1)[1].split("]", 1)[0]
    rows = [line.strip() for line in six.splitlines() if "style=invis" in line]
    # the executor routes to five agents and the human gate (the chart summarizer follows
    # the chart generator): six spokes, two a row, four links between rows
    assert len(rows) == 4, rows
    assert 'data_researcher [label="data_\nresearcher"]' in six
    assert not [line for line in one.splitlines() if "style=invis" in line]


def test_the_active_node_and_taken_edges_are_marked():
    path = ["planner", "executor", "web_researcher", "executor"]
    dot = to_dot(build_graph(Design()), active="executor", taken=taken_edges(path))
    # marked by more than colour: a double thick border and a word under its name
    assert (
        'executor [label="executor\n▶ running" color="#e65100" fillcolor="#ffd54f" '
        "penwidth=3 peripheries=2]" in dot
    )
    waiting = to_dot(build_graph(Design()), active="executor", active_note="next")
    assert 'label="executor\n▶ next"' in waiting
    assert 'executor -> web_researcher [color="#e65100" penwidth=3 style=bold]' in dot
    assert "executor -> synthesizer [style=dashed]" in dot
    assert taken_edges(path) == [
        ("__start__", "planner"),
        ("planner", "executor"),
        ("executor", "web_researcher"),
        ("web_researcher", "executor"),
    ]


def test_team_subgraphs_are_drawn_as_clusters_of_their_own_nodes():
    from graph.hierarchical_teams import SYSTEM as TEAMS

    build_teams = TEAMS.build_graph

    compiled = build_teams(Design(system="hierarchical_teams"))
    dot = to_dot(
        compiled,
        active="search_team",
        taken=taken_edges(["lead_supervisor", "request_team", "lead_supervisor"]),
    )
    assert "subgraph cluster_request_team {" in dot and "subgraph cluster_search_team {" in dot
    cluster = dot.split("subgraph cluster_search_team {", 1)[1].split("}", 1)[0]
    assert "search_team__searcher [label=searcher]" in cluster
    assert "request_team" not in cluster.replace("label=search_team", "")
    assert "penwidth=3" in cluster  # the active team is outlined
    assert (
        'lead_supervisor -> request_team____start__ [color="#e65100" penwidth=3 style=bold]' in dot
    )
    assert 'request_team__call_api [label="call_\napi"' in dot
    assert ":" not in "".join(line.split("[")[0] for line in dot.splitlines())  # no port syntax


def test_a_finished_run_of_every_system_draws_its_way_to_end_as_taken():
    from graph.kernel.system import get_system, systems
    from graph.models.scripted import ScriptedChatModel
    from graph.service.runs import run_question

    for name in systems():
        system = get_system(name)
        design = Design(system=name, approvals={a: "never" for a in system.agents})
        graph = system.build_graph(
            design, planner_model=ScriptedChatModel(), worker_model=ScriptedChatModel()
        )
        events: list = []
        outcome = run_question(
            view_of(system.name).examples[0], design, graph=graph, on_event=events.append
        )
        nodes = [e.node for e in events if e.kind == "update" and not e.namespace]
        assert outcome.status == "done", (name, outcome.reason)
        dot = to_dot(graph, system=system, taken=taken_edges(nodes, finished=True))
        into_end = [line for line in dot.splitlines() if "-> __end__" in line]
        assert any("style=bold" in line for line in into_end), (name, into_end)
        unfinished = to_dot(graph, system=system, taken=taken_edges(nodes))
        assert not any(
            "style=bold" in line for line in unfinished.splitlines() if "-> __end__" in line
        )


def test_the_edge_just_taken_is_thickest_even_when_taken_before():
    """Issue #15: among the taken edges (bold), the one just taken is marked apart, by
    width and not only colour, also when the run went that way earlier."""
    path = ["planner", "executor", "web_researcher", "executor", "synthesizer"]
    taken = taken_edges(path[:-1])  # executor -> web_researcher, then back: just taken
    assert taken[-1] == ("web_researcher", "executor")
    again = taken_edges([*path[:-1], "web_researcher"])  # the same way out once more
    assert again[-1] == ("executor", "web_researcher") and len(again) == len(taken)
    dot = to_dot(build_graph(Design()), SYSTEM, taken=again)
    thickest = [line.strip() for line in dot.splitlines() if "penwidth=6" in line]
    assert thickest == [
        'executor -> web_researcher [arrowsize=1.4 color="#bf360c" penwidth=6 style=bold]'
    ]
    assert 'planner -> executor [color="#e65100" penwidth=3 style=bold]' in dot


def test_the_running_node_of_a_server_runs_snapshot_is_its_next_node():
    """A LangGraph Server run's snapshot is read from the server: its tasks have no
    ``state`` (the Run page raised AttributeError on every server run)."""
    from types import SimpleNamespace

    from graph.kernel.checkpoints import running_node

    served = SimpleNamespace(next=("executor",), tasks=[SimpleNamespace(name="executor")])
    assert running_node(served) == "executor"  # type: ignore[arg-type]
