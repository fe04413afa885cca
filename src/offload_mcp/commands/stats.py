"""`offload-mcp stats`: what offload-mcp saved, per server and tool, read from the ledger."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from ..analysis.clients import CLIENTS
from ..config import CONFIG_ENV_VAR, ConfigError, OffloadSettings, load_config

EXAMPLES = """\
examples:
  offload-mcp stats                         # everything in the default ledger
  offload-mcp stats --since 7d              # the last week (also 12h, 30m, 2w, or 2026-01-31)
  offload-mcp stats -c offload.json         # the ledger and prices of this config
  offload-mcp stats --ledger /tmp/l.db --json
  offload-mcp stats --model claude-sonnet-4-5   # price the same savings for another model
  offload-mcp stats --client claude-code    # count every result against Claude Code alone (older ledgers)
  offload-mcp stats --html dashboard.html   # the dashboard as one file that opens offline in a browser

Every saving is shown twice: against the raw results (what the servers sent)
and against what the calling client alone would have shown its model (from
the clientInfo it sent at initialize; Claude Code files a result over 50,000
chars with a 2,000-char preview, and over 400,000 answers with an error naming
the saved file). Against the client alone a saving can be negative: a stub can
be longer than a preview, and keeps the whole result one recall away.

Observe mode (`offload.mode: observe` or `serve --observe`) changes nothing the
client sees; stats then shows what each lever would have saved. The observed
recall rate and horizon are what you need to tune offload.policy.recall_probability
and offload.policy.horizon: the suggested values are printed under the table.
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "stats",
        help="show what offload-mcp saved, per server and tool",
        description=__doc__.split(": ", 1)[1],
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--ledger",
        metavar="PATH",
        help="ledger file or postgresql:// URL (default: $OFFLOAD_MCP_LEDGER, offload.ledger.url/path of the config, else the XDG state dir)",
    )
    parser.add_argument(
        "-c",
        "--config",
        metavar="FILE",
        help=f"config whose ledger and pricing to use (default ${CONFIG_ENV_VAR} if set)",
    )
    parser.add_argument("--since", metavar="WHEN", help="only events since: 7d, 12h, 30m, 2w, or an ISO date")
    parser.add_argument("--model", help="price with this model's row instead of offload.policy.model")
    parser.add_argument(
        "--client",
        choices=sorted(CLIENTS),
        help="count every result against this client alone instead of the client each result recorded "
        "(for ledgers written before clients were recorded)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--html",
        metavar="FILE",
        help="write the dashboard (the page `serve` shows at GET /dashboard) to FILE as one self-contained page",
    )
    parser.add_argument(
        "--principal",
        metavar="NAME",
        help="only the rows recorded for this caller (a principal of offload.server.auth_tokens, under ledger.scope: principal)",
    )
    parser.set_defaults(func=run)


def _settings(args: argparse.Namespace) -> OffloadSettings:
    path = args.config or os.environ.get(CONFIG_ENV_VAR)
    return load_config(path).offload if path else OffloadSettings()


def _ledger_path(args: argparse.Namespace, settings: OffloadSettings) -> Path | str:
    """The ledger file, or a postgresql:// URL, resolved as `serve` resolves it."""
    from ..store import LedgerError
    from ..store.location import resolve

    try:
        target = resolve(settings.ledger, args.ledger)
    except LedgerError as err:
        raise ConfigError(str(err)) from None
    return target.path if target.path is not None else str(target.url)


def run(args: argparse.Namespace) -> int:
    from ..analysis.reports import report_from_ledger
    from ..analysis.stats import parse_since
    from ..record import DecisionRecordError
    from ..store import Ledger, LedgerError
    from ..store.location import file_problem
    from ..store.settings import LedgerSettings

    settings = _settings(args)
    since = None
    if args.since:
        try:
            since = parse_since(args.since)
        except ValueError as err:
            raise ConfigError(str(err)) from None
    path = _ledger_path(args, settings)
    problem = file_problem(path, writable=False) if isinstance(path, Path) else None
    if problem is not None:
        raise ConfigError(f"{problem}; pass it with --ledger PATH")
    if isinstance(path, Path) and not path.is_file():
        raise ConfigError(
            f"no ledger at {path}: run `offload-mcp serve` (or `offload-mcp demo --ledger {path}`) first, or pass --ledger PATH"
        )
    try:
        # Default LedgerSettings: stats only reads; it never applies retention.
        ledger = Ledger.open(LedgerSettings(), path, connect_now=True)
    except LedgerError as err:
        another = "file with --ledger PATH" if isinstance(path, Path) else "ledger with --ledger"
        raise ConfigError(f"{err}; pass another {another}") from None
    try:
        owner = f"principal:{args.principal}" if args.principal else None
        report = report_from_ledger(
            ledger, settings.policy, since=since, model=args.model, client=args.client, owner=owner
        )
    except DecisionRecordError as err:
        # A row no build wrote this way (older rows are upgraded when the ledger opens writable).
        print(f"offload-mcp stats: {path}: {err}", file=sys.stderr)
        return 1
    except LedgerError as err:  # a server-backed ledger that does not answer
        raise ConfigError(f"{err}; pass another ledger with --ledger") from None
    finally:
        ledger.close()
    shown = ledger.location

    if args.html:
        from ..analysis.dashboard import render_page

        viewer = f"principal {args.principal}" if args.principal else "every caller"
        try:
            Path(args.html).write_text(render_page(report, ledger=shown, viewer=viewer), encoding="utf-8")
        except OSError as err:
            raise ConfigError(f"--html {args.html}: cannot write the page: {err.strerror or err}") from None
        print(f"offload-mcp stats: wrote the dashboard to {args.html}", file=sys.stderr)
        if not args.json:
            return 0
    if args.json:
        import orjson

        data = report.as_dict()
        data["ledger"] = shown
        sys.stdout.buffer.write(orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")
        return 0
    render(report, shown)
    return 0


def _money(value: float, priced: bool) -> str:
    if not priced:
        return "n/a"
    return f"-${-value:,.2f}" if value < 0 else f"${value:,.2f}"


def render(report: Any, ledger_path: Path | str, console: Any | None = None) -> None:
    """The report as a terminal page: the savings table, then activity, priors and assumptions."""
    if console is None:
        console = _console()
    t = report.totals
    window = "" if report.since is None else " since " + _iso(report.since)
    console.print(
        f"[bold]offload-mcp stats[/bold]  ledger {ledger_path}{window}: {t.results} results in {report.sessions} session(s)"
    )
    if not t.results and not report.recall_calls:
        console.print("No results recorded yet. Run `offload-mcp serve` (or `offload-mcp demo`) and come back.")
        return
    _print_savings(report, console)
    _print_activity(report, console)
    console.print()
    _print_priors(report, console)
    console.print()
    console.print("[bold]assumptions[/bold]:")
    for line in report.assumptions:
        console.print(f"  - {line}")


def _console() -> Any:
    from rich.console import Console

    console = Console(soft_wrap=True)
    if not console.is_terminal:
        console = Console(soft_wrap=True, width=200)  # piped or logged: never truncate names
    return console


def _print_savings(report: Any, console: Any) -> None:
    """The per-server, per-tool table and the line that says what its columns count against."""
    from ..analysis.stats import client_title

    alone = client_title(report.client)
    beside_client = report.client != "plain"
    table = _savings_table(report, alone if beside_client else None)
    for row in report.rows:
        table.add_row(*_savings_cells(row, report, beside_client))
    console.print(table)
    console.print(
        "vs raw = against the raw results (what the servers sent)"
        + (
            f"; vs {alone} alone = against what {alone} shows its model of them without the proxy"
            + (" (would-be figures included)" if report.observe_mode else "")
            + f" ({_fates(report.client_alone_fates)}), negative where the proxy's answer is longer"
            if beside_client
            else ""
        )
    )


def _savings_table(report: Any, alone: str | None) -> Any:
    """The table's columns with the totals as footers; `alone` names the client the last two count against."""
    from rich.table import Table

    t = report.totals
    table = Table(show_footer=True, header_style="bold")
    table.add_column("server", footer="all", no_wrap=True)
    table.add_column("tool", no_wrap=True)
    table.add_column("results", justify="right", footer=str(t.results))
    table.add_column("reduced", justify="right", footer=str(t.reduced))
    table.add_column("offloaded", justify="right", footer=str(t.offloaded))
    table.add_column("recalled", justify="right", footer=str(t.recalls))
    table.add_column("tokens saved vs raw", justify="right", footer=f"{t.tokens_saved:,.0f}")
    table.add_column("$ saved vs raw", justify="right", footer=_money(t.usd_saved, report.priced))
    if report.observe_mode:
        table.add_column("would save tokens vs raw", justify="right", footer=f"{t.would_tokens_saved:,.0f}")
        table.add_column("would save $ vs raw", justify="right", footer=_money(t.would_usd_saved, report.priced))
    if alone is not None:
        table.add_column(
            f"tokens vs {alone} alone",
            justify="right",
            footer=f"{t.client_tokens_saved + t.would_client_tokens_saved:,.0f}",
        )
        table.add_column(
            f"$ vs {alone} alone",
            justify="right",
            footer=_money(t.client_usd_saved + t.would_client_usd_saved, report.priced),
        )
    return table


def _savings_cells(row: Any, report: Any, beside_client: bool) -> list[str]:
    cells = [
        row.server,
        row.tool,
        str(row.results),
        str(row.reduced),
        str(row.offloaded),
        str(row.recalls),
        f"{row.tokens_saved:,.0f}",
        _money(row.usd_saved, report.priced),
    ]
    if report.observe_mode:
        cells += [f"{row.would_tokens_saved:,.0f}", _money(row.would_usd_saved, report.priced)]
    if beside_client:
        cells += [
            f"{row.client_tokens_saved + row.would_client_tokens_saved:,.0f}",
            _money(row.client_usd_saved + row.would_client_usd_saved, report.priced),
        ]
    return cells


def _print_activity(report: Any, console: Any) -> None:
    """What the proxy decided and did: verdicts, reducers, recalls and expands, searches."""
    if report.decisions:
        console.print(
            "[bold]decisions[/bold] (verdict/reason): " + ", ".join(f"{k} {v}" for k, v in report.decisions.items())
        )
    if report.reducer_acts:
        console.print("[bold]reducers acted[/bold]: " + ", ".join(f"{k} {v}" for k, v in report.reducer_acts.items()))
    if report.reducer_declines:
        console.print(
            "[bold]reducer declines[/bold] (reducer/reason): "
            + ", ".join(f"{k} {v}" for k, v in report.reducer_declines.items())
        )
    console.print(
        f"[bold]recalls[/bold]: {report.recall_calls} ({report.failed_recalls} failed), "
        f"[bold]expands[/bold]: {report.expand_calls} ({report.failed_expands} failed)"
    )
    found = report.result_search
    if found.searches:
        console.print(
            f"[bold]result searches[/bold]: {found.searches} ({found.failed} failed), {found.hits} hits named, "
            f"{found.hops_saved} hop(s) saved (a later recall of a hit)"
        )
    if report.search_events:
        console.print(
            "[bold]tool search[/bold] (kind/verdict/reason): "
            + ", ".join(f"{k} {v}" for k, v in report.search_events.items())
        )


def _print_priors(report: Any, console: Any) -> None:
    """The gate's priors beside what the ledger observed, and the config that would match them."""
    console.print("[bold]priors[/bold] (what the net-saving gate assumes vs what happened):")
    for label, check in (("recall_probability", report.recall), ("horizon", report.horizon)):
        observed = (
            "n/a"
            if check.observed is None
            else (f"{check.observed:.2f}" if label == "recall_probability" else f"{check.observed:.1f}")
        )
        configured = f"{check.configured:.2f}" if label == "recall_probability" else f"{check.configured:.0f}"
        line = f"  {label}: configured {configured}, observed {observed} over {check.samples} ({check.note})"
        console.print(line)
    candidates = [
        f'"recall_probability": {report.recall.suggested}' if report.recall.suggested is not None else None,
        f'"horizon": {report.horizon.suggested:.0f}' if report.horizon.suggested is not None else None,
    ]
    suggestions = [s for s in candidates if s]
    if suggestions:
        console.print('  suggested: "offload": {"policy": {' + ", ".join(suggestions) + "}}")
    else:
        from ..analysis.stats import MIN_SAMPLES_FOR_SUGGESTION

        console.print(f"  suggested: none yet (needs {MIN_SAMPLES_FOR_SUGGESTION} or more samples)")


def _iso(when: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(when, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")


def _fates(fates: dict[str, int]) -> str:
    words = {"inline": "kept inline", "file": "filed with a preview", "rejected": "rejected"}
    return ", ".join(f"{words.get(fate, fate)} {n}" for fate, n in fates.items())
