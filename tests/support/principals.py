"""Two principals (bearer tokens) of one proxy, and a call made as one of them."""

from __future__ import annotations

from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from support.cluster import bearer_client

ALICE, BOB = "alice-secret-token", "bob-secret-token"


LONG_LINES = "\n".join(f"line {i} - " + " ".join(f"word{(i * 11 + k) % 97}" for k in range(130)) for i in range(30))


async def session_call(url: str, token: str, *calls: tuple[str, dict[str, object]]) -> list[object]:
    async with bearer_client(token) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return [await session.call_tool(name, args) for name, args in calls]
