"""`offload-mcp replay`: run a corpus of real tool outputs through the shaper and report.

    offload-mcp replay corpus.jsonl.gz
    offload-mcp replay corpus.jsonl.gz --config mcp.json --model claude-sonnet-4-6 --json
    offload-mcp replay corpus.jsonl --ledger /tmp/keep.db --limit 500

Each line is one JSON record: `tool`, `call`, `output`, optional `traj` and
`step`. Records are shaped exactly as `serve` shapes tool results (same
reducers, policy and ledger), each in its trajectory's session, with a
throwaway ledger unless `--ledger` is given; every record is then restored
(expand every marker, recall every trm_ body) and checked byte for byte.
Exit status: 0 ok, 1 when any record is unrecoverable, 2 bad input or config.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..config import ConfigError


def add_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "replay",
        help="Replay a corpus of tool outputs through the reducers and policy; report savings.",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("file", metavar="FILE.jsonl[.gz]", help="Corpus of tool outputs, one JSON object a line.")
    parser.add_argument("-c", "--config", metavar="FILE", help="Config whose `offload` settings to use (default: built-in defaults).")
    parser.add_argument("--model", help="Model whose prices the gate and the dollar estimate use (default: offload.policy.model).")
    parser.add_argument("--json", action="store_true", help="Print one JSON object instead of tables.")
    parser.add_argument("--ledger", metavar="PATH", help="Keep the ledger here (default: a throwaway one).")
    parser.add_argument("--limit", type=int, metavar="N", help="Replay only the first N records.")
    parser.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"], help="Log level (stderr).")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import orjson

    from ..config import Config, load_config
    from ..policy.pricing import resolve_price
    from ..replay import REFERENCE_MODELS, ReplayError, read_records, replay

    if args.limit is not None and args.limit < 0:
        raise ConfigError("--limit must be 0 or more")
    config = load_config(args.config) if args.config else Config()
    settings = config.offload
    if args.model:
        if resolve_price(args.model, settings.policy.pricing) is None:
            raise ConfigError(f"--model {args.model}: no pricing row for this model (add one under offload.policy.pricing)")
        settings = settings.model_copy(update={"policy": settings.policy.model_copy(update={"model": args.model})})
    try:
        records = read_records(args.file, args.limit)
    except ReplayError as err:
        raise ConfigError(str(err)) from None
    models = (settings.policy.model, *REFERENCE_MODELS)
    report = _with_progress(records, settings, args, models)
    if args.json:
        sys.stdout.write(orjson.dumps(report.as_dict(), option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        _print_tables(report.as_dict())
    return 1 if report.unrecoverable else 0


def _with_progress(records: list[Any], settings: Any, args: argparse.Namespace, models: tuple[str, ...]) -> Any:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from ..replay import replay

    console = Console(stderr=True)
    with Progress(TextColumn("replay"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), console=console, transient=True) as bar:
        task = bar.add_task("replay", total=len(records))
        step = max(len(records) // 200, 1)

        def advance(done: int) -> None:
            if done % step == 0 or done == len(records):
                bar.update(task, completed=done)

        return replay(records, settings, ledger_path=args.ledger, source=args.file, progress=advance, models=models)


def _print_tables(d: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    big = d["big_outputs"]
    summary = Table(title=f"replay of {d['file']}", show_header=False)
    for key, value in (
        ("records", f"{d['records']:,}"),
        ("chars in -> out", f"{d['chars_in']:,} -> {d['chars_out']:,}"),
        ("est. tokens in -> out", f"{d['tokens_in']:,} -> {d['tokens_out']:,}"),
        ("reduction", f"{d['reduction_pct']}%"),
        (f"outputs >= {big['min_chars']:,} chars", f"{big['records']} records, {big['reduction_pct']}% fewer"),
        ("unrecoverable", str(d["unrecoverable"])),
        ("throughput", f"{d['records_per_second']} records/s, {d['mb_per_second']} MB/s ({d['seconds']} s)"),
    ):
        summary.add_row(key, value)
    console.print(summary)
    reducers = Table(title="reducers")
    for col in ("reducer", "acted", "chars removed", "declined (reason: count)"):
        reducers.add_column(col)
    for name, t in d["reducers"].items():
        declined = ", ".join(f"{k}: {v:,}" for k, v in sorted(t["declined"].items(), key=lambda kv: -kv[1]))
        reducers.add_row(name, f"{t['acted']:,}", f"{t['chars_removed']:,}", declined)
    console.print(reducers)
    decisions = Table(title="decisions (verdict:reason)")
    decisions.add_column("decision")
    decisions.add_column("records")
    for k, v in d["decisions"].items():
        decisions.add_row(k, f"{v:,}")
    console.print(decisions)
    dollars = Table(title="dollars (remaining turns per trajectory; prompt caching per config)")
    for col in ("model", "baseline $", "saved $", "saved %"):
        dollars.add_column(col)
    for model, row in d["dollars"].items():
        if "error" in row:
            dollars.add_row(model, "no price", "", "")
        else:
            dollars.add_row(model, f"{row['baseline_usd']:.2f}", f"{row['saved_usd']:.2f}", f"{row['saved_pct']}%")
    console.print(dollars)
    for example in d["unrecoverable_examples"]:
        console.print(f"[red]unrecoverable[/red] line {example['line']} ({example['tool']}, {example['verdict']}): {example['problem']}")
