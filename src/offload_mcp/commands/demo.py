"""`offload-mcp demo`: see what offload-mcp does, in seconds, with no configuration.

It starts the real proxy (`offload-mcp serve`) in front of a real MCP server
(the demo workspace in commands/demo_workspace.py, over stdio), plays a short
agent session against it as an MCP client, and prints for each call what the
server sent and what the client received. At the end: the tokens and dollars
saved (from the ledger, the same numbers `offload-mcp stats` shows), against
the raw results and against what the client alone would have shown (the demo
introduces itself as Claude Code unless `--client plain`), and a recall that
brings one exact detail back. Everything lives in a temporary
directory that is removed on exit, unless `--ledger PATH` keeps the ledger.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..analysis.stats import StatsReport
    from ..config import OffloadSettings
    from ..policy.settings import PolicySettings
    from ..record import DecisionEvent

EXAMPLES = """\
examples:
  offload-mcp demo                          # the default settings, a temporary ledger
  offload-mcp demo --observe                # observe mode: change nothing, record what would be saved
  offload-mcp demo --ledger demo.db         # keep the ledger, then: offload-mcp stats --ledger demo.db
  offload-mcp demo --model claude-sonnet-4-5
  offload-mcp demo -c offload.json          # your `offload` settings (its mcpServers are not used)
"""

SCRIPT: list[tuple[str, dict[str, Any], str]] = [
    ("git_status", {}, "where am I?"),
    ("git_log", {"max_count": 1500}, "what changed lately?"),
    ("read_file", {"path": "exports/orders-2026-q3.csv"}, "look at the Q3 orders export"),
    ("run_tests", {}, "run the test suite"),
    ("list_issues", {"state": "all"}, "which billing issues are open?"),
    ("run_tests", {}, "re-run the tests after a fix"),
]
PREVIEW_LINES = 4
DEMO_CLIENT_NAMES = {"claude-code": "claude-code", "plain": "offload-mcp-demo"}
"""The clientInfo name the demo sends for each client model (clients.for_client_info reads it back)."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "demo",
        help="watch offload-mcp shape a short agent session (seconds, no configuration)",
        description=__doc__.split(": ", 1)[1],
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--ledger", metavar="PATH", help="keep the ledger at PATH (default: a temporary one, removed on exit)"
    )
    parser.add_argument(
        "--observe", action="store_true", help="run the proxy in observe mode (results pass through unchanged)"
    )
    parser.add_argument("--model", help="price with this model (default: offload.policy.model)")
    from ..analysis.clients import CLIENTS

    parser.add_argument(
        "--client",
        choices=sorted(CLIENTS),
        default="claude-code",
        help="the client the demo introduces itself as (clientInfo), whose own handling of the results the "
        "savings are also counted against (default: claude-code)",
    )
    parser.add_argument(
        "-c",
        "--config",
        metavar="FILE",
        help="take the `offload` settings from this config (its mcpServers are ignored)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import anyio

    started = time.perf_counter()
    workdir = Path(tempfile.mkdtemp(prefix="offload-mcp-demo-"))
    try:
        ledger_path = workdir / "ledger.db"
        if args.ledger:
            from ..store.location import local_file_problem

            # Else the proxy would find out only when serving, and the whole session would pass through unshaped.
            problem = local_file_problem(args.ledger, "the demo")
            if problem is not None:
                print(f"offload-mcp demo: {problem}", file=sys.stderr)
                return 2
            ledger_path = Path(args.ledger).expanduser().resolve()
            if ledger_path.exists():
                print(f"offload-mcp demo: {ledger_path} exists; pass a new path with --ledger", file=sys.stderr)
                return 2
            if not ledger_path.parent.is_dir():
                print(
                    f"offload-mcp demo: --ledger {ledger_path}: directory {ledger_path.parent} does not exist; create it or pick another path",
                    file=sys.stderr,
                )
                return 2
        from ..config import ConfigError

        try:
            return anyio.run(_demo, args, workdir, ledger_path, started)
        except ConfigError:
            raise  # the CLI prints it and exits 2
        except Exception as err:  # noqa: BLE001 - one clear message instead of a task-group traceback
            log = workdir / "proxy.log"
            tail = log.read_text(errors="replace").strip().splitlines()[-15:] if log.exists() else []
            print(f"offload-mcp demo failed: {type(err).__name__}: {err}", file=sys.stderr)
            if tail:
                print("the proxy's last log lines:\n  " + "\n  ".join(tail), file=sys.stderr)
            print(
                "run it again with `offload-mcp demo --ledger demo.db` to keep the ledger for a bug report",
                file=sys.stderr,
            )
            return 1
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _write_config(workdir: Path, observe: bool, model: str | None, source: str | None = None) -> Path:
    import orjson

    from ..config import ConfigError, load_config

    offload: dict[str, Any] = {}
    if source:
        load_config(source)  # a clear error for a bad file, before anything starts
        try:
            offload = dict(orjson.loads(Path(source).read_bytes()).get("offload") or {})
        except (OSError, orjson.JSONDecodeError, AttributeError) as err:
            raise ConfigError(f"{source}: {err}") from None
    if observe:
        offload["mode"] = "observe"
    if model:
        offload["policy"] = {**dict(offload.get("policy") or {}), "model": model}
    config = {
        "mcpServers": {"workspace": {"command": sys.executable, "args": ["-m", "offload_mcp.commands.demo_workspace"]}},
        "offload": offload,
    }
    path = workdir / "offload.json"
    path.write_bytes(orjson.dumps(config, option=orjson.OPT_INDENT_2))
    return path


def _text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def _tokens(chars: int) -> str:
    return f"{chars:,} chars (~{chars / 4:,.0f} tokens)"


def _preview(text: str, console: Any) -> None:
    lines = text.splitlines()
    shown = lines[:PREVIEW_LINES]
    marked = [line for line in lines[PREVIEW_LINES:] if "<<cg:" in line or "trm_" in line]
    for line in shown + marked[:2]:
        console.print("      │ " + _clip(line), highlight=False, markup=False)
    if len(lines) > len(shown) + len(marked[:2]):
        console.print(f"      │ ... ({len(lines):,} lines in all)", highlight=False, markup=False)


def _clip(line: str, width: int = 110) -> str:
    line = line.replace("\x1b", "\\e")
    return line if len(line) <= width else line[: width - 3] + "..."


async def _demo(args: argparse.Namespace, workdir: Path, ledger_path: Path, started: float) -> int:
    import mcp_types as types
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from rich.console import Console

    from ..analysis.reports import report_from_ledger
    from ..config import ConfigError, load_config
    from ..policy.pricing import price_for
    from ..record import DecisionEvent
    from ..store import Ledger
    from ..store.settings import LedgerSettings
    from . import demo_workspace as demo_server

    console = Console(highlight=False, soft_wrap=True)
    config_path = _write_config(workdir, args.observe, args.model, args.config)
    settings = load_config(config_path).offload
    price, price_note = price_for(settings.policy.model, settings.policy.pricing)
    if args.model and price is None:
        # As replay refuses it: without a price the gate never fires, and the demo would show no offload.
        raise ConfigError(f"--model {args.model}: no pricing row for this model (add one under offload.policy.pricing)")
    if price_note:
        console.print(f"[yellow]pricing:[/] {price_note}")
    originals = {
        "git_status": demo_server.git_status_text,
        "git_log": demo_server.git_log_text,
        "read_file": demo_server.read_file_text,
        "run_tests": demo_server.run_tests_text,
        "list_issues": demo_server.list_issues_text,
    }
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "offload_mcp.cli", "serve", "-c", str(config_path), "--ledger", str(ledger_path)],
        # Anything the proxy might keep for itself (state, caches) lands in the temporary directory.
        env={**os.environ, "XDG_STATE_HOME": str(workdir), "XDG_CACHE_HOME": str(workdir)},
        cwd=str(workdir),
    )
    mode = "observe mode: results pass through unchanged" if settings.mode == "observe" else "default settings"
    if args.config:
        mode += f", offload settings from {args.config}"
    console.print(f"[bold]offload-mcp demo[/bold]: the proxy in front of a demo workspace server ({mode})\n")

    received: dict[int, str] = {}
    with open(workdir / "proxy.log", "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            # clientInfo as the client sends it: the ledger records it, and stats counts against that client alone.
            info = types.Implementation(name=DEMO_CLIENT_NAMES[args.client], version="demo")
            async with ClientSession(read, write, client_info=info) as session:
                await session.initialize()
                tools = await session.list_tools()
                console.print(f"tools/list: {', '.join(t.name for t in tools.tools)}\n")
                for index, (tool, arguments, why) in enumerate(SCRIPT, 1):
                    sent = originals[tool]()
                    result = await session.call_tool(tool, arguments)
                    got = _text(result)
                    received[index] = got
                    _print_call(console, f"{index}. {tool}", arguments, why, sent, got)

                await _bring_back(session, received, console, settings.recall)

    ledger = Ledger.open(LedgerSettings(), ledger_path)
    try:
        report = report_from_ledger(ledger, settings.policy)
        records = [DecisionEvent.from_ledger_row(e) for e in ledger.events(kinds=["decision"])]
    finally:
        ledger.close()
    _print_decisions(records, console)
    _print_totals(report, settings, console)
    console.print(f"\nfinished in {time.perf_counter() - started:.1f}s.", end=" ")
    if args.ledger:
        console.print(f"Ledger kept at {ledger_path}: try `offload-mcp stats --ledger {ledger_path}`.")
    else:
        console.print("The temporary ledger was removed; nothing was left behind.")
    return 0


def _print_call(console: Any, title: str, arguments: dict[str, Any], why: str, sent: str, got: str) -> None:
    """One scripted call as the demo shows it: what the server sent, what the client received, its preview."""
    shown_args = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
    console.print(f"[bold]{title}({shown_args})[/bold]  [dim]# agent: {why}[/dim]")
    console.print(f"   server sent     {_tokens(len(sent))}")
    for line in sent.splitlines()[:1]:
        console.print("      ┆ " + _clip(line), markup=False)
    saved = 1 - len(got) / len(sent) if sent else 0.0
    console.print(
        f"   client received {_tokens(len(got))}  [green]-{saved:.1%}[/green]"
        if saved > 0
        else f"   client received {_tokens(len(got))}  (unchanged)"
    )
    _preview(got, console)
    console.print()


async def _bring_back(session: Any, received: dict[int, str], console: Any, recall_settings: Any) -> None:
    from . import demo_workspace as demo_server

    needle = demo_server.NEEDLE
    original = demo_server.git_log_text()
    git_text = received[2]
    stub = re.search(r"trm_[0-9a-f]{16}", git_text)
    marker = re.search(r"<<cg:([0-9a-f]{16})>>", git_text)
    if stub or marker:
        console.print(f"[bold]bring a detail back[/bold]: the agent needs commit {needle}, which the client never saw")
    else:
        console.print(f"[bold]bring a detail back[/bold]: the agent needs commit {needle}")
    if stub:
        answer = await session.call_tool("recall_tool_result", {"mem_id": stub.group(0), "query": needle})
        text = _text(answer)
        console.print(f"   recall_tool_result(mem_id={stub.group(0)!r}, query={needle!r}) -> {len(text):,} chars")
        for line in text.splitlines():
            if needle in line or line.startswith("[") and "trm_" in line:
                console.print("      │ " + _clip(line), markup=False)
        return
    if marker:
        restored, offset = [], 0
        while True:
            answer = await session.call_tool("context_guru_expand", {"marker": marker.group(0), "offset": offset})
            page = answer.content[0].text if answer.content else ""
            restored.append(page)
            follow = re.search(r"offset[\"'=: ]+(\d+)", _text(answer)[len(page) :]) if len(answer.content) > 1 else None
            if not follow:
                break
            offset = int(follow.group(1))
        whole = "".join(restored)
        pages = f" in {len(restored)} pages" if len(restored) > 1 else ""
        console.print(
            f"   context_guru_expand({marker.group(0)!r}) -> {len(whole):,} chars{pages}, "
            f"byte-identical to what the server sent: {'yes' if whole == original else 'NO'}"
        )
        for line in whole.splitlines():
            if needle in line:
                console.print("      │ " + _clip(line.strip()), markup=False)
        return
    hit = [line for line in git_text.splitlines() if needle in line]
    console.print("   the client received git_log whole (nothing was cut), so the detail is already in context:")
    for line in hit[:1]:
        console.print("      │ " + _clip(line.strip()), markup=False)


def _print_decisions(records: list[DecisionEvent], console: Any) -> None:
    console.print("\n[bold]what happened, per call[/bold] (from the ledger):")
    for record in records:
        acted = [r.reducer for r in record.reducer_events if r.acted]
        verdict = record.effective_verdict
        reducers = ""
        if acted and verdict == "reduce":
            reducers = f" by {', '.join(acted)}"
        elif acted and verdict == "offload":
            reducers = f" (after {', '.join(acted)})"
        console.print(
            f"   {record.tool:<12} {'would ' if record.observe else ''}{verdict}{reducers}  [dim]policy: {record.reason}[/dim]"
        )


def _print_totals(report: StatsReport, settings: OffloadSettings, console: Any) -> None:
    t = report.totals
    observe = report.observe_mode
    tokens = t.would_tokens_saved if observe else t.tokens_saved
    usd = t.would_usd_saved if observe else t.usd_saved
    before = t.chars_in / settings.policy.chars_per_token
    verb = "would have kept" if observe else "kept"
    console.print(
        f"\n[bold]saved[/bold]: the model {verb} ~{tokens:,.0f} of ~{before:,.0f} tokens out of its context "
        f"({tokens / before:.0%})."
        if before
        else ""
    )
    per_turn = carry_figures(tokens, report.model, settings.policy)
    if report.priced and per_turn is not None:
        first, later = per_turn
        caching = "with prompt caching" if settings.policy.prompt_caching else "without prompt caching"
        console.print(
            f"   at {report.model} {caching}: ${first:,.2f} on the turn each result arrives, "
            f"then ${later:,.2f} on every later turn that carries it."
        )
        saved = "would have saved" if observe else "saved"
        console.print(
            f"   in this {t.results}-call session (each result carried by the request that read it and the calls "
            f"that followed) it {saved} ${usd:,.2f}, net of the cost of bringing details back."
        )
    from ..analysis.stats import saving_lines

    console.print("[bold]beside the alternatives[/bold] (`offload-mcp stats` shows the same numbers):")
    for line in saving_lines(report):
        console.print(f"   {line}")


def carry_figures(tokens: float, model: str, policy: PolicySettings) -> tuple[float, float] | None:
    """USD to carry `tokens` on the first request that reads them and on each later one (policy/economics.py)."""
    from ..policy.economics import Rates
    from ..policy.pricing import resolve_price

    price = resolve_price(model, policy.pricing)
    if price is None:
        return None
    rates = Rates.of(price, prompt_caching=policy.prompt_caching, cache_ttl=policy.cache_ttl)
    first = rates.carry(tokens, 1)
    return first, rates.carry(tokens, 2) - first
