"""Per-reducer throughput and savings on the real corpus, side by side in one run.

    python bench/bench_reducers.py                 # whole corpus
    python bench/bench_reducers.py --limit 2000    # a quick slice
    python bench/bench_reducers.py --large bench/out/large/files   # also the large real outputs
    python bench/bench_reducers.py --shapes 1 4 --limit 1   # MB/s per reducer on 1 MB and 4 MB shapes

Each reducer runs alone (a one-reducer pipeline, dedup with its session
history per trajectory) over the same records, then the default pipeline; the
table shows records/s, MB/s, how often each acted, the characters it removed,
and its time relative to the whole pipeline. Best of `--repeat` runs (2 noisy
cores: the minimum is the least disturbed measurement).

`--shapes MB...` adds one table per size over generated outputs of the shapes a
proxy meets at that size (numbered lines like the test fixture's make_text, a
varied log, the same coloured (ANSI), a git log, a JSON array of records, a
pretty-printed JSON document, one huge line of words, one of base64): MB/s of
each reducer alone and of the whole pipeline side by side, plus `floor` — the
shaper's decide-first bound (Pipeline.floor_chars up to the client limit), the
only work the default path spends on a result whose floor is offloaded anyway —
and `stub`, building the stub text of the result offloaded whole (policy/stub.py
build_stub with the default settings: shape line, identifier index, head), with
its time in ms: the rest of what the shaper spends on it before the ledger
write.
"""

from __future__ import annotations

import argparse
import gzip
import time
from collections import defaultdict
from pathlib import Path

import orjson

from offload_mcp.reducers.base import ReduceContext
from offload_mcp.reducers.pipeline import build_pipeline
from offload_mcp.reducers.settings import ReducerSettings
from offload_mcp.session import SessionMemory

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
    print(
        f"{'reducer':<11} {'records/s':>10} {'MB/s':>8} {'acted':>7} {'chars removed':>14} {'% of chars':>10} {'time vs pipeline':>17}"
    )
    for name, (secs, acted, removed) in results.items():
        print(
            f"{name:<11} {len(rows) / secs:>10,.0f} {chars / 1e6 / secs:>8.2f} {acted:>7,} {removed:>14,} "
            f"{100 * removed / chars:>9.2f}% {secs / whole:>16.2f}x"
        )


def shapes(mb: float) -> list[tuple[str, str, str]]:
    """Generated outputs of about `mb` MB each: (label, tool, text)."""
    import base64
    import json
    import random

    size = int(mb * 1_000_000)
    rng = random.Random(7)
    words = "error warning info request response user order item price status ok failed retry timeout cache".split()
    log, git, n = [], [], 0
    while sum(map(len, log)) < size:
        log.append(
            f"2026-11-29T16:{n // 60 % 60:02d}:{n % 60:02d}Z {rng.choice(words)} "
            + " ".join(rng.choice(words) for _ in range(8))
            + f" id={rng.randrange(10**9):09d}"
        )
        n += 1
    for i in range(size // 150):
        git.append(
            f"Commit: {rng.getrandbits(160):040x}\nAuthor: Dev {i % 7} <dev{i % 7}@example.com>\nDate: 2026-01-{i % 28 + 1:02d} 10:00:00+00:00\nMessage: change {i}\n"
        )
    rows = [
        {"id": i, "name": f"item {i}", "price": round(rng.random() * 100, 2), "status": rng.choice(words)}
        for i in range(size // 70)
    ]
    numbered, total = [], 0
    while total < size:  # tests/fixtures/fixture_server.py make_text
        numbered.append(f"line {len(numbered)}: " + "x" * 60 + "\n")
        total += len(numbered[-1])
    return [
        ("numbered", "make_text", "".join(numbered)[:size]),
        ("log", "read_text_file", "\n".join(log)[:size]),
        # the same log coloured as a terminal tool prints it (pytest, cargo with colour forced)
        ("colour log", "run", "\n".join(f"\x1b[32m{line[:21]}\x1b[0m{line[21:]}" for line in log)[:size]),
        ("git log", "git_log", "\n".join(git)[:size]),
        ("json array", "query", json.dumps(rows)),
        ("json pretty", "get", json.dumps({"total": len(rows), "results": rows}, indent=2)),
        ("one line", "get", " ".join(words[i % len(words)] for i in range(size))[:size]),
        # base64 on one line (a file or an image sent as text): no path, word or URL for linecap to keep
        ("one blob", "get", base64.b64encode(rng.randbytes(size * 3 // 4 + 3)).decode()[:size]),
    ]


def stub_seconds(text: str, tool: str, repeat: int) -> float:
    """Best time of build_stub on `text` as the shaper calls it with the default settings."""
    from offload_mcp.policy.policy import ResultPolicy
    from offload_mcp.policy.settings import PolicySettings
    from offload_mcp.policy.stub import build_stub

    settings = PolicySettings()
    body = {"content": [{"type": "text", "text": text}]}
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        build_stub(
            trm_id="trm_0123456789abcdef",
            tool=tool,
            body=body,
            chars=len(text),
            chars_per_token=settings.chars_per_token,
            budget_tokens=settings.stub_tokens,
            index_chars=ResultPolicy(settings).index_chars(),
        )
        best = min(best, time.perf_counter() - start)
    return best


def shapes_table(mb: float, repeat: int) -> None:
    from offload_mcp.policy.settings import PolicySettings

    default = list(ReducerSettings().pipeline)
    enough = PolicySettings().client_max_result_chars
    floor_pipeline = build_pipeline(
        ReducerSettings(pipeline=[n for n in default if n not in ("collapse", "smartcrush")])
    )  # type: ignore[misc]
    print(f"\nMB/s per reducer alone, pipeline and decide-first floor, on ~{mb:g} MB outputs (best of {repeat})")
    columns = [*default, "pipeline", "floor", "stub"]
    print(f"{'shape':<12} {'MB':>5} " + " ".join(f"{c:>10}" for c in columns) + f" {'stub ms':>8}")
    for label, tool, text in shapes(mb):
        rows = [("", tool, text)]
        speeds = []
        for name in columns:
            if name == "floor":
                best = float("inf")
                for _ in range(repeat):
                    ctx = ReduceContext(tool=tool, arguments={}, session=SessionMemory())
                    start = time.perf_counter()
                    bound = floor_pipeline.floor_chars(text, ctx, enough)
                    best = min(best, time.perf_counter() - start)
                speeds.append(f"{len(text) / 1e6 / best:>9.0f}" + ("-" if bound is None else " "))
                continue
            if name == "stub":
                secs = stub_seconds(text, tool, repeat)
                speeds.append(f"{len(text) / 1e6 / secs:>10.0f} {secs * 1e3:>8.2f}")
                continue
            order = default if name == "pipeline" else [name]
            secs, _acted, _removed = measure(order, rows, repeat)
            speeds.append(f"{len(text) / 1e6 / secs:>10.1f}")
        print(f"{label:<12} {len(text) / 1e6:>5.2f} " + " ".join(speeds))
    print("floor: a trailing `-` means no bound (noise shapes or JSON present): the reducers run.")
    print("stub: build_stub on the whole result (shape line, identifier index, head), MB/s and ms.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--limit", type=int)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--large", type=Path, help="A folder of large real outputs (bench/data/large/make_large.py writes them)."
    )
    parser.add_argument(
        "--shapes", type=float, nargs="*", help="Also MB/s on generated outputs of these sizes in MB (e.g. 1 4)."
    )
    args = parser.parse_args()
    table(f"corpus {args.corpus.name}", load(args.corpus, args.limit), args.repeat)
    for mb in args.shapes or []:
        shapes_table(mb, args.repeat)
    if args.large and args.large.is_dir():
        files = [
            ("large", f.name, f.read_text(encoding="utf-8", errors="replace"))
            for f in sorted(args.large.iterdir())
            if f.is_file()
        ]
        table(f"large outputs in {args.large}", files, args.repeat)


if __name__ == "__main__":
    main()
