"""Per-reducer throughput and savings on the real corpus, side by side in one run.

    python bench/bench_reducers.py                 # whole corpus
    python bench/bench_reducers.py --limit 2000    # a quick slice
    python bench/bench_reducers.py --large bench/out/large/files   # also the large real outputs

Each reducer runs alone (a one-reducer pipeline, dedup with its session
history per trajectory) over the same records, then the default pipeline; the
table shows records/s, MB/s, how often each acted, the characters it removed,
and its time relative to the whole pipeline. Best of `--repeat` runs (2 noisy
cores: the minimum is the least disturbed measurement).
"""

from __future__ import annotations

import argparse
import gzip
import time
from collections import defaultdict
from pathlib import Path

import orjson

from offload_mcp.reducers.base import ReduceContext, SessionMemory
from offload_mcp.reducers.pipeline import build_pipeline
from offload_mcp.reducers.settings import ReducerSettings

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "dev.jsonl.gz"


def load(path: Path, limit: int | None) -> list[tuple[str, str, str]]:
    rows = []
    with gzip.open(path) if path.suffix == ".gz" else path.open("rb") as fh:
        for line in fh:
            r = orjson.loads(line)
            rows.append((r.get("traj") or "", r["tool"], r["output"]))
            if limit and len(rows) >= limit:
                break
    return rows


def measure(order: list[str], rows: list[tuple[str, str, str]], repeat: int) -> tuple[float, int, int]:
    best = float("inf")
    acted = removed = 0
    for _ in range(repeat):
        pipeline = build_pipeline(ReducerSettings(pipeline=order))  # type: ignore[arg-type]
        sessions: dict[str, SessionMemory] = defaultdict(SessionMemory)
        acted = removed = 0
        start = time.perf_counter()
        for traj, tool, text in rows:
            ctx = ReduceContext(tool=tool, arguments={}, session=sessions[traj])
            result = pipeline.run(text, ctx)
            pipeline.commit_session(result, ctx)
            if result.acted:
                acted += 1
                removed += len(text) - len(result.text)
        best = min(best, time.perf_counter() - start)
    return best, acted, removed


def table(title: str, rows: list[tuple[str, str, str]], repeat: int) -> None:
    chars = sum(len(t) for _, _, t in rows)
    default = ReducerSettings().pipeline
    results = {name: measure([name], rows, repeat) for name in default}
    results["pipeline"] = measure(list(default), rows, repeat)
    whole = results["pipeline"][0]
    print(f"\n{title}: {len(rows):,} records, {chars / 1e6:.2f} MB")
    print(f"{'reducer':<11} {'records/s':>10} {'MB/s':>8} {'acted':>7} {'chars removed':>14} {'% of chars':>10} {'time vs pipeline':>17}")
    for name, (secs, acted, removed) in results.items():
        print(
            f"{name:<11} {len(rows) / secs:>10,.0f} {chars / 1e6 / secs:>8.2f} {acted:>7,} {removed:>14,} "
            f"{100 * removed / chars:>9.2f}% {secs / whole:>16.2f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--limit", type=int)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--large", type=Path, help="A folder of large real outputs (bench/data/large/make_large.py writes them).")
    args = parser.parse_args()
    table(f"corpus {args.corpus.name}", load(args.corpus, args.limit), args.repeat)
    if args.large and args.large.is_dir():
        files = [("large", f.name, f.read_text(encoding="utf-8", errors="replace")) for f in sorted(args.large.iterdir()) if f.is_file()]
        table(f"large outputs in {args.large}", files, args.repeat)


if __name__ == "__main__":
    main()
