"""A FastMCP 2.x server (the `fastmcp` package), stdio or Streamable HTTP (stateful or
stateless) at its default path `/mcp/`... as `fastmcp` serves it.

    python fastmcp-server.py stdio
    python fastmcp-server.py http PORT [--stateless]
"""
import sys

from fastmcp import FastMCP

args = sys.argv[1:]
transport = args[0] if args else "stdio"
server = FastMCP("fastmcp-2")


@server.tool
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


if __name__ == "__main__":
    if transport == "http":
        server.run(
            transport="http", host="127.0.0.1", port=int(args[1]), stateless_http="--stateless" in args,
            show_banner=False, log_level="WARNING",
        )
    else:
        server.run(show_banner=False)
