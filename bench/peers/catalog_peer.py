"""Tool-definition tokens: offload-mcp's deferral modes against mcp-compressor's levels.

Both run in front of the same >= 100-tool catalog (the real servers of
DESIGN.md plus the GitHub-like catalog server in bench/data/catalog/), from
the same `mcpServers` config, and both are measured the same way: a real
client lists tools over stdio and we count the JSON of the listed tool
definitions (chars / 4). For offload-mcp's `hint` mode every tool is still
listed, so the wire count is the ceiling; what Claude Code actually loads is
the hot tools in full plus one line (name and search hint) per deferred tool,
which we also report as an estimate. Search accuracy comes from
bench/bench_catalog.py (H4's benchmark: natural-language queries, right tool in
the top 3) when it is in the tree; mcp-compressor has no search to measure
(the model picks a name from a listing itself).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp_drive import open_session

HERE = Path(__file__).resolve().parents[1]
ROOT = HERE.parent
LEVELS = ("low", "medium", "high", "max")
MODES = ("off", "hint", "search")


def catalog_servers(work: Path) -> dict[str, Any]:
    bin_dir = Path(sys.executable).parent
    files = work / "catalog-files"
    files.mkdir(exist_ok=True)
    servers: dict[str, Any] = {
        "git": {"command": str(bin_dir / "mcp-server-git"), "args": ["--repository", str(ROOT)]},
        "time": {"command": str(bin_dir / "mcp-server-time")},
        "github": {"command": sys.executable, "args": [str(HERE / "data" / "catalog" / "catalog_server.py")]},
    }
    npm = ROOT / "node_modules" / ".bin"
    if (npm / "mcp-server-filesystem").exists():
        servers["filesystem"] = {"command": str(npm / "mcp-server-filesystem"), "args": [str(files)]}
        servers["everything"] = {"command": str(npm / "mcp-server-everything")}
    return servers


async def _list(command: list[str], env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    async with open_session(command, env=env) as session:
        tools = []
        cursor = None
        while True:
            page = (
                await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor))
                if cursor
                else await session.list_tools()
            )
            tools += [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in page.tools]
            cursor = page.next_cursor
            if not cursor:
                return tools


def _chars(tools: list[dict[str, Any]]) -> int:
    return len(json.dumps(tools, ensure_ascii=False))


def _claude_code_view(tools: list[dict[str, Any]]) -> int:
    """Hot tools in full; each deferred tool as one `name: search hint` line."""
    total = 0
    for tool in tools:
        meta = tool.get("_meta") or {}
        if meta.get("anthropic/alwaysLoad"):
            total += len(json.dumps(tool, ensure_ascii=False))
        else:
            total += len(tool["name"]) + len(str(meta.get("anthropic/searchHint", ""))) + 4
    return total


def _compressor_levels(ctx: Any, servers: dict[str, Any], levels: tuple[str, ...], chars_of: Any) -> list[list[Any]]:
    peer = ctx.peer("compressor")
    if not peer.available:
        return []
    cfg = ctx.work / "catalog-servers.json"
    cfg.write_text(json.dumps({"mcpServers": servers}, indent=1))
    out_dir = ctx.work / "compressor-out"
    out_dir.mkdir(exist_ok=True)
    env = {"MCP_COMPRESSOR_CLI_OUTPUT_DIR": str(out_dir), "TMPDIR": str(out_dir)}
    rows = []
    for level in levels:
        tools = anyio.run(_list, [str(peer.bin / "mcp-compressor"), "--config", str(cfg), "-c", level], env)
        rows.append([f"mcp-compressor `-c {level}`", len(tools), sum(chars_of(t) for t in tools)])
    return rows


def catalog_section(ctx: Any, bench_catalog: Any | None) -> Any:
    from run_all import Section, md_table, pct, tokens  # the runner's helpers

    levels: tuple[str, ...] = () if ctx.quick else LEVELS  # quick: the peer's levels are the full run's job
    if bench_catalog is None:
        return _own_catalog_section(ctx, levels)
    # H4's benchmark measures our modes on the raw wire (defer_loading counted) and search recall; we add the peer.
    workdir = ctx.work / "catalog"
    workdir.mkdir(exist_ok=True)
    os.environ.setdefault("XDG_STATE_HOME", str(workdir / "state"))
    servers = bench_catalog.servers(workdir)
    modes = bench_catalog.measure_modes(workdir, "default", [])
    queries = [
        json.loads(line)
        for line in (HERE / "data" / "catalog" / "queries.jsonl").read_text().splitlines()
        if line.strip()
    ]
    recall = bench_catalog.measure_recall(workdir, queries)
    base = modes["off"]["listed_tokens"]
    rows: list[list[Any]] = []
    for mode, m in modes.items():
        how = {
            "off": "every tool listed in full",
            "hint": "every tool listed; cold ones marked defer_loading (a client that honours it loads only the eager ones)",
            "search": f"search_tools + invoke; right tool in the top 3 for {recall['top3_recall']:.0%} of {recall['queries']} task queries "
            f"(top-1 {recall['top1_recall']:.0%}, {recall['ms_per_search']:.1f} ms per search)",
        }[mode]
        rows.append(
            [
                f"offload-mcp `{mode}`",
                m["listed_tools"],
                round(m["listed_tokens"]),
                m["eager_tools"],
                round(m["eager_tokens"]),
                f"{pct(base - m['eager_tokens'], base):.1f}%",
                how,
            ]
        )
    for name, listed, chars in _compressor_levels(ctx, servers, levels, bench_catalog.tool_chars):
        rows.append(
            [
                name,
                listed,
                round(tokens(chars)),
                listed,
                round(tokens(chars)),
                f"{pct(base - tokens(chars), base):.1f}%",
                "get_tool_schema + invoke wrappers; no search to measure (the model picks a name from a listing)",
            ]
        )
    ctx.data["catalog"] = {"modes": modes, "recall": {k: v for k, v in recall.items() if k != "misses"}}
    body = [
        f"A {modes['off']['listed_tools']}-tool catalog: {', '.join(servers)} (the GitHub-like server is bench/data/catalog/), one "
        "`mcpServers` config for both proxies. offload-mcp's modes and search recall are measured by bench/bench_catalog.py "
        "(raw tools/list over stdio, so `defer_loading` counts); mcp-compressor is listed by a real client on the same config. "
        'Tokens = chars / 4 of each tool\'s compact JSON. "Eager" = what a client that honours `defer_loading` loads up front.',
        "",
        md_table(
            [
                "mode",
                "tools listed",
                "tokens listed",
                "eager tools",
                "eager tokens",
                "cut vs all tools",
                "how the model reaches a tool",
            ],
            rows,
        ),
    ]
    if recall["misses"]:
        body += [
            "",
            "Search misses: "
            + "; ".join(f'"{m["query"]}" (wanted {" or ".join(m["expect"])})' for m in recall["misses"][:6]),
        ]
    return Section("catalog", "6. Tool definitions", "\n".join(body))


def _own_catalog_section(ctx: Any, levels: tuple[str, ...]) -> Any:
    from run_all import Section, md_table, pct, tokens  # the runner's helpers

    servers = catalog_servers(ctx.work)
    base_cfg = ctx.work / "catalog-servers.json"
    base_cfg.write_text(json.dumps({"mcpServers": servers}, indent=1))
    rows: list[list[Any]] = []
    counts: dict[str, int] = {}
    n_tools = 0
    offload = str(Path(sys.executable).parent / "offload-mcp")
    modes = ("off", "search") if ctx.quick else MODES
    for mode in modes:
        cfg = ctx.work / f"catalog-offload-{mode}.json"
        cfg.write_text(
            json.dumps(
                {"mcpServers": servers, "offload": {"catalog": {"deferral": mode, "learn_hot_tools": False}}}, indent=1
            )
        )
        tools = anyio.run(
            _list, [offload, "serve", "--config", str(cfg), "--ledger", str(ctx.work / "catalog-ledger.db")]
        )
        counts[f"offload-mcp {mode}"] = _chars(tools)
        if mode == "off":
            n_tools = len(tools)
        if mode == "hint":
            counts["offload-mcp hint, as Claude Code loads it (estimate)"] = _claude_code_view(tools)
        rows.append([f"offload-mcp `{mode}`", len(tools), _chars(tools)])
    if "hint" in modes:
        rows.insert(
            2,
            [
                "offload-mcp `hint`, as Claude Code loads it (estimate)",
                "",
                counts["offload-mcp hint, as Claude Code loads it (estimate)"],
            ],
        )
    peer = ctx.peer("compressor")
    if peer.available:
        out_dir = ctx.work / "compressor-out"
        out_dir.mkdir(exist_ok=True)
        env = {"MCP_COMPRESSOR_CLI_OUTPUT_DIR": str(out_dir), "TMPDIR": str(out_dir)}
        for level in levels:
            tools = anyio.run(_list, [str(peer.bin / "mcp-compressor"), "--config", str(base_cfg), "-c", level], env)
            counts[f"mcp-compressor {level}"] = _chars(tools)
            rows.append([f"mcp-compressor `-c {level}`", len(tools), _chars(tools)])
    full = counts["offload-mcp off"]
    accuracy = "search recall needs bench/bench_catalog.py"
    table = []
    for name, listed, chars in rows:
        how = ""
        if "search" in name:
            how = f"search + invoke tools; {accuracy}"
        elif "compressor" in name:
            how = "get_tool_schema + invoke wrappers; no search to measure (the model picks from a name listing)"
        elif "estimate" in name:
            how = "hot tools in full, one name + hint line per deferred tool"
        table.append([name, listed, round(tokens(chars)), f"{pct(full - chars, full):.1f}%", how])
    ctx.data["catalog_counts"] = counts
    body = [
        f"A {n_tools}-tool catalog: {', '.join(servers)} (bench/data/catalog/ serves the GitHub-like part), one `mcpServers` config for both "
        "proxies. Tokens = JSON of the tools/list a real client receives, chars / 4; cut measured against offload-mcp `off` "
        "(every tool as the servers gave it).",
        "",
        md_table(
            ["mode", "tools listed", "definition tokens", "cut vs all tools", "how the model reaches a tool"], table
        ),
    ]
    return Section("catalog", "6. Tool definitions", "\n".join(body))
