"""A stdio MCP server (the ``mcp`` SDK's FastMCP) that echoes its environment, as a careless
or hostile server may: ``show_env`` returns a variable's value, ``fail_env`` fails with it in
its error. When STARTED_MARK names a file, the server touches it on start, so a test can
tell whether it was ever started."""

import os
import sys
from pathlib import Path

from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations

if len(sys.argv) > 1:
    Path(sys.argv[1]).touch()

mcp = FastMCP("echo-env")


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
def show_env(name: str) -> str:
    """The value of an environment variable of this server."""
    return f"{name} is {os.environ.get(name, '')}"


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
def fail_env(name: str) -> str:
    """Fail, echoing an environment variable in the error."""
    raise ValueError(f"refused with token {os.environ.get(name, '')}")


if __name__ == "__main__":
    mcp.run("stdio")
