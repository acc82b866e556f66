"""The official Python SDK's client (PyPI `mcp`) holding a bearer token, calling a protected
paypedia: `python py-bearer-client.py URL TOKEN`. Exits non-zero on any mismatch."""
import asyncio
import sys

from mcp import ClientSession
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

IBAN = "FR76 3000 6000 0112 3456 7890 189"


async def main(url: str, token: str) -> None:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with http, streamable_http_client(url, http_client=http) as (read, write, *_):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            tools = await session.list_tools()
            names = [t.name for t in tools.tools]
            if "iban_check" not in names:
                raise SystemExit(f"unexpected tools {names}")
            result = await session.call_tool("iban_check", {"input": IBAN})
            text = "\n".join(c.text for c in result.content if getattr(c, "text", None))
            if "VALID" not in text:
                raise SystemExit(f"iban_check answered {text}")
            info = getattr(init, "server_info", None) or getattr(init, "serverInfo", None)
            print(f"python client with a bearer token: {info.name}: OK")


asyncio.run(main(sys.argv[1], sys.argv[2]))
