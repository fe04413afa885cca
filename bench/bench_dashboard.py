"""How long the dashboard takes to render on a large ledger, beside `stats --json` (issue 43).

Builds a SQLite ledger of `--events` events (default 1,000,000): the MCP-servers corpus replayed
through the real proxy pipeline (`offload-mcp replay`, 197 decisions), then its event rows copied
with their times moved back by an hour per copy (a ledger's history) and their sessions renamed,
until there are enough. Then, on the same ledger, each of these in a fresh process of its own (so
that each peak RSS is its own and no cache carries over):

- `stats --json` folding every event (no checkpoint): reports.report_from_ledger + the JSON dump;
- writing the checkpoint (no checkpoint stored yet): the same fold, plus the fold's state taken at
  the checkpoint's end, serialised and written; its cost apart (`checkpoint_write_s`) and its size;
- the dashboard, cold, with the checkpoint in place: a new ReportCache (the first GET /dashboard
  of a fresh process) + dashboard.render_page;
- the dashboard, warm: the same page again while nothing was recorded (the cache's mark still
  holds): the median of 5;
- the dashboard after one more event: the recount starts in a thread, the page waits at most
  REFRESH_WAIT_S and shows the last report with the count of events it lacks (or the new one);
- `stats --json` with the checkpoint in place.

Prints seconds, peak RSS (MB) and the ratios to `stats --json` (every event folded) as JSON. Not a
timed test.

    python bench/bench_dashboard.py [--events 1000000] [--keep PATH] [--backend sqlite|postgresql]
"""

from __future__ import annotations

import argparse
import json
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import orjson

from offload_mcp.analysis import stats_checkpoint
from offload_mcp.analysis.dashboard import ReportCache, render_page
from offload_mcp.analysis.reports import report_from_ledger
from offload_mcp.analysis.stats import Accumulator
from offload_mcp.policy.settings import PolicySettings
from offload_mcp.store import Ledger
from offload_mcp.store.settings import LedgerSettings

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "bench" / "data" / "corpus" / "mcp_servers.jsonl.gz"
COLUMNS = "at, kind, session_id, server, tool, verdict, reason, ref_id, chars_in, chars_out, detail"


def build(path: Path, events: int) -> int:
    offload_mcp = str(Path(sys.executable).parent / "offload-mcp")
    subprocess.run([offload_mcp, "replay", str(CORPUS), "--ledger", str(path)], capture_output=True, check=True)
    conn = sqlite3.connect(path)
    try:
        (seed,) = conn.execute("SELECT max(id) FROM events").fetchone()
        copy = 1
        while (total := conn.execute("SELECT count(*) FROM events").fetchone()[0]) < events:
            want = min(seed, events - total)
            conn.execute(
                f"INSERT INTO events ({COLUMNS}) SELECT at - ? * 3600, kind, session_id || '-' || ?, server, tool,"
                f" verdict, reason, ref_id, chars_in, chars_out, detail FROM events WHERE id <= ?",
                (copy, copy, want),
            )
            copy += 1
        conn.commit()
        return int(total)
    finally:
        conn.close()


def build_postgres(url: str, events: int, seed_path: Path) -> int:
    """The same ledger in PostgreSQL: the replayed rows copied in, then multiplied as `build` does."""
    import psycopg

    build(seed_path, 0)
    with sqlite3.connect(seed_path) as seed_db:
        rows = seed_db.execute(f"SELECT {COLUMNS} FROM events ORDER BY id").fetchall()
    Ledger.open(LedgerSettings(), url, connect_now=True).close()  # creates the schema
    with psycopg.connect(url, autocommit=True) as conn, conn.cursor() as cur:
        cur.executemany(f"INSERT INTO events ({COLUMNS}) VALUES ({', '.join(['%s'] * 11)})", rows)
        # Every copy in one statement (the same rows `build` adds a copy at a time): a count(*) and an
        # INSERT per copy of ~200 rows took PostgreSQL longer the larger the table grew.
        copies = -(-(events - len(rows)) // len(rows))
        cur.execute(
            f"INSERT INTO events ({COLUMNS}) SELECT e.at - c * 3600, e.kind, e.session_id || '-' || c::text, e.server,"
            " e.tool, e.verdict, e.reason, e.ref_id, e.chars_in, e.chars_out, e.detail"
            " FROM generate_series(1, %s) AS c CROSS JOIN (SELECT * FROM events WHERE id <= %s) AS e"
            " ORDER BY c, e.id LIMIT %s",
            (copies, len(rows), max(0, events - len(rows))),
        )
        cur.execute("SELECT count(*) FROM events")
        return int(cur.fetchone()[0])  # type: ignore[index]


def timed(fn: object) -> tuple[float, object]:
    start = time.perf_counter()
    value = fn()  # type: ignore[operator]
    return time.perf_counter() - start, value


def peak_rss_mb() -> float:
    """This process's peak resident set (Linux reports KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def measure_stats_json(where: Path | str, checkpoint: bool = False) -> dict[str, float]:
    """`stats --json` in a process of its own: its time and its peak RSS; every event folded unless `checkpoint`."""
    ledger = Ledger.open(LedgerSettings(), where, connect_now=True)
    try:
        before = peak_rss_mb()
        json_s, _ = timed(
            lambda: orjson.dumps(report_from_ledger(ledger, PolicySettings(), checkpoint=checkpoint).as_dict())
        )
    finally:
        ledger.close()
    if checkpoint:
        return {"stats_json_with_checkpoint_s": round(json_s, 3)}
    return {"stats_json_s": round(json_s, 3), "stats_json_peak_rss_mb": peak_rss_mb(), "rss_at_start_mb": before}


def measure_stats_json_with_checkpoint(where: Path | str) -> dict[str, float]:
    return measure_stats_json(where, checkpoint=True)


def measure_checkpoint_write(where: Path | str) -> dict[str, float]:
    """The first checkpointed report of a ledger with none: the full fold, plus the state taken at the
    checkpoint's end, serialised and written (those timed apart: `checkpoint_write_s`)."""
    apart: list[float] = []
    take_state, store = Accumulator.state, stats_checkpoint._store

    def timed_state(fold: Accumulator) -> dict[str, Any]:
        spent, state = timed(lambda: take_state(fold))
        apart.append(spent)
        return state  # type: ignore[return-value]

    def timed_store(ledger: Ledger, scope: str, envelope: Mapping[str, Any], marks: Any) -> None:
        spent, _ = timed(lambda: store(ledger, scope, envelope, marks))
        apart.append(spent)

    Accumulator.state = timed_state  # type: ignore[method-assign]
    stats_checkpoint._store = timed_store
    ledger = Ledger.open(LedgerSettings(), where, connect_now=True)
    try:
        total_s, _ = timed(lambda: stats_checkpoint.report_with_checkpoint(ledger, PolicySettings()))
        stored = ledger.read_checkpoint("all")
    finally:
        ledger.close()
    assert stored is not None, "no checkpoint was written"
    return {
        "checkpoint_report_s": round(total_s, 3),
        "checkpoint_write_s": round(sum(apart), 3),
        "checkpoint_bytes": len(stored.state),
        "checkpoint_peak_rss_mb": peak_rss_mb(),
    }


def measure_page(where: Path | str) -> dict[str, Any]:
    """The dashboard in a process of its own: first open, again, after one more event; peak RSS."""
    ledger = Ledger.open(LedgerSettings(), where, connect_now=True)
    settings = PolicySettings()
    try:
        cache = ReportCache()

        def page() -> str:
            counted = cache.report(ledger, settings, None)
            return render_page(counted.report, ledger=ledger.location, counted=counted)

        cold_s, html = timed(page)
        cold_rss = peak_rss_mb()
        warm = [timed(page)[0] for _ in range(5)]
        # One event more: the page waits REFRESH_WAIT_S for the recount, then shows the last report.
        # In a session of its own: one the ledger already counts (a rerun with --keep) would go on after
        # the checkpoint, which makes the recount fold every event.
        ledger.record_recall(f"bench-{time.time_ns()}", "trm_0123456789abcdef", ok=False)
        recorded_s, _ = timed(page)
        # Then until the recount is shown (the process must not end under its thread).
        cache.wait_s = None  # type: ignore[assignment]
        recounted_s, _ = timed(page)
        lowest, highest = ledger.events_mark()
    finally:
        ledger.close()
    return {
        "events": highest - lowest + 1,
        "dashboard_cold_s": round(cold_s, 3),
        "dashboard_cold_peak_rss_mb": cold_rss,
        "dashboard_warm_s": round(statistics.median(warm), 4),
        "dashboard_after_one_more_event_s": round(recorded_s, 3),
        "recount_shown_after_s": round(recorded_s + recounted_s, 3),
        "page_bytes": len(str(html).encode()),
    }


def in_own_process(fn: Callable[[Path | str], dict[str, Any]], where: Path | str) -> dict[str, Any]:
    """Run one measure in a fresh process, so its peak RSS is its own and no cache carries over."""
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        return pool.submit(fn, where).result()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keep", metavar="PATH", help="build (or reuse) the ledger here instead of a temporary file")
    parser.add_argument(
        "--backend",
        choices=("sqlite", "postgresql"),
        default="sqlite",
        help="postgresql: a throwaway server (tests/support/pg.py)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-dashboard-") as tmp, ExitStack() as stack:
        path = Path(args.keep) if args.keep else Path(tmp) / "ledger.db"
        where: Path | str = path
        if args.backend == "postgresql":
            sys.path.insert(0, str(ROOT / "tests"))
            from support.pg import start_server

            server = start_server()
            stack.callback(server.destroy)
            where = server.url(server.new_schema())
            built_s, total = timed(lambda: build_postgres(str(where), args.events, Path(tmp) / "seed.db"))
        else:
            built_s, total = timed(lambda: build(path, args.events)) if not path.exists() else (0.0, None)
        stats_json = in_own_process(measure_stats_json, where)
        written = in_own_process(measure_checkpoint_write, where)
        page = in_own_process(measure_page, where)
        checkpointed = in_own_process(measure_stats_json_with_checkpoint, where)
    json_s = stats_json["stats_json_s"]
    print(
        json.dumps(
            {
                "events": page["events"],
                "built_s": round(built_s, 1),
                **stats_json,
                **written,
                **page,
                **checkpointed,
                "cold_over_stats_json": round(page["dashboard_cold_s"] / json_s, 4),
                "warm_over_stats_json": round(page["dashboard_warm_s"] / json_s, 4),
                "backend": args.backend,
                "built_rows": total,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
