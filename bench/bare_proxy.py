"""A bare mcp-SDK forwarding proxy: the baseline cost of one MCP hop.

    python bench/bare_proxy.py [--] CMD ARGS...

Speaks stdio upstream, starts CMD as a stdio server downstream, and forwards
tools/list and tools/call with nothing else: no catalog, no shaping, no
ledger. What offload-mcp adds on top of this is what its own features cost.
Used by bench/bench_hop_latency.py and by the peer benchmarks.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server import Server
from mcp.server.stdio import stdio_server


def build(session: ClientSession) -> Server[Any]:
    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return await session.list_tools(params=params)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await session.call_tool(params.name, params.arguments)

    return Server("bare-proxy", on_list_tools=list_tools, on_call_tool=call_tool)


async def run(command: list[str]) -> None:
    params = StdioServerParameters(command=command[0], args=command[1:])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        server = build(session)
        async with stdio_server() as (up_read, up_write):
            await server.run(up_read, up_write, server.create_initialization_options())


def main() -> None:
    command = sys.argv[1:]
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        sys.exit("usage: bare_proxy.py [--] CMD ARGS...")
    anyio.run(run, command)


if __name__ == "__main__":
    main()
