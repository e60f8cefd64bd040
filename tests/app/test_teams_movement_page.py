"""The Run page marks the node a team is on inside the team's box (issue 28 point 2)."""

import re

from graph.kernel.design import Design
from tests.app.support import graph_dots, open_page, wait_status


def test_the_run_page_marks_the_node_a_team_waits_on_inside_its_box(home, services):
    store, service = services
    # call_api asks a human before the real HTTP call: the run waits inside request_team.
    run_id = service.start("Check that the API is healthy", Design(system="hierarchical_teams"))
    wait_status(store, run_id, "waiting")
    at = open_page("app_pages/run.py", run=run_id)
    dot = graph_dots(at)[0]
    box = re.search(r"subgraph cluster_request_team \{(.*?)\n\t\}", dot, re.S)
    assert box, dot
    assert re.search(r"request_team__call_api \[[^\]]*fillcolor=\"#ffd54f\"", box.group(1))
    assert re.search(
        r"request_team__supervisor -> request_team__health_checker \[[^\]]*penwidth=6", dot
    )
