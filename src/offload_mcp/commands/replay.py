"""`offload-mcp replay`: run a corpus of real tool outputs through the shaper and report.

    offload-mcp replay corpus.jsonl.gz
    offload-mcp replay corpus.jsonl.gz --config mcp.json --model claude-sonnet-4-6 --json
    offload-mcp replay corpus.jsonl --ledger /tmp/keep.db --limit 500
    offload-mcp replay corpus.jsonl.gz --client claude-code --dump seen.jsonl

Each line is one JSON record: `tool`, `call`, `output`, optional `traj` and
`step`. Records are shaped exactly as `serve` shapes tool results (same
reducers, policy and ledger), each in its trajectory's session, with a
throwaway ledger unless `--ledger` is given; every record is then restored
(expand every marker, recall every trm_ body) and checked byte for byte.

What the model sees: `--client plain` (default) counts the text blocks the
proxy sends; `--client claude-code` applies what Claude Code does with them
(structuredContent first; over 400,000 chars refused; over its inline size,
50,000 chars or the proxy's declared `anthropic/maxResultSizeChars`, filed to
disk with a 2,000-char preview). Tokens, dollars and needed facts are counted
on that view. `--dump OUT.jsonl` writes one line per record (input order):
line, traj, step, tool, verdict, reason, seen (exactly what the model was
shown), fate (inline/file/rejected) and hidden_facts (needed facts it lost).

Needed facts (`fidelity`): tokens an agent passed in a later call of the same
trajectory (ids, numbers, paths, names with digits or punctuation; >= 6
chars, not a plain word) that occur in an earlier raw output. Each is
visible (in something the model was shown earlier), hidden by a reducer
(named), behind a stub, filed or rejected by the client, or unrecoverable.
Dollars charge one recall hop per needed fact the model could not see
(measured); the `recall_probability` prior is shown beside it.
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
    parser.add_argument(
        "-c", "--config", metavar="FILE", help="Config whose `offload` settings to use (default: built-in defaults)."
    )
    parser.add_argument(
        "--model", help="Model whose prices the gate and the dollar estimate use (default: offload.policy.model)."
    )
    parser.add_argument("--json", action="store_true", help="Print one JSON object instead of tables.")
    parser.add_argument("--ledger", metavar="PATH", help="Keep the ledger in this file (default: a throwaway one).")
    parser.add_argument("--limit", type=int, metavar="N", help="Replay only the first N records.")
    parser.add_argument(
        "--client",
        default="plain",
        choices=["plain", "claude-code"],
        help="Count what this client puts in its model's context (default: plain, the text blocks).",
    )
    parser.add_argument(
        "--dump", metavar="OUT.jsonl", help="Write what the model was shown for each record, one JSON object a line."
    )
    parser.add_argument(
        "--log-level", default="warning", choices=["debug", "info", "warning", "error"], help="Log level (stderr)."
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import orjson

    from ..analysis.replay import REFERENCE_MODELS, ReplayError, read_records
    from ..config import Config, load_config
    from ..policy.pricing import resolve_price
    from ..store import LedgerUnavailable

    if args.limit is not None and args.limit < 0:
        raise ConfigError("--limit must be 0 or more")
    if args.ledger:
        _check_ledger(args.ledger)
    config = load_config(args.config) if args.config else Config()
    settings = config.offload
    if args.model:
        if resolve_price(args.model, settings.policy.pricing) is None:
            raise ConfigError(
                f"--model {args.model}: no pricing row for this model (add one under offload.policy.pricing)"
            )
        settings = settings.model_copy(update={"policy": settings.policy.model_copy(update={"model": args.model})})
    try:
        records = read_records(args.file, args.limit)
    except ReplayError as err:
        raise ConfigError(str(err)) from None
    models = (settings.policy.model, *REFERENCE_MODELS)
    try:
        report = _with_progress(records, settings, args, models)
    except ReplayError as err:
        raise ConfigError(str(err)) from None
    except LedgerUnavailable as err:
        if not args.ledger:
            raise  # the throwaway ledger: not something the user chose or can fix
        raise ConfigError(f"--ledger: {err}; pass another file") from None
    if args.json:
        sys.stdout.write(orjson.dumps(report.as_dict(), option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        _print_tables(report.as_dict())
    return 1 if report.unrecoverable else 0


def _check_ledger(value: str) -> None:
    """Refuse a --ledger that cannot work before the replay, not after it has run for minutes."""
    from ..store.location import local_file_problem

    problem = local_file_problem(value, "replay")
    if problem is not None:
        raise ConfigError(problem)


def _with_progress(records: list[Any], settings: Any, args: argparse.Namespace, models: tuple[str, ...]) -> Any:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from ..analysis.replay import replay

    console = Console(stderr=True)
    with Progress(
        TextColumn("replay"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), console=console, transient=True
    ) as bar:
        task = bar.add_task("replay", total=len(records))
        step = max(len(records) // 200, 1)

        def advance(done: int) -> None:
            if done % step == 0 or done == len(records):
                bar.update(task, completed=done)

        return replay(
            records,
            settings,
            ledger_path=args.ledger,
            source=args.file,
            progress=advance,
            models=models,
            client=args.client,
            dump=args.dump,
        )


def _print_tables(d: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    big = d["big_outputs"]
    summary = Table(title=f"replay of {d['file']} (as the {d['client']} client shows it)", show_header=False)
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
    _print_fidelity(console, d)
    dollars = Table(
        title="dollars (remaining turns per trajectory; prompt caching per config; recalls: one hop per needed fact not seen)"
    )
    for col in ("model", "baseline $", "saved $ (measured recalls)", "saved %", "recall $ measured", "recall $ prior"):
        dollars.add_column(col)
    for model, row in d["dollars"].items():
        if "error" in row:
            dollars.add_row(model, "no price", "", "", "", "")
        else:
            dollars.add_row(
                model,
                f"{row['baseline_usd']:.2f}",
                f"{row['saved_usd']:.2f}",
                f"{row['saved_pct']}%",
                f"{row['recall_usd']:.4f} ({row['recall_hops']} hops)",
                f"{row['recall_usd_prior']:.4f}",
            )
    console.print(dollars)
    for example in d["unrecoverable_examples"]:
        console.print(
            f"[red]unrecoverable[/red] line {example['line']} ({example['tool']}, {example['verdict']}): {example['problem']}"
        )


def _print_fidelity(console: Any, d: dict[str, Any]) -> None:
    from rich.table import Table

    from ..analysis.fidelity import LOSSES

    f = d.get("fidelity")
    if not f:
        return
    table = Table(
        title=f"needed facts (values a later call used that came from an earlier output), {d['client']} client",
        show_header=False,
    )
    table.add_row("needed", f"{f['needed']:,}")
    table.add_row("visible to the model", f"{f['visible']:,} ({f['visible_pct']}%)")
    table.add_row(
        "of them learned from an output",
        f"{f['learned']:,}, {f['learned_visible_pct']}% visible ({f['echoed']:,} echo the agent's own earlier arguments)",
    )
    for loss in LOSSES:
        if f.get(loss):
            table.add_row(loss.replace("_", " "), f"{f[loss]:,} ({f[loss + '_pct']}%)")
    if f["by_reducer"]:
        table.add_row("hidden, by reducer", ", ".join(f"{k}: {v:,}" for k, v in f["by_reducer"].items()))
    reach = d.get("search_reach")
    if reach and reach["behind_stub"]:
        table.add_row(
            "behind a stub, found by one search for the fact",
            f"{reach['found']:,} of {reach['behind_stub']:,} ({reach['found_first']:,} as the first hit)",
        )
    alone = d.get("client_alone")
    if alone:
        af = alone["fidelity"]
        fates = ", ".join(f"{fate} {n:,}" for fate, n in alone["fates"].items())
        table.add_row(
            f"{alone['client']} alone (no proxy)",
            f"{alone['reduction_pct']}% fewer tokens, {af['visible_pct']}% of needed facts visible (results {fates})",
        )
    console.print(table)
    limits = d.get("client_limits")
    if limits:
        console.print(
            f"client limits: the proxy declares maxResultSizeChars={limits['declared_max_result_chars']}; {d['client']} keeps "
            f"{limits['client_inline_chars']:,} chars inline and rejects over {limits['client_max_output_tokens']:,} tokens "
            f"(~{limits['client_max_output_chars_at_estimate']:,} chars at the estimate); largest result sent: "
            f"{limits['largest_sent_chars']:,} chars; filed {limits['filed']}, rejected {limits['rejected']}"
        )
    lossy = [(tool, t) for tool, t in f["by_tool"].items() if t["needed"] > t["visible"]][:15]
    if lossy:
        by_tool = Table(title="needed facts not visible, by tool of the output that held them (top 15)")
        losses = [loss for loss in LOSSES if any(t[loss] for _, t in lossy)]
        for col in ("tool", "needed", "visible", *[loss.replace("_", " ") for loss in losses]):
            by_tool.add_column(col, overflow="fold")
        for tool, t in lossy:
            by_tool.add_row(tool, f"{t['needed']:,}", f"{t['visible']:,}", *[f"{t[loss]:,}" for loss in losses])
        console.print(by_tool)
