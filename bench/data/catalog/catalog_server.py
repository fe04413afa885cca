"""A stdio MCP server that lists the tool definitions of a JSON file (default: github_like_tools.json).

For the catalog benchmark and the deferral tests: a real MCP server with a
large, realistic catalog. A call answers with one deterministic text block
naming the tool and echoing its arguments (sorted JSON), so a test can see
exactly what reached the server.

    python bench/data/catalog/catalog_server.py [TOOLS.json]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server

HERE = Path(__file__).resolve().parent


def build(path: Path) -> Server[Any]:
    tools = [types.Tool.model_validate(t) for t in json.loads(path.read_text(encoding="utf-8"))]
    known = {t.name for t in tools}

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in known:
            return types.CallToolResult(content=[types.TextContent(text=f"unknown tool {params.name}")], is_error=True)
        text = f"{params.name} called with {json.dumps(params.arguments or {}, sort_keys=True)}"
        return types.CallToolResult(content=[types.TextContent(text=text)])

    return Server("catalog-fixture", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0]) if args else HERE / "github_like_tools.json"
    server = build(path)

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)


if __name__ == "__main__":
    main()
