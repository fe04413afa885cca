"""Load through a load balancer: N replicas x C clients x K mixed calls, beside one replica on SQLite.

    python bench/bench_replicas.py                       # 3 replicas, 50 clients, 200 calls, shared SQLite (WAL)
    python bench/bench_replicas.py --ledger postgres          # a throwaway PostgreSQL (tests/support/pg.py: initdb + pg_ctl)
    python bench/bench_replicas.py --ledger postgresql://user@127.0.0.1:5432/db
    python bench/bench_replicas.py --replicas 3 --clients 10 --calls 40     # a quick look

Not a timed test. Everything runs on 127.0.0.1: the replicas are `offload-mcp serve
--transport streamable-http` processes in front of tests/fixtures/hostile_server.py, nginx
(round-robin, no stickiness) is rendered from docs/deploy/nginx.conf, and the clients are
handshake-era `ClientSession`s with two tenants' tokens. Each client's calls are a fixed mix:
small echoes (inline), long-line echoes (cut behind markers), 60 KB results (offloaded), and
recall / expand of what that client was handed before. Reported: errors, p50/p99 latency per
call, calls/s; then every id and marker handed out is read back from the ledger itself and
compared byte for byte with what the fixture server produced.

The baseline is the same load against one replica with its own SQLite ledger, no balancer.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "fixtures")]

import anyio  # noqa: E402
import hostile_server  # noqa: E402
import orjson  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from offload_mcp.session import cg_hash  # noqa: E402
from offload_mcp.store import Ledger  # noqa: E402
from offload_mcp.store.settings import LedgerSettings  # noqa: E402
from support.cluster import DEPLOY, bearer_client, host_port, load_balancer, render, replicas  # noqa: E402

TOKENS = {"alice": "alice-token-0123456789", "bob": "bob-token-9876543210"}
TRM = re.compile(r"trm_[0-9a-f]{16}")
MARKER = re.compile(r"<<cg:([0-9a-f]{16})>>")
HOSTILE = [sys.executable, str(ROOT / "tests" / "fixtures" / "hostile_server.py")]


def long_lines(n: int) -> str:
    return "\n".join(
        f"client {n} row {i} - " + " ".join(f"tok{(i * 7 + k + n) % 89}" for k in range(130)) for i in range(12)
    )


def write_config(tmp: Path, ledger: str) -> Path:
    text = render(
        (DEPLOY / "offload.json").read_text(), ALICE_TOKEN=TOKENS["alice"], BOB_TOKEN=TOKENS["bob"], LEDGER_URL=ledger
    )
    config = json.loads(text)
    config["mcpServers"] = {"hostile": {"command": HOSTILE[0], "args": HOSTILE[1:]}}
    path = tmp / "offload.json"
    path.write_text(json.dumps(config))
    return path


class Run:
    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.errors: list[str] = []
        self.bodies: dict[str, tuple[int, int]] = {}
        self.markers: dict[str, str] = {}


async def client(url: str, n: int, calls: int, run: Run) -> None:
    token = TOKENS["alice" if n % 2 else "bob"]
    texts = long_lines(n)
    last_trm: str | None = None
    last_hash: str | None = None
    async with bearer_client(token) as http, streamable_http_client(url, http_client=http) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for j in range(calls):
                kind = j % 10
                if kind == 6:
                    name, args = "chunks", {"size": 60_000, "seed": n * 1000 + j}
                elif kind in (4, 5):
                    name, args = "echo", {"text": texts}
                elif kind == 7 and last_trm:
                    name, args = "recall_tool_result", {"mem_id": last_trm, "max_chars": 4000}
                elif kind == 8 and last_hash:
                    name, args = "context_guru_expand", {"marker": f"<<cg:{last_hash}>>"}
                else:
                    name, args = "echo", {"text": f"client {n} call {j}"}
                started = time.perf_counter()
                try:
                    with anyio.fail_after(60):
                        result = await session.call_tool(name, args)
                except Exception as err:
                    run.errors.append(f"{name}: {type(err).__name__}: {err}"[:200])
                    continue
                run.latencies.append(time.perf_counter() - started)
                text = "".join(getattr(b, "text", "") for b in result.content)
                if result.is_error:
                    run.errors.append(f"{name}: {text[:200]}")
                    continue
                found = TRM.search(text) if name == "chunks" else None
                if found:
                    last_trm = found.group(0)
                    run.bodies[last_trm] = (args["size"], args["seed"])  # type: ignore[index]
                if name == "echo" and kind in (4, 5):
                    for hash_ in MARKER.findall(text):
                        last_hash = hash_
                        run.markers[hash_] = texts


def verify(ledger_location: str, run: Run) -> tuple[int, list[str]]:
    """Read every handed-out id and marker from the ledger itself; compare bytes."""
    ledger = Ledger.open(LedgerSettings(), path=ledger_location)
    bad: list[str] = []
    checked = 0
    try:
        for trm_id, (size, seed) in run.bodies.items():
            body = orjson.loads(ledger.get_body_json(trm_id))
            got = "\n".join(block.get("text", "") for block in body.get("content", []))
            checked += 1
            if got != "\n".join(hostile_server.chunk_blocks(size, seed)):
                bad.append(trm_id)
        for hash_, source in run.markers.items():
            original = ledger.get_stash(hash_)
            checked += 1
            if cg_hash(original) != hash_ or original not in source:
                bad.append(hash_)
    finally:
        ledger.close()
    return checked, bad


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def load(url: str, clients: int, calls: int) -> tuple[Run, float]:
    run = Run()
    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for n in range(clients):
            tg.start_soon(client, url, n, calls, run)
    return run, time.perf_counter() - started


def report(label: str, run: Run, seconds: float, checked: int, bad: list[str]) -> dict[str, Any]:
    ms = [x * 1000 for x in run.latencies]
    row = {
        "setup": label,
        "calls_ok": len(run.latencies),
        "errors": len(run.errors),
        "p50_ms": round(statistics.median(ms), 1) if ms else None,
        "p99_ms": round(percentile(ms, 0.99), 1) if ms else None,
        "calls_per_s": round(len(ms) / seconds, 1) if seconds else None,
        "wall_s": round(seconds, 1),
        "ledger_entries_checked": checked,
        "ledger_mismatches": len(bad),
    }
    print(json.dumps(row), flush=True)
    for line in run.errors[:5]:
        print("  error:", line, file=sys.stderr)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument(
        "--ledger",
        help="Shared ledger: postgresql://..., or `postgres` for a throwaway server; default a shared SQLite file (WAL).",
    )
    parser.add_argument("--no-baseline", action="store_true", help="Skip the one-replica SQLite baseline.")
    parser.add_argument("--only-baseline", action="store_true", help="Run only the one-replica SQLite baseline.")
    args = parser.parse_args(argv)

    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-replicas-") as tmp_name, ExitStack() as stack:
        tmp = Path(tmp_name)
        if not args.only_baseline:
            shared = args.ledger or str(tmp / "shared.db")
            if shared == "postgres":
                from support.pg import start_server

                server = start_server()
                stack.callback(server.destroy)
                shared = server.url()
            config = write_config(tmp, shared)
            procs = stack.enter_context(replicas(args.replicas, ["-c", str(config)]))
            lb = stack.enter_context(load_balancer(tmp / "lb", [host_port(p.url) for p in procs]))
            run, seconds = anyio.run(load, lb.url, args.clients, args.calls)
            if run.errors:  # what the balancer saw (a replica's 5xx, a closed upstream connection)
                print("  nginx:", *lb.log.read_text(errors="replace").splitlines()[-5:], sep="\n    ", file=sys.stderr)
            checked, bad = verify(shared, run)
            kind = "PostgreSQL" if shared.startswith("postgres") else "shared SQLite"
            rows.append(report(f"{args.replicas} replicas + nginx, {kind}", run, seconds, checked, bad))
        stack.close()
        if not args.no_baseline:
            (tmp / "one").mkdir()
            own = str(tmp / "one" / "ledger.db")
            config = write_config(tmp / "one", own)
            with replicas(1, ["-c", str(config)]) as (proc,):
                run, seconds = anyio.run(load, proc.url, args.clients, args.calls)
            checked, bad = verify(own, run)
            rows.append(report("1 replica, own SQLite, no balancer", run, seconds, checked, bad))
    return 0 if all(r["ledger_mismatches"] == 0 for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
