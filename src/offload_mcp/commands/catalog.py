"""`offload-mcp catalog`: what tool definitions cost the client, per deferral mode and per server.

    offload-mcp catalog --config mcp.json
    offload-mcp catalog --config mcp.json --json
    offload-mcp catalog -- mcp-server-git --repository .

Starts the configured downstream servers exactly as `serve` does, builds the
catalog and the hot set a new session would get (own tools, server
alwaysLoad, `hot_tools` globs, tools learned from the ledger), and prints
for each mode the estimated tokens of the tools/list JSON the client
receives (chars / `policy.chars_per_token`), per server, plus the hot set
with the reason each tool is hot. For `hint` it prints two numbers: what is
listed (every definition, with its marks; never more than `off`) and what a
client that honours `defer_loading` loads eagerly (the hot tools, plus any
cold tool the listing's byte budget left unmarked: catalog/deferral.py).
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import sys
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..config import Config

log = logging.getLogger(__name__)

MODES = ("off", "hint", "search")
OWN_ROW = "(offload-mcp)"


def add_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "catalog",
        help="Tool-definition tokens per deferral mode and server, and the hot set.",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_source_arguments(parser)
    parser.add_argument("--json", action="store_true", help="Print the report as JSON.")
    parser.set_defaults(func=run)


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    """The options `serve` takes to find the servers (shared with toolset-config)."""
    parser.add_argument(
        "-c",
        "--config",
        metavar="FILE",
        help="JSON config with `mcpServers` (and `offload`); default $OFFLOAD_MCP_CONFIG.",
    )
    parser.add_argument(
        "--ledger", metavar="PATH", help="Ledger to learn hot tools from (overrides offload.ledger.path)."
    )
    parser.add_argument(
        "--deferral",
        choices=["hint", "search", "off"],
        help="Mode to report as configured (overrides offload.catalog.deferral).",
    )
    parser.add_argument("--name", help="Server name for the inline command (default: the program's name).")
    parser.add_argument(
        "--log-level", default="error", choices=["debug", "info", "warning", "error"], help="Log level (stderr)."
    )
    parser.add_argument(
        "command", nargs=argparse.REMAINDER, metavar="[--] CMD ARGS", help="An inline downstream stdio server."
    )


@dataclass
class ModeCost:
    listed_chars: int = 0
    eager_chars: int = 0
    listed_tools: int = 0
    eager_tools: int = 0


@dataclass
class CatalogReport:
    chars_per_token: float
    configured_mode: str
    servers: dict[str, dict[str, ModeCost]] = field(default_factory=dict)
    """server (or OWN_ROW) -> mode -> cost"""
    tool_counts: dict[str, int] = field(default_factory=dict)
    hot: list[dict[str, str]] = field(default_factory=list)
    learning: str = ""
    failed: dict[str, str] = field(default_factory=dict)
    presentations: dict[str, Any] = field(default_factory=dict)

    def tokens(self, chars: int) -> int:
        return math.ceil(chars / self.chars_per_token)

    def totals(self, mode: str) -> ModeCost:
        total = ModeCost()
        for costs in self.servers.values():
            cost = costs[mode]
            total.listed_chars += cost.listed_chars
            total.eager_chars += cost.eager_chars
            total.listed_tools += cost.listed_tools
            total.eager_tools += cost.eager_tools
        return total

    def as_dict(self) -> dict[str, Any]:
        def cost(c: ModeCost) -> dict[str, int]:
            return {
                "listed_tools": c.listed_tools,
                "listed_tokens": self.tokens(c.listed_chars),
                "eager_tools": c.eager_tools,
                "eager_tokens": self.tokens(c.eager_chars),
            }

        off_total = self.totals("off").listed_chars or 1
        return {
            "configured_mode": self.configured_mode,
            "chars_per_token": self.chars_per_token,
            "servers": {
                name: {"tools": self.tool_counts.get(name, 0), **{mode: cost(costs[mode]) for mode in MODES}}
                for name, costs in self.servers.items()
            },
            "total": {mode: cost(self.totals(mode)) for mode in MODES},
            "eager_cut_vs_off": {mode: round(1 - self.totals(mode).eager_chars / off_total, 4) for mode in MODES},
            "hot": self.hot,
            "learning": self.learning,
            "failed_servers": self.failed,
        }


def wire_tool(tool: Any, extras: dict[str, Any]) -> dict[str, Any]:
    """One tool as tools/list puts it on the wire (typed dump plus the spliced wire-only fields)."""
    data = tool.model_dump(by_alias=True, exclude_none=True, mode="json")
    data.update(extras)
    return data


def wire_chars(tool: Any, extras: dict[str, Any]) -> int:
    return len(orjson.dumps(wire_tool(tool, extras)).decode())


def is_eager(tool: Any, extras: dict[str, Any]) -> bool:
    """Would a client that honours the marks load this definition up front?"""
    from ..catalog.deferral import DEFER_LOADING

    return not extras.get(DEFER_LOADING)


async def inspect(config: Config, ledger_path: str | os.PathLike[str] | None = None) -> CatalogReport:
    """Start the servers, build the catalog like `serve`, and cost every mode for a new session."""
    from ..catalog.catalog import build_catalog
    from ..catalog.hotset import HotSetMemory
    from ..catalog.presentation import present
    from ..downstream.pool import DownstreamPool
    from ..store import Ledger, LedgerUnavailable
    from ..tools.own import load_own_tools

    settings = config.offload
    report = CatalogReport(chars_per_token=settings.policy.chars_per_token, configured_mode=settings.catalog.deferral)
    own_always, own_optional = load_own_tools()
    async with DownstreamPool(config.mcpServers, settings.downstream) as pool:
        server_tools = {s.name: s.tools for s in pool.servers.values() if s.tools}
        catalog = build_catalog(server_tools, settings.catalog, [*own_always, *own_optional], strict=True)
        # The ledger only as call history for hot-tool learning, as `serve` reads it; none is fine.
        history: Ledger | None = None
        try:
            history = Ledger.open(settings.ledger, ledger_path, connect_now=True)
        except LedgerUnavailable as err:
            log.warning("%s; the hot set is not learned from history", err)
        try:
            for server in pool.servers.values():
                if server.state != "ready":
                    report.failed[server.name] = (server.failure or server.state).splitlines()[0]
            server_of = {e.name: e.server for e in catalog.entries}
            for e in catalog.entries:
                report.tool_counts[e.server] = report.tool_counts.get(e.server, 0) + 1
            rows = list(dict.fromkeys([*report.tool_counts, OWN_ROW]))
            report.servers = {row: {mode: ModeCost() for mode in MODES} for row in rows}
            for mode in MODES:
                shown = present(
                    catalog.entries,
                    [t.tool for t in own_always.values()],
                    settings.catalog.model_copy(update={"deferral": mode}),
                    optional_tools={name: t.tool for name, t in own_optional.items()},
                    ledger=history,
                    session_id="catalog-report",
                    offload=settings,
                    hot_sets=HotSetMemory(),
                )
                report.presentations[mode] = shown
                for tool in shown.tools:
                    extras = shown.wire_extras.get(tool.name, {})
                    cost = report.servers[server_of.get(tool.name, OWN_ROW)][mode]
                    chars = wire_chars(tool, extras)
                    cost.listed_chars += chars
                    cost.listed_tools += 1
                    if is_eager(tool, extras):
                        cost.eager_chars += chars
                        cost.eager_tools += 1
            hot = report.presentations[settings.catalog.deferral].hot
            report.learning = hot.learning
            report.hot = [
                {"name": name, "server": server_of.get(name, OWN_ROW), "reason": why.kind, "detail": why.detail}
                for name, why in hot.reasons.items()
            ]
        finally:
            if history is not None:
                history.close()
    return report


def render(report: CatalogReport) -> str:
    tok = report.tokens
    lines = [
        f"Tool-definition tokens (estimated: chars / {report.chars_per_token:g}); configured mode: {report.configured_mode}",
        "",
    ]
    header = f"{'server':<24} {'tools':>5}  {'off':>8}  {'hint listed':>11}  {'hint eager':>10}  {'search':>8}"
    lines += [header, "-" * len(header)]
    for name, costs in report.servers.items():
        count = report.tool_counts.get(name, costs["off"].listed_tools)
        lines.append(
            f"{name:<24} {count:>5}  {tok(costs['off'].listed_chars):>8}  {tok(costs['hint'].listed_chars):>11}"
            f"  {tok(costs['hint'].eager_chars):>10}  {tok(costs['search'].listed_chars):>8}"
        )
    off, hint, search = (report.totals(m) for m in MODES)
    lines.append("-" * len(header))
    lines.append(
        f"{'total':<24} {off.listed_tools:>5}  {tok(off.listed_chars):>8}  {tok(hint.listed_chars):>11}"
        f"  {tok(hint.eager_chars):>10}  {tok(search.listed_chars):>8}"
    )
    if off.listed_chars:
        lines.append(
            f"{'cut vs off':<24} {'':>5}  {'':>8}  {'':>11}  {1 - hint.eager_chars / off.listed_chars:>10.1%}"
            f"  {1 - search.listed_chars / off.listed_chars:>8.1%}"
        )
    lines += [
        "",
        "hint eager = what a client honouring defer_loading / anthropic/alwaysLoad loads up front (Claude Code).",
        "",
    ]
    lines.append(f"Hot set ({len(report.hot)} tools; learning from the ledger: {report.learning}):")
    for item in report.hot:
        lines.append(f"  {item['name']:<32} {item['server']:<16} {item['reason']}: {item['detail']}")
    for name, why in report.failed.items():
        lines.append(f"Not serving: {name}: {why}")
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    import anyio

    from .serve import resolve_config

    config = resolve_config(args)
    report = anyio.run(inspect, config, args.ledger)
    if args.json:
        sys.stdout.write(orjson.dumps(report.as_dict(), option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        sys.stdout.write(render(report))
    return 0 if report.servers and len(report.failed) < len(config.mcpServers) else 1
