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
            page = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor)) if cursor else await session.list_tools()
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


def _search_accuracy(bench_catalog: Any) -> str:
    for name in ("search_accuracy", "measure_search", "run_search_accuracy", "accuracy"):
        fn = getattr(bench_catalog, name, None)
        if callable(fn):
            try:
                got = fn()
            except TypeError:
                continue
            if isinstance(got, dict):
                top = got.get("top3") or got.get("top_3") or got.get("recall_at_3") or got.get("accuracy")
                n = got.get("queries") or got.get("n")
                if top is not None:
                    return f"{float(top) * 100 if float(top) <= 1 else float(top):.0f}% right tool in top 3" + (f" ({n} queries)" if n else "")
            if isinstance(got, (int, float)):
                return f"{got * 100 if got <= 1 else got:.0f}% right tool in top 3"
    return "see bench/bench_catalog.py"


def catalog_section(ctx: Any, bench_catalog: Any | None) -> Any:
    from run_all import Section, md_table, pct, tokens  # the runner's helpers

    servers = catalog_servers(ctx.work)
    base_cfg = ctx.work / "catalog-servers.json"
    base_cfg.write_text(json.dumps({"mcpServers": servers}, indent=1))
    rows: list[list[Any]] = []
    counts: dict[str, int] = {}
    n_tools = 0
    offload = str(Path(sys.executable).parent / "offload-mcp")
    modes = ("off", "search") if ctx.quick else MODES
    levels = ("max",) if ctx.quick else LEVELS
    for mode in modes:
        cfg = ctx.work / f"catalog-offload-{mode}.json"
        cfg.write_text(json.dumps({"mcpServers": servers, "offload": {"catalog": {"deferral": mode, "learn_hot_tools": False}}}, indent=1))
        tools = anyio.run(_list, [offload, "serve", "--config", str(cfg), "--ledger", str(ctx.work / "catalog-ledger.db")])
        counts[f"offload-mcp {mode}"] = _chars(tools)
        if mode == "off":
            n_tools = len(tools)
        if mode == "hint":
            counts["offload-mcp hint, as Claude Code loads it (estimate)"] = _claude_code_view(tools)
        rows.append([f"offload-mcp `{mode}`", len(tools), _chars(tools)])
    if "hint" in modes:
        rows.insert(2, ["offload-mcp `hint`, as Claude Code loads it (estimate)", "", counts["offload-mcp hint, as Claude Code loads it (estimate)"]])
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
    accuracy = _search_accuracy(bench_catalog) if bench_catalog is not None else "bench/bench_catalog.py not in the tree yet"
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
        md_table(["mode", "tools listed", "definition tokens", "cut vs all tools", "how the model reaches a tool"], table),
    ]
    return Section("catalog", "6. Tool definitions", "\n".join(body))
