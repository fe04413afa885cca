"""What the proxy adds to a relayed sampling request, beside the direct path.

    python bench/bench_relay.py [--calls 200] [--warmup 20]

Each path calls the `sample` tool of tests/fixtures/relay_server.py over
stdio: the server sends sampling/createMessage mid-call, the client's
sampling callback answers at once, the tool returns the sampled text. So a
call is two round trips (tools/call, and sampling back to the client), and
through the proxy each of them takes one more hop. Paths:

- direct: the SDK's ClientSession straight to the server;
- offload-mcp: the same client through `offload-mcp serve` (handshake era,
  the request relayed mid-call);
- offload-mcp 2026: a 2026-07-28 client (`mcp.Client`) through the proxy,
  where the request becomes an input_required round and the call is retried.

Rounds interleave the paths so machine noise hits all alike. Prints median and
p99 per path, the milliseconds the proxy adds, and the ratio proxied/direct.
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
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parent.parent
SERVER = [sys.executable, str(ROOT / "tests" / "fixtures" / "relay_server.py")]
OFFLOAD = [str(Path(sys.executable).parent / "offload-mcp"), "serve", "--"]


async def sampling(
    context: ClientRequestContext, params: types.CreateMessageRequestParams
) -> types.CreateMessageResult:
    return types.CreateMessageResult(role="assistant", content=types.TextContent(text="ok"), model="bench")


def _params(command: list[str], env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(command=command[0], args=command[1:], env=env)


async def _session(stack: AsyncExitStack, command: list[str], env: dict[str, str]) -> Any:
    read, write = await stack.enter_async_context(stdio_client(_params(command, env), errlog=open(os.devnull, "w")))
    session = await stack.enter_async_context(ClientSession(read, write, sampling_callback=sampling))
    await session.initialize()
    return session


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


async def measure(calls: int, warmup: int) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory() as state:
        env = {**os.environ, "XDG_STATE_HOME": state}
        async with AsyncExitStack() as stack:
            clients = {
                "direct": await _session(stack, SERVER, env),
                "offload-mcp": await _session(stack, OFFLOAD + SERVER, env),
                "offload-mcp 2026": await stack.enter_async_context(
                    Client(_params(OFFLOAD + SERVER, env), mode="2026-07-28", sampling_callback=sampling)
                ),
            }
            samples: dict[str, list[float]] = {name: [] for name in clients}
            for client in clients.values():
                for _ in range(warmup):
                    await client.call_tool("sample", {"prompt": "p"})
            for _ in range(calls):
                for name, client in clients.items():
                    start = time.perf_counter()
                    result = await client.call_tool("sample", {"prompt": "p"})
                    samples[name].append((time.perf_counter() - start) * 1000)
                    assert not result.is_error and result.content[0].text == "ok (model bench)", result
            return samples


def report(samples: dict[str, list[float]]) -> str:
    direct = statistics.median(samples["direct"])
    lines = [f"{'path':<18} {'median ms':>10} {'p99 ms':>8} {'added ms':>9} {'ratio':>6}"]
    for name, values in samples.items():
        med, p99 = statistics.median(values), _pct(values, 0.99)
        lines.append(f"{name:<18} {med:>10.3f} {p99:>8.3f} {med - direct:>9.3f} {med / direct:>6.2f}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    opts = parser.parse_args()
    samples = anyio.run(measure, opts.calls, opts.warmup)
    print(f"{opts.calls} calls per path: a tool call that samples once (stdio, one run, rounds interleaved)")
    print(report(samples))


if __name__ == "__main__":
    main()
