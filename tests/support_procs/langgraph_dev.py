"""A real LangGraph Server (``langgraph dev``, in-memory) serving graphs Stepwise did not
define, for the Server page's tests: ``tests/server_graphs/`` (its own ``langgraph.json``).

Started by ``langgraph_server.start`` (offline, loopback, its port read from its log) on a
copy of that folder: ``langgraph dev`` keeps its threads in a ``.langgraph_api`` folder
where it runs, so each start begins empty and the repository stays clean.

    python tests/support_procs/langgraph_dev.py [PORT]    # serve in the foreground
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from tests.support_procs import langgraph_server
from tests.support_procs.langgraph_server import LangGraphServer

GRAPHS = Path(__file__).resolve().parents[1] / "server_graphs"


def start(port: int | None = None, graphs: Path = GRAPHS) -> LangGraphServer:
    """Start ``langgraph dev`` on loopback on a copy of ``graphs`` and wait for ``/ok``."""
    folder = Path(tempfile.mkdtemp(prefix="stepwise-langgraph-dev-"))
    shutil.copytree(graphs, folder, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".lang*"))
    return langgraph_server.start(folder, port, config=folder / "langgraph.json")


if __name__ == "__main__":
    dev = start(int(sys.argv[1]) if len(sys.argv) > 1 else None)
    print(f"serving {GRAPHS} at {dev.url} (Ctrl-C stops)", flush=True)
    try:
        dev.process.wait()
    except KeyboardInterrupt:
        dev.stop()
