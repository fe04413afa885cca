"""`offload-mcp toolset-config`: the Messages-API block that defers offload-mcp's cold tools.

    offload-mcp toolset-config --config mcp.json --url https://proxy.example.com/mcp

Anthropic's MCP connector calls a remote MCP server from the Messages API
itself; tool search there is driven by per-tool `defer_loading` in an
`mcp_toolset` entry, not by anything on tools/list. This prints the request
fragment to merge into a Messages request: `mcp_servers` naming the proxy
(served over streamable HTTP: `offload-mcp serve --transport
streamable-http`), a tool search tool, and an `mcp_toolset` whose
`default_config.defer_loading` is true with a `configs` entry set to false
for every hot tool (the proxy's own tools, `hot_tools` globs, learned tools,
and in search mode `search_tools`/`invoke_tool`). The hot set is the one a
new session would get now, so it starts the configured servers and reads the
ledger like `catalog` does. The beta headers to send are printed on stderr.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import orjson

from .catalog import add_source_arguments

SEARCH_TOOLS = {
    "bm25": {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
    "regex": {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
}
BETA_HEADERS = ("mcp-client-2025-11-20", "advanced-tool-use-2025-11-20")


def add_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "toolset-config",
        help="Print an Anthropic MCP-connector mcp_toolset block deferring the cold tools.",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_source_arguments(parser)
    parser.add_argument(
        "--url",
        default="http://127.0.0.1:8765/mcp",
        help="Public URL of the proxy's streamable-HTTP endpoint (default: serve's).",
    )
    parser.add_argument(
        "--server-name", default="offload-mcp", help="Name of the proxy in mcp_servers (default offload-mcp)."
    )
    parser.add_argument(
        "--search",
        choices=sorted(SEARCH_TOOLS),
        default="bm25",
        help="Which Anthropic tool search tool to include (default bm25).",
    )
    parser.add_argument(
        "--token-env",
        metavar="VAR",
        help="Add authorization_token as ${VAR} for the proxy's bearer token (filled in by you).",
    )
    parser.set_defaults(func=run)


def build_block(
    hot_names: list[str], *, url: str, server_name: str, search: str, token_env: str | None = None
) -> dict[str, Any]:
    server: dict[str, Any] = {"type": "url", "url": url, "name": server_name}
    if token_env:
        server["authorization_token"] = f"${{{token_env}}}"
    return {
        "mcp_servers": [server],
        "tools": [
            dict(SEARCH_TOOLS[search]),
            {
                "type": "mcp_toolset",
                "mcp_server_name": server_name,
                "default_config": {"defer_loading": True},
                "configs": {name: {"defer_loading": False} for name in hot_names},
            },
        ],
    }


def eager_names(presentation: Any) -> list[str]:
    """Listed tools that stay loaded: the hot set, plus the search-mode tools when listed."""
    from ..catalog.presentation import INVOKE_TOOL, SEARCH_TOOL

    return [t.name for t in presentation.tools if t.name in presentation.hot or t.name in (SEARCH_TOOL, INVOKE_TOOL)]


def run(args: argparse.Namespace) -> int:
    import anyio

    from .catalog import inspect
    from .serve import resolve_config

    config = resolve_config(args)
    report = anyio.run(inspect, config, args.ledger)
    shown = report.presentations[config.offload.catalog.deferral]
    block = build_block(
        eager_names(shown), url=args.url, server_name=args.server_name, search=args.search, token_env=args.token_env
    )
    sys.stdout.write(orjson.dumps(block, option=orjson.OPT_INDENT_2).decode() + "\n")
    print(f"send with header: anthropic-beta: {','.join(BETA_HEADERS)}", file=sys.stderr)
    for name, why in report.failed.items():
        print(f"offload-mcp: not serving {name} ({why}); its tools are missing from the hot set", file=sys.stderr)
    return 0
