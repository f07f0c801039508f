"""The bare SDK's one-shot call: spawn a stdio server, initialize, call ``echo``, exit.

    python bench/clients/sdk_call.py COMMAND [ARG ...]

What a user would write with the SDK alone to do what ``mcpdeck call`` does; the
baseline of ``mcpdeck call`` in ``bench/commands.py``.
"""

from __future__ import annotations

import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main(command: str, args: list[str]) -> None:
    async with (
        stdio_client(StdioServerParameters(command=command, args=args)) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        result = await session.call_tool("echo", {"message": "hi"})
        print(result.content[0].text if result.content and result.content[0].type == "text" else result)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2:])
