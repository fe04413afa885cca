"""What one proxy hop costs: small tool calls direct vs through a bare SDK proxy vs through offload-mcp.

    python bench/bench_hop_latency.py [--calls 300] [--warmup 30] [--compare TREE]

All three paths call the same fixture server's `echo` tool (a ~40-byte
result, so shaping has nothing to cut and the hop itself is measured) over
stdio with the SDK's ClientSession, in one run, alternating rounds so machine
noise hits all three alike. offload-mcp runs with its default config (ledger
in a temporary directory). Prints median and p99 per path, the time each
proxy adds to a direct call, and the ratios proxied/direct.

`--compare TREE` adds a fourth path, last in each round: offload-mcp run from
another source tree (e.g. `git archive main | tar -x -C /tmp/before`) with this
environment's Python, so a change is measured before and after in one run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = [sys.executable, str(ROOT / "tests" / "fixtures" / "fixture_server.py")]
BARE = [sys.executable, str(ROOT / "bench" / "bare_proxy.py"), "--"]
OFFLOAD = [str(Path(sys.executable).parent / "offload-mcp"), "serve", "--"]


async def _open(stack: AsyncExitStack, command: list[str], env: dict[str, str]) -> ClientSession:
    params = StdioServerParameters(command=command[0], args=command[1:], env=env)
    read, write = await stack.enter_async_context(stdio_client(params, errlog=open(os.devnull, "w")))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    return session


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


async def measure(calls: int, warmup: int, compare: Path | None = None) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory() as state:
        env = {**os.environ, "XDG_STATE_HOME": state}
        paths = {"direct": FIXTURE, "bare SDK proxy": BARE + FIXTURE, "offload-mcp": OFFLOAD + FIXTURE}
        envs = dict.fromkeys(paths, env)
        if compare is not None:
            name = f"offload-mcp {compare.name}"
            paths[name] = [sys.executable, "-m", "offload_mcp.cli", "serve", "--", *FIXTURE]
            envs[name] = {**env, "PYTHONPATH": str(compare / "src")}
        async with AsyncExitStack() as stack:
            sessions = {name: await _open(stack, cmd, envs[name]) for name, cmd in paths.items()}
            samples: dict[str, list[float]] = {name: [] for name in paths}
            args = {"text": "a small result: forty bytes of text....."}
            for session in sessions.values():
                for _ in range(warmup):
                    await session.call_tool("echo", args)
            for _ in range(calls):
                for name, session in sessions.items():
                    start = time.perf_counter()
                    result = await session.call_tool("echo", args)
                    samples[name].append((time.perf_counter() - start) * 1000)
                    assert not result.is_error
            return samples


def report(samples: dict[str, list[float]]) -> str:
    direct = statistics.median(samples["direct"])
    direct_p99 = _pct(samples["direct"], 0.99)
    lines = [f"{'path':<22} {'median ms':>10} {'p99 ms':>8} {'added ms':>9} {'ratio':>6}"]
    for name, values in samples.items():
        med, p99 = statistics.median(values), _pct(values, 0.99)
        lines.append(f"{name:<22} {med:>10.3f} {p99:>8.3f} {med - direct:>9.3f} {med / direct:>6.2f}")
    bare = statistics.median(samples["bare SDK proxy"]) - direct
    for name in [n for n in samples if n.startswith("offload-mcp")]:
        ours = statistics.median(samples[name]) - direct
        lines.append(
            f"{name} hop / bare SDK hop: {ours / bare:.2f} (median added latency; p99 direct {direct_p99:.3f} ms)"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--compare", type=Path, metavar="TREE", help="Also run offload-mcp from this source tree.")
    opts = parser.parse_args()
    samples = anyio.run(measure, opts.calls, opts.warmup, opts.compare)
    print(f"{opts.calls} calls per path, echo of a 40-byte text, stdio, one run, rounds interleaved")
    print(report(samples))


if __name__ == "__main__":
    main()
