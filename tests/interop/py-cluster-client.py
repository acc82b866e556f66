"""The official Python SDK's client (PyPI `mcp`) on a cluster of our servers behind nginx
(round-robin, no stickiness): one legacy session of many calls, a subscription whose update is
announced through another node, an elicitation answered wherever the answer lands, progress.
`python py-cluster-client.py URL`; exits non-zero on any mismatch."""
import asyncio
import sys

from mcp import ClientSession, types
try:
    from mcp.client.streamable_http import streamable_http_client
except ImportError:  # before 2.0
    from mcp.client.streamable_http import streamablehttp_client as streamable_http_client

URI = "example://about"


async def main(url: str) -> None:
    updated = asyncio.Event()

    async def on_message(message) -> None:
        notification = getattr(message, "root", message)  # wrapped in ServerNotification before 2.x
        if isinstance(notification, types.ResourceUpdatedNotification) and str(notification.params.uri) == URI:
            updated.set()

    async def on_elicit(_context, _params):
        return types.ElicitResult(action="accept", content={"yes": True})

    async with streamable_http_client(url) as (read, write, *_):
        async with ClientSession(read, write, message_handler=on_message, elicitation_callback=on_elicit) as session:
            await session.initialize()
            for i in range(30):
                result = await session.call_tool("sum", {"a": i, "b": 1})
                if f"= {i + 1}" not in result.content[0].text:
                    raise SystemExit(f"sum {i} answered {result}")
            await session.subscribe_resource(URI)
            # The GET stream opens in the background, on whichever node nginx picks: announce
            # until the update arrives there, for at most 10 s.
            for _ in range(40):
                await session.call_tool("announce", {"uri": URI})
                try:
                    await asyncio.wait_for(updated.wait(), 0.25)
                    break
                except asyncio.TimeoutError:
                    pass
            if not updated.is_set():
                raise SystemExit("no resources/updated within 10 s")
            asked = await session.call_tool("confirm", {"question": "Ship it?"})
            if asked.content[0].text != "the user said yes":
                raise SystemExit(f"confirm answered {asked}")
            steps = 0

            async def on_progress(_progress, _total, _message) -> None:
                nonlocal steps
                steps += 1

            waited = await session.call_tool("wait", {"ms": 500}, progress_callback=on_progress)
            if waited.content[0].text != "waited 500 ms" or steps < 3:
                raise SystemExit(f"wait answered {waited} after {steps} progress")
            print(f"python client on a cluster behind nginx: 30 calls, subscription, elicitation, {steps} progress: OK")


asyncio.run(main(sys.argv[1]))
