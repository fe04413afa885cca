"""Time from starting a server to its first tools/list answer: the fixture server directly vs through the proxy.

    python bench/bench_startup.py                      # 8 rounds, one wrapped server
    python bench/bench_startup.py --servers 3 --rounds 12
    python bench/bench_startup.py --baseline /tmp/before/.venv/bin/offload-mcp   # before/after in one run

What a client waits for before its model sees any tool: spawn, initialize, the first tools/list. Paths,
taking turns round by round so the machine's load weighs on each alike:

- direct: the client starts the test fixture server itself (`--servers` of them, one session each, side by
  side, as a client that lists them in its own config does);
- proxy: the client starts `offload-mcp serve` wrapping those servers (default config, ledger in a
  temporary directory);
- baseline (with `--baseline OFFLOAD_MCP`): the same through another installed offload-mcp.

Each proxied path runs twice: with a client that declares nothing, and with one that declares roots and
form elicitation, as Claude Code does. Until a wrapped server's first session waited for the client's
declaration, that second client had every server started twice (the first session declared nothing and
was reconnected); `starts` counts the servers' processes per round (the fixture's `--record-start`).
Prints the median and quartiles per path, its ratio to direct, and the starts per round.
"""

from __future__ import annotations

import argparse
import json
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
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = str(ROOT / "tests" / "fixtures" / "fixture_server.py")
OFFLOAD_MCP = str(Path(sys.executable).parent / "offload-mcp")
DECLARED = types.ClientCapabilities(
    elicitation=types.ElicitationCapability(form=types.FormElicitationCapability()), roots=types.RootsCapability()
)


async def _roots(context: Any) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[types.Root(uri=f"file://{ROOT}")])


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("OFFLOAD_MCP")}


async def _first_list(params: StdioServerParameters, declaring: bool) -> float:
    """Seconds from spawn to the first tools/list answer over one session."""
    from offload_mcp.relay.capabilities import DeclaringClientSession

    started = time.perf_counter()
    async with AsyncExitStack() as stack:
        read, write = await stack.enter_async_context(stdio_client(params, errlog=open(os.devnull, "w")))
        if declaring:
            session: ClientSession = DeclaringClientSession(read, write, declared=DECLARED, list_roots_callback=_roots)
        else:
            session = ClientSession(read, write)
        await stack.enter_async_context(session)
        await session.initialize()
        tools = (await session.list_tools()).tools
        took = time.perf_counter() - started
    assert tools, "no tools listed"
    return took


async def _direct(servers: int, starts: Path) -> float:
    """All servers side by side, as a client starts the ones in its config: until the last lists its tools."""
    took: list[float] = []
    params = StdioServerParameters(command=sys.executable, args=[FIXTURE, "--record-start", str(starts)], env=_env())

    async def one() -> None:
        took.append(await _first_list(params, declaring=False))

    async with anyio.create_task_group() as tg:
        for _ in range(servers):
            tg.start_soon(one)
    return max(took)


async def _proxied(exe: str, servers: int, tmp: Path, starts: Path, declaring: bool, turn: int) -> float:
    entry = {"command": sys.executable, "args": [FIXTURE, "--record-start", str(starts)]}
    config = tmp / f"config-{turn}.json"
    config.write_text(json.dumps({"mcpServers": {f"s{i}": entry for i in range(servers)}}))
    params = StdioServerParameters(
        command=exe, args=["serve", "-c", str(config), "--ledger", str(tmp / f"ledger-{turn}.db")], env=_env()
    )
    return await _first_list(params, declaring)


def _quartiles(values: list[float]) -> tuple[float, float]:
    if len(values) < 4:
        return min(values), max(values)
    q = statistics.quantiles(values, n=4)
    return q[0], q[2]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--servers", type=int, default=1, help="wrapped servers (default 1)")
    parser.add_argument("--baseline", default="", help="another offload-mcp executable, measured in the same rounds")
    opts = parser.parse_args()
    paths: list[tuple[str, str, bool]] = [("proxy", OFFLOAD_MCP, False), ("proxy, declaring", OFFLOAD_MCP, True)]
    if opts.baseline:
        paths += [("baseline", opts.baseline, False), ("baseline, declaring", opts.baseline, True)]
    times: dict[str, list[float]] = {"direct": [], **{name: [] for name, _, _ in paths}}
    starts: dict[str, list[int]] = {name: [] for name in times}
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp_dir:
        tmp = Path(tmp_dir)
        turn = 0
        for _ in range(opts.rounds):
            for name in times:
                turn += 1
                record = tmp / f"starts-{turn}.txt"
                record.touch()
                if name == "direct":
                    took = await _direct(opts.servers, record)
                else:
                    exe, declaring = next((e, d) for n, e, d in paths if n == name)
                    took = await _proxied(exe, opts.servers, tmp, record, declaring, turn)
                times[name].append(took)
                starts[name].append(len(record.read_text().split()))
    direct = statistics.median(times["direct"])
    print(f"first tools/list after spawn, {opts.servers} fixture server(s), {opts.rounds} rounds (median, quartiles)")
    for name, values in times.items():
        low, high = _quartiles(values)
        median = statistics.median(values)
        per_round = statistics.median(starts[name])
        print(
            f"  {name:22} {median:6.2f} s  [{low:5.2f}-{high:5.2f}]  x{median / direct:4.2f} of direct"
            f"  server starts per round {per_round:g}"
        )


if __name__ == "__main__":
    anyio.run(main)
