"""`offload-mcp demo`: see the proxy work in a few seconds, on a fresh machine.

Starts `offload-mcp serve` as a subprocess over stdio in front of a small
sample MCP server that ships inside this package (this module, run with
`--sample-server`), drives a scripted client session with the mcp SDK, and
prints what the model would have received. Everything lives in a temporary
directory (the ledger included) that is removed at the end.

The sample server's tools return deterministic bodies: `status` (small),
`build_log` (a long CI log with repeated noise and a few errors) and
`list_issues` (a large JSON array).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from typing import Any

SAMPLE_TOOLS: dict[str, str] = {
    "status": "Report the service status in one line.",
    "build_log": "Return the full CI build log of the last run (`lines` lines, default 4000).",
    "list_issues": "Return every open issue as a JSON array (`count` items, default 300).",
}


def build_log(lines: int = 4000) -> str:
    out = []
    for i in range(lines):
        if i % 997 == 500:
            out.append(f"[{i:05d}] ERROR test_payment_{i} failed: expected 200, got 503 (upstream timeout)")
        elif i % 10 == 0:
            out.append(f"[{i:05d}] Downloading package-{i % 37}.tar.gz ... done")
        else:
            out.append(f"[{i:05d}] Compiling module_{i % 53}.py ... ok")
    return "\n".join(out) + "\n"


def list_issues(count: int = 300) -> str:
    states = ("open", "triaged", "blocked")
    items = [
        {"id": 1000 + i, "title": f"Flaky test in shard {i % 17}", "state": states[i % 3], "labels": ["ci", "flaky"], "assignee": None}
        for i in range(count)
    ]
    return json.dumps(items, indent=1)


def run_sample_server() -> None:
    """The demo's downstream server (stdio)."""
    import anyio
    import mcp_types as types
    from mcp.server import Server
    from mcp.server.stdio import stdio_server

    tools = [
        types.Tool(name=name, description=desc, input_schema={"type": "object", "properties": {"lines": {"type": "integer"}, "count": {"type": "integer"}}})
        for name, desc in SAMPLE_TOOLS.items()
    ]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        args = params.arguments or {}
        if params.name == "status":
            text = "all systems nominal: 3 services up, 0 degraded"
        elif params.name == "build_log":
            text = build_log(int(args.get("lines", 4000)))
        elif params.name == "list_issues":
            text = list_issues(int(args.get("count", 300)))
        else:
            return types.CallToolResult(content=[types.TextContent(text=f"unknown tool {params.name}")], is_error=True)
        return types.CallToolResult(content=[types.TextContent(text=text)])

    server = Server("offload-demo-sample", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("demo", help="Run the proxy in front of a sample server and show what it does.", description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sample-server", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--log-level", default="warning", help=argparse.SUPPRESS)
    parser.set_defaults(func=run)


def _text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def _show(label: str, text: str, original: int | None = None, limit: int = 700) -> None:
    size = f"{len(text):,} chars"
    if original is not None and original != len(text):
        size += f" (the server sent {original:,}; {100 * (1 - len(text) / original):.0f}% fewer)"
    print(f"\n--> {label}: {size}")
    head, tail = limit // 3, limit - limit // 3
    shown = text if len(text) <= limit else f"{text[:head]}\n    ... [{len(text) - limit:,} chars not shown] ...\n{text[-tail:]}"
    print("    " + shown.rstrip("\n").replace("\n", "\n    "))


async def _session(workdir: str) -> None:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    sample = [sys.executable, "-m", "offload_mcp.commands.demo", "--sample-server"]
    config = {"mcpServers": {"sample": {"command": sample[0], "args": sample[1:]}}}
    config_path = os.path.join(workdir, "mcp.json")
    with open(config_path, "w") as fh:
        json.dump(config, fh)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "offload_mcp.cli", "serve", "-c", config_path, "--ledger", os.path.join(workdir, "ledger.db")],
        env={**os.environ, "XDG_STATE_HOME": workdir},
        cwd=workdir,
    )
    print("offload-mcp demo: proxy (stdio) in front of a sample MCP server; ledger in a temporary directory\n")
    with open(os.path.join(workdir, "proxy.log"), "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
            print(f"tools/list: {len(tools)} tools: " + ", ".join(t.name for t in tools))

            small = await session.call_tool("status", {})
            _show("status (a small result passes through untouched)", _text(small))

            log_result = await session.call_tool("build_log", {})
            log_text = _text(log_result)
            _show("build_log", log_text, original=len(build_log()))

            issues = await session.call_tool("list_issues", {})
            _show("list_issues", _text(issues), original=len(list_issues()))

            trm = re.search(r"trm_[0-9a-z]+", log_text) or re.search(r"trm_[0-9a-z]+", _text(issues))
            if trm:
                recalled = await session.call_tool("recall_tool_result", {"mem_id": trm.group(0), "query": "ERROR"})
                _show(f"recall_tool_result(mem_id={trm.group(0)}, query='ERROR'): the exact bytes, on demand", _text(recalled))
            marker = re.search(r"<<cg:([0-9a-f]{16})>>", log_text + _text(issues))
            if marker:
                expanded = await session.call_tool("context_guru_expand", {"marker": marker.group(0)})
                _show(f"context_guru_expand({marker.group(0)}): a cut passage restored", _text(expanded), limit=300)
            if not trm and not marker:
                print("\n(no result was shaped: this build forwards results unchanged)")


def run(args: argparse.Namespace) -> int:
    if args.sample_server:
        run_sample_server()
        return 0
    import anyio

    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="offload-mcp-demo-") as workdir:
        anyio.run(_session, workdir)
    print(f"\ndone in {time.monotonic() - started:.1f}s; the temporary directory was removed.")
    return 0


if __name__ == "__main__":
    if "--sample-server" in sys.argv:
        run_sample_server()
