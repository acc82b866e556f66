"""A Python SDK 1.x server (mcp.server.fastmcp), as deployed today: stdio, or Streamable HTTP
stateful or stateless, at the SDK's default path (`/mcp`, which 1.9.4 redirects to `/mcp/`).

    python py-legacy-server.py stdio
    python py-legacy-server.py http PORT [--stateless]
"""
import sys

from mcp.server.fastmcp import FastMCP

args = sys.argv[1:]
transport = args[0] if args else "stdio"
options = {}
if transport == "http":
    options = {"host": "127.0.0.1", "port": int(args[1]), "stateless_http": "--stateless" in args}
server = FastMCP("py-legacy", **options)


@server.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@server.prompt()
def review(code: str, language: str = "python") -> str:
    """Asks for a review of some code."""
    return f"Review this {language} code:\n{code}"


if __name__ == "__main__":
    server.run("streamable-http" if transport == "http" else "stdio")
