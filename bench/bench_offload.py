"""Time for a client to get a large result directly vs the stub through the proxy, side by side in one run.

    python bench/bench_offload.py                 # 1 MB and 10 MB, 5 repeats
    python bench/bench_offload.py --sizes 1 4      # the issue-12 target sizes
    python bench/bench_offload.py --sizes 1 4 10 --repeat 9
    python bench/bench_offload.py --sizes 1 4 --baseline /work/main/.venv/bin/offload-mcp   # before/after

End to end over stdio with the Python SDK client, the same real downstream
server both ways, sessions warmed up first:

- direct: client -> server (the client receives and parses the full result);
- proxy/offload: client -> `offload-mcp serve` -> server, reducers off, so
  the result reaches the policy whole and is offloaded: the proxy receives it,
  hashes, compresses and commits it to the ledger, and the client receives
  the stub;
- proxy/default: the same with the default configuration (reducers on). A
  result whose reducer floor (Pipeline.floor_chars: each distinct line once,
  cut no shorter than linecap cuts) is offloaded anyway is decided before any
  reducer runs, so this path should cost what proxy/offload costs.

Servers: @modelcontextprotocol/server-filesystem `read_text_file` on a file of
the given size (it also returns structuredContent and declares an
outputSchema, so the client validates it), and the test fixture server's
`make_text`. Bodies are varied log-like lines so compression does real work. The fixture's
`json_records` is a JSON API server's result: N records as 2-space indented JSON text plus the same
value as structuredContent, no outputSchema (the structured channel priced, and dropped as a duplicate
when the text is cut).
The three paths take turns call by call, so the machine's load weighs on each alike.
With `--baseline OFFLOAD_MCP` a fourth path, `baseline`, runs the default configuration through
another installed offload-mcp (e.g. main's), taking turns with the others: a change measured before
and after in one run, under the same load. Reports the median per path and the ratio to direct. Target: ratio <= 1.0
at 1 MB and up (the client parses a 1 KB stub instead of the whole result).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
NPM_BIN = ROOT / "node_modules" / ".bin"
FIXTURE = ROOT / "tests" / "fixtures" / "fixture_server.py"
OFFLOAD_MCP = str(Path(sys.executable).parent / "offload-mcp")
WORDS = "error warning info request response user order item price status ok failed retry timeout cache".split()


def log_text(chars: int, seed: int = 3) -> str:
    rng = random.Random(seed)
    out, total, n = [], 0, 0
    while total < chars:
        line = (
            f"2026-11-29T16:{n // 60 % 60:02d}:{n % 60:02d}Z {rng.choice(WORDS)} "
            + " ".join(rng.choice(WORDS) for _ in range(8))
            + f" id={rng.randrange(10**9):09d}\n"
        )
        out.append(line)
        total += len(line)
        n += 1
    return "".join(out)[:chars]


def records_for(chars: int) -> int:
    """How many of the fixture's `json_records` make a text of about `chars` (~150 chars each, indented)."""
    sample = 1000
    one = len(json.dumps({"records": [_record(i) for i in range(sample)]}, indent=2)) / sample
    return max(1, int(chars / one))


def _record(i: int) -> dict[str, Any]:
    # the fixture server's json_records item (tests/fixtures/fixture_server.py)
    return {"id": i, "name": f"item-{i}", "status": "ok", "price": i * 1.25, "tags": ["a", "b"]}


async def open_session(stack: AsyncExitStack, command: str, args: list[str]) -> Any:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=command, args=args, cwd=str(ROOT))
    read, write = await stack.enter_async_context(stdio_client(params))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    await session.list_tools()  # the client validates structuredContent against listed schemas
    return session


async def timed(sessions: dict[str, Any], tool: str, args: dict[str, Any], repeat: int) -> dict[str, tuple[float, int]]:
    """Median time and chars received per path. The paths take turns call by call (the order rotating),
    so a change in the machine's load while a size runs weighs on every path alike, not on one block."""
    for session in sessions.values():
        await session.call_tool(tool, args)  # warm-up (and, through the proxy, the first ledger write)
    names = list(sessions)
    times: dict[str, list[float]] = {name: [] for name in names}
    sizes: dict[str, int] = {}
    for i in range(repeat):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            started = time.perf_counter()
            result = await sessions[name].call_tool(tool, args)
            times[name].append(time.perf_counter() - started)
            assert not result.is_error, result
            sizes[name] = sum(len(getattr(b, "text", "")) for b in result.content)
    return {name: (statistics.median(times[name]), sizes[name]) for name in names}


async def run(sizes_mb: list[float], repeat: int, baseline: str | None = None) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-offload-"))
    data = tmp / "data"
    data.mkdir()
    servers: dict[str, tuple[str, list[str], str, Any]] = {}
    if (NPM_BIN / "mcp-server-filesystem").exists():
        servers["filesystem read_text_file"] = (
            str(NPM_BIN / "mcp-server-filesystem"),
            [str(data)],
            "read_text_file",
            lambda mb: {"path": str(data / f"{mb}.txt")},
        )
    servers["fixture make_text"] = (
        sys.executable,
        [str(FIXTURE)],
        "make_text",
        lambda mb: {"size": int(mb * 1_000_000)},
    )
    servers["fixture json_records"] = (
        sys.executable,
        [str(FIXTURE)],
        "json_records",
        lambda mb: {"count": records_for(int(mb * 1_000_000))},
    )
    for mb in sizes_mb:
        (data / f"{mb}.txt").write_text(log_text(int(mb * 1_000_000)))

    rows = []
    base_rows: dict[tuple[str, float], float] = {}
    for label, (command, args, tool, make_args) in servers.items():
        configs = {}
        for mode, offload in (("offload", {"reducers": {"pipeline": []}}), ("default", {})):
            cfg = tmp / f"{mode}-{tool}.json"
            cfg.write_text(json.dumps({"mcpServers": {"s": {"command": command, "args": args}}, "offload": offload}))
            configs[mode] = cfg
        async with AsyncExitStack() as stack:
            direct = await open_session(stack, command, args)
            proxies = {
                mode: await open_session(
                    stack, OFFLOAD_MCP, ["serve", "-c", str(cfg), "--ledger", str(tmp / f"{mode}.db")]
                )
                for mode, cfg in configs.items()
            }
            if baseline:
                proxies["baseline"] = await open_session(
                    stack, baseline, ["serve", "-c", str(configs["default"]), "--ledger", str(tmp / "baseline.db")]
                )
            for mb in sizes_mb:
                got = await timed({"direct": direct, **proxies}, tool, make_args(mb), repeat)
                rows.append((label, mb, *got["direct"], *got["offload"], *got["default"]))
                if baseline:
                    base_rows[(label, mb)] = got["baseline"][0]

    print(f"median of {repeat} calls each; client = Python SDK ClientSession over stdio\n")
    print(
        f"{'server/tool':28} {'size':>6} {'direct':>9} {'proxy stub':>11} {'ratio':>6} {'proxy default':>14} {'ratio':>6}  chars received (direct / stub / default)"
    )
    for label, mb, d, ds, o, os_, f, fs in rows:
        print(
            f"{label:28} {mb:5g}M {d * 1e3:7.1f}ms {o * 1e3:9.1f}ms {o / d:5.2f}x {f * 1e3:12.1f}ms {f / d:5.2f}x  {ds:,} / {os_:,} / {fs:,}"
        )
    if baseline:
        print(f"\nbaseline: the default configuration through {baseline}, in turn with the paths above")
        print(
            f"{'server/tool':28} {'size':>6} {'baseline':>9} {'ratio':>6} {'default':>9} {'ratio':>6}  default/baseline"
        )
        for label, mb, d, _, _, _, f, _ in rows:
            b = base_rows[(label, mb)]
            print(f"{label:28} {mb:5g}M {b * 1e3:7.1f}ms {b / d:5.2f}x {f * 1e3:7.1f}ms {f / d:5.2f}x  {f / b:5.2f}")
    ratios = [max(o, f) / d for _, mb, d, _, o, _, f, _ in rows if mb >= 1]
    if not ratios:
        print("\ntarget applies at >= 1 MB: no such size was run")
        return
    worst = max(ratios)
    print(
        f"\ntarget: stub through the proxy, reducers off and default config, no slower than the full result "
        f"directly (ratio <= 1.0 at >= 1 MB): {'met' if worst <= 1.0 else 'NOT met'} (worst {worst:.2f}x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=float, nargs="+", default=[1, 10], help="result sizes in MB (10^6 chars)")
    parser.add_argument("--repeat", type=int, default=5, help="timed calls per path and size")
    parser.add_argument(
        "--baseline",
        metavar="OFFLOAD_MCP",
        help="another offload-mcp executable (e.g. main's) run with the default config as a fourth path",
    )
    args = parser.parse_args()
    anyio.run(run, args.sizes, args.repeat, args.baseline)


if __name__ == "__main__":
    main()
