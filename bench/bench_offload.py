"""Time for a client to get a large result directly vs the stub through the proxy, side by side in one run.

    python bench/bench_offload.py                 # 1 MB and 10 MB, as many calls as fit 3 s each
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
The three paths take turns call by call, so the machine's load weighs on each alike. How many turns:
`--repeat`, or by default as many as fit `--seconds` (3 s) per server and size, from 5 to 60: a 1 MB
call takes ~15 ms, and one call's time strays +-15% from the next on these shared 2-core machines,
so a 1 MB size gets ~45 turns and a 10 MB one the 5 its seconds allow. Runs still differ, as the
machine does: the default config's 1 MB make_text ratio read 0.91-1.07 over six runs of 5 turns,
0.87-1.02 over seven of 40-55, and 0.89-1.04 over eleven of 42-60 on a slower machine (direct
14-18 ms); `offload_timeline.py` shows where the proxy's part of such a call goes. Beside each
ratio, the middle half (quartiles) of the per-turn ratios, each turn's path against its own direct
call: how far one turn strays from the median.
With `--baseline OFFLOAD_MCP` a fourth path, `baseline`, runs the default configuration through
another installed offload-mcp (e.g. main's), taking turns with the others: a change measured before
and after in one run, under the same load. Reports the median per path and the ratio to direct. Target (issue 12):
the default configuration's ratio <= 1.0 at 1 MB and up (the client parses a 1 KB stub instead of the whole
result); the reducers-off path's worst ratio is printed beside it.
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


MIN_CALLS, MAX_CALLS = 5, 60


def calls_for(seconds: float, call_seconds: float, paths: int) -> int:
    """Turns that fit `seconds` when each path's call takes about `call_seconds`, from MIN_CALLS to MAX_CALLS."""
    return max(MIN_CALLS, min(MAX_CALLS, int(seconds / max(call_seconds * paths, 1e-6))))


class Timing:
    """One path's calls at one size: median time, chars received, and per-turn ratios to the direct call."""

    def __init__(self, times: list[float], chars: int, direct: list[float]) -> None:
        self.median = statistics.median(times)
        self.chars = chars
        self.calls = len(times)
        paired = [t / d for t, d in zip(times, direct, strict=True)]
        self.paired_quartiles = statistics.quantiles(paired, n=4)[::2] if len(paired) > 1 else paired * 2

    def ratio(self, direct: Timing) -> str:
        low, high = self.paired_quartiles
        return f"{self.median / direct.median:5.2f}x [{low:.2f}-{high:.2f}]"


async def timed(
    sessions: dict[str, Any], tool: str, args: dict[str, Any], repeat: int | None, seconds: float
) -> dict[str, Timing]:
    """Each path's Timing. The paths take turns call by call (the order rotating), so a change in the
    machine's load while a size runs weighs on every path alike, not on one block. Two warm-up calls
    each (the first one through the proxy also opens the ledger); without `repeat`, the direct path's
    second warm-up call sets how many turns fit `seconds`."""
    names = list(sessions)
    warm: dict[str, float] = {}
    for name, session in sessions.items():
        for _ in range(2):
            started = time.perf_counter()
            await session.call_tool(tool, args)
            warm[name] = time.perf_counter() - started
    turns = repeat or calls_for(seconds, warm["direct"], len(names))
    times: dict[str, list[float]] = {name: [] for name in names}
    sizes: dict[str, int] = {}
    for i in range(turns):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            started = time.perf_counter()
            result = await sessions[name].call_tool(tool, args)
            times[name].append(time.perf_counter() - started)
            assert not result.is_error, result
            sizes[name] = sum(len(getattr(b, "text", "")) for b in result.content)
            # Freed here, between the timers: kept until the next assignment, a direct call's 1 MB result
            # was freed inside the next path's timing (~0.1 ms, up to 0.2), and a proxy path follows direct.
            del result
    return {name: Timing(times[name], sizes[name], times["direct"]) for name in names}


async def run(sizes_mb: list[float], repeat: int | None, seconds: float, baseline: str | None = None) -> None:
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

    rows: list[tuple[str, float, dict[str, Timing]]] = []
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
                rows.append(
                    (label, mb, await timed({"direct": direct, **proxies}, tool, make_args(mb), repeat, seconds))
                )

    turns = f"{repeat} calls" if repeat else f"as many calls as fit {seconds:g} s, {MIN_CALLS}-{MAX_CALLS}"
    print(f"median per path of {turns} (the paths taking turns); client = Python SDK ClientSession over stdio")
    print("ratio: median / direct median, [the per-turn ratios' quartiles]\n")
    print(
        f"{'server/tool':28} {'size':>6} {'calls':>5} {'direct':>9} {'proxy stub':>11} {'ratio':>18} "
        f"{'proxy default':>14} {'ratio':>18}  chars received (direct / stub / default)"
    )
    for label, mb, got in rows:
        d, o, f = got["direct"], got["offload"], got["default"]
        print(
            f"{label:28} {mb:5g}M {d.calls:5} {d.median * 1e3:7.1f}ms {o.median * 1e3:9.1f}ms {o.ratio(d):>18} "
            f"{f.median * 1e3:12.1f}ms {f.ratio(d):>18}  {d.chars:,} / {o.chars:,} / {f.chars:,}"
        )
    if baseline:
        print(f"\nbaseline: the default configuration through {baseline}, in turn with the paths above")
        print(
            f"{'server/tool':28} {'size':>6} {'baseline':>9} {'ratio':>18} {'default':>9} {'ratio':>18}  default/baseline"
        )
        for label, mb, got in rows:
            d, b, f = got["direct"], got["baseline"], got["default"]
            print(
                f"{label:28} {mb:5g}M {b.median * 1e3:7.1f}ms {b.ratio(d):>18} {f.median * 1e3:7.1f}ms "
                f"{f.ratio(d):>18}  {f.median / b.median:5.2f}"
            )
    default = [got["default"].median / got["direct"].median for _, mb, got in rows if mb >= 1]
    if not default:
        print("\ntarget applies at >= 1 MB: no such size was run")
        return
    reducers_off = max(got["offload"].median / got["direct"].median for _, mb, got in rows if mb >= 1)
    worst = max(default)
    print(
        f"\ntarget (issue 12): the default configuration's stub no slower than the full result directly, ratio <= 1.0 "
        f"at >= 1 MB: {'met' if worst <= 1.0 else 'NOT met'} (worst {worst:.2f}x); with reducers off, worst "
        f"{reducers_off:.2f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=float, nargs="+", default=[1, 10], help="result sizes in MB (10^6 chars)")
    parser.add_argument(
        "--repeat",
        type=int,
        help=f"timed calls per path and size (default: as many as fit --seconds, {MIN_CALLS}-{MAX_CALLS})",
    )
    parser.add_argument(
        "--seconds", type=float, default=3.0, help="time for the calls of one server and size, all paths (default 3)"
    )
    parser.add_argument(
        "--baseline",
        metavar="OFFLOAD_MCP",
        help="another offload-mcp executable (e.g. main's) run with the default config as a fourth path",
    )
    args = parser.parse_args()
    anyio.run(run, args.sizes, args.repeat, args.seconds, args.baseline)


if __name__ == "__main__":
    main()
