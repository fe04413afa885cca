"""recall_tool_result latency against a small and a large ledger, side by side in one run.

    python bench/bench_recall.py                       # 1K vs 100K entries
    python bench/bench_recall.py --large 20000         # a quicker large ledger

Two ledgers are filled with the same kind of bodies (multi-line text of
`--body-chars` characters, varied words, so zlib works as it does on real
output); then the same number of recalls runs against each: random ids, three
styles (a range page at a random offset, a substring query, a line range),
through the real handler (`offload_mcp.tools.recall.handle`) on a real
ledger file. The ids are drawn so that nearly every recall misses the
handler's small decoded-body cache: this measures the ledger, not the cache.
Prints p50/p99 per style and the large/small ratio (target: <= 1.5).
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

import anyio

from offload_mcp.config import OffloadSettings
from offload_mcp.session import SessionMemory
from offload_mcp.store import BodyRecord, Ledger
from offload_mcp.tools import recall
from offload_mcp.tools.registry import ToolEnv

WORDS = (
    "error warning info debug request response user order item price status ok failed retry timeout "
    "connection database query index cache hit miss commit branch merge test passed module function"
).split()


def make_body(rng: random.Random, chars: int, serial: int) -> str:
    lines, total = [], 0
    n = 0
    while total < chars:
        line = f"{serial}:{n:05d} " + " ".join(rng.choice(WORDS) for _ in range(10)) + f" id={rng.randrange(10**9)}\n"
        lines.append(line)
        total += len(line)
        n += 1
    return "".join(lines)[:chars]


def insert_bodies(path: Path, texts: Iterable[str], batch_size: int = 1000) -> list[str]:
    """Store each text as an offloaded body through the ledger API, in batched commits; return the trm_ ids."""
    ledger = Ledger.open(None, path)
    ids: list[str] = []
    batch: list[BodyRecord] = []
    for i, text in enumerate(texts):
        rec = BodyRecord.of(
            {"content": [{"type": "text", "text": text}]},
            server="bench",
            tool="tool",
            arguments={"i": i},
            session_id="s",
            chars=len(text),
        )
        batch.append(rec)
        ids.append(rec.trm_id)
        if len(batch) == batch_size:
            ledger.commit(bodies=batch)
            batch = []
    if batch:
        ledger.commit(bodies=batch)
    ledger.close()
    return ids


def fill(path: Path, entries: int, body_chars: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return insert_bodies(path, (make_body(rng, body_chars, i) for i in range(entries)))


async def measure(path: Path, ids: list[str], calls: int, seed: int, body_chars: int) -> dict[str, list[float]]:
    settings = OffloadSettings()
    ledger = Ledger.open(settings.ledger, path)
    env = ToolEnv(settings=settings, ledger=ledger, session_id="bench", session=SessionMemory())
    rng = random.Random(seed)
    times: dict[str, list[float]] = {"range": [], "query": [], "lines": []}
    for i in range(calls):
        style = ("range", "query", "lines")[i % 3]
        mem_id = rng.choice(ids)
        if style == "range":
            args = {"mem_id": mem_id, "offset": rng.randrange(0, max(1, body_chars - 100)), "max_chars": 4000}
        elif style == "query":
            args = {"mem_id": mem_id, "query": rng.choice(WORDS)}
        else:
            start = rng.randrange(1, 20)
            args = {"mem_id": mem_id, "lines": f"{start}-{start + 30}"}
        started = time.perf_counter()
        result = await recall.handle(args, env)
        times[style].append(time.perf_counter() - started)
        assert not result.is_error, result.content[0].text
    ledger.close()
    return times


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=1_000, help="entries in the small ledger")
    parser.add_argument("--large", type=int, default=100_000, help="entries in the large ledger")
    parser.add_argument("--body-chars", type=int, default=6_000, help="characters per stored body")
    parser.add_argument("--calls", type=int, default=3_000, help="recalls per ledger")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-recall-") as tmp:
        results = {}
        for label, entries in (("small", args.small), ("large", args.large)):
            path = Path(tmp) / f"{label}.db"
            started = time.perf_counter()
            ids = fill(path, entries, args.body_chars, seed=1)
            fill_s = time.perf_counter() - started
            size_mb = path.stat().st_size / 1e6
            results[label] = anyio.run(measure, path, ids, args.calls, 7, args.body_chars)
            print(f"{label}: {entries:,} entries ({size_mb:,.1f} MB file, filled in {fill_s:.1f}s)")

        print()
        print(f"{'style':8} {'p50 1K':>10} {'p50 big':>10} {'ratio':>7} {'p99 1K':>10} {'p99 big':>10} {'ratio':>7}")
        worst = 0.0
        for style in ("range", "query", "lines", "all"):
            small = sum(results["small"].values(), []) if style == "all" else results["small"][style]
            large = sum(results["large"].values(), []) if style == "all" else results["large"][style]
            p50s, p50l = pct(small, 0.5) * 1e3, pct(large, 0.5) * 1e3
            p99s, p99l = pct(small, 0.99) * 1e3, pct(large, 0.99) * 1e3
            worst = max(worst, p50l / p50s)
            print(
                f"{style:8} {p50s:9.3f}ms {p50l:9.3f}ms {p50l / p50s:6.2f}x {p99s:9.3f}ms {p99l:9.3f}ms {p99l / p99s:6.2f}x"
            )
        print()
        print(
            f"target: the {args.large:,}-entry ledger's p50 within 1.5x of the {args.small:,}-entry one -> "
            f"{'met' if worst <= 1.5 else 'NOT met'} (worst p50 ratio {worst:.2f}x); mean of all calls "
            f"{statistics.mean(sum(results['small'].values(), [])) * 1e3:.3f}ms vs {statistics.mean(sum(results['large'].values(), [])) * 1e3:.3f}ms"
        )


if __name__ == "__main__":
    main()
