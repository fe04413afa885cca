"""How `offload-mcp serve` starts its stdio servers: once each, early, declaring the client's capabilities.

Started before the SDK's import (downstream/spawn.py EarlyStarts): the first session of each server takes
the process started early, a process nobody claims is stopped, and what cannot start early is left to its
session, which says why as before. In process against the real fixture server, and through `offload-mcp
serve`, where each server's one process must be the one started early. And a stdio client's declaration
reaches the servers' first sessions (Relay.first_declaration), so none is started a second time for it."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import mcp_types as types
import pytest
from mcp.client.stdio import stdio_client

from offload_mcp.config import Config
from offload_mcp.downstream.pool import DownstreamPool
from offload_mcp.downstream.settings import StdioServer
from offload_mcp.downstream.spawn import EarlyStarts, Launch
from offload_mcp.relay.capabilities import DeclaringClientSession
from support.processes import alive, child_pids
from support.proxy import running_proxy, stdio_params, text_of
from support.servers import ROOT, fixture_entry, python_entry, write_config

RELAY_SERVER = str(ROOT / "tests" / "fixtures" / "relay_server.py")

pytestmark = pytest.mark.anyio


async def test_the_first_session_serves_over_the_process_started_early_and_a_restart_spawns_its_own() -> None:
    config = Config.model_validate({"mcpServers": {"fx": fixture_entry()}})
    async with EarlyStarts(config.mcpServers) as early:
        (early_pid,) = early.pids.values()
        assert alive(early_pid)
        async with DownstreamPool(config.mcpServers, config.offload.downstream, early=early) as pool:
            server = pool.servers["fx"]
            assert server.record is not None and server.record.pid == early_pid
            assert early.pids == {}  # claimed: exit will not stop it under the session
            echoed = await server.call_tool("echo", {"text": "early"})
            assert echoed.content[0].text == "early"  # type: ignore[union-attr]
            os.kill(early_pid, 9)
            with anyio.fail_after(10):
                await server.record.exited.wait()
            echoed = await server.call_tool("echo", {"text": "again"})  # restarts it: a process of its own
            assert echoed.content[0].text == "again"  # type: ignore[union-attr]
            assert server.record.pid != early_pid and server.starts == 2
        assert not alive(server.record.pid)


async def test_a_process_nobody_claims_is_stopped_on_exit() -> None:
    config = Config.model_validate({"mcpServers": {"a": fixture_entry(), "b": fixture_entry()}})
    async with EarlyStarts(config.mcpServers) as early:
        pids = early.pids
        assert sorted(pids) == ["a", "b"] and all(alive(pid) for pid in pids.values())
    assert not any(alive(pid) for pid in pids.values()), "an unclaimed early process outlived the proxy"


async def test_start_up_cancelled_half_way_stops_what_it_had_started() -> None:
    servers = {f"s{i}": StdioServer(command="sleep", args=["60"]) for i in range(40)}
    early = EarlyStarts(servers)
    started: list[int] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(early.__aenter__)
        while not early.pids:
            await anyio.lowlevel.checkpoint()
        started.extend(early.pids.values())
        tg.cancel_scope.cancel()
    assert 0 < len(started) < len(servers) and early.pids == {}
    assert not any(alive(pid) for pid in started), "a process started before the cancel outlived it"


async def test_a_different_launch_gets_no_early_process_and_the_early_one_is_stopped() -> None:
    entry = StdioServer.model_validate(fixture_entry())
    async with EarlyStarts({"fx": entry}) as early:
        (pid,) = early.pids.values()
        other = Launch.of(entry.command, [*entry.args, "--start-delay", "0"], entry.env, entry.cwd)
        assert await early.claim("fx", other) is None
        assert not alive(pid) and early.pids == {}
        same = Launch.of(entry.command, entry.args, entry.env, entry.cwd)
        assert await early.claim("fx", same) is None  # once only: gone with the mismatch


async def test_a_server_that_cannot_start_early_is_left_to_its_session_which_says_why(tmp_path: Path) -> None:
    config = Config.model_validate(
        {"mcpServers": {"ghost": {"command": str(tmp_path / "no-such-server")}, "fx": fixture_entry()}}
    )
    async with EarlyStarts(config.mcpServers) as early:
        assert list(early.pids) == ["fx"]
        async with DownstreamPool(config.mcpServers, config.offload.downstream, early=early) as pool:
            ghost = pool.servers["ghost"]
            assert ghost.state == "failed" and ghost.failure is not None
            assert f"command not found: {tmp_path / 'no-such-server'}" in ghost.failure
            assert pool.servers["fx"].state == "ready"


def test_through_serve_each_server_runs_once_in_the_process_started_before_the_sdk_import(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"fx": fixture_entry(), "gx": fixture_entry("--start-delay", "0.5")})
    with running_proxy(
        ["-c", str(config), "--ledger", str(tmp_path / "l.db")], log_level="debug", prewarm=False
    ) as proxy:
        deadline = time.monotonic() + 60
        while sum("ready:" in line and "tools" in line for line in proxy.log) < 2:
            assert time.monotonic() < deadline, "".join(proxy.log)
            time.sleep(0.05)
        early = {
            m.group(1): int(m.group(2))
            for line in proxy.log
            if (m := re.search(r"server '(\w+)' started before the SDK import \(pid (\d+)\)", line))
        }
        assert sorted(early) == ["fx", "gx"], "".join(proxy.log)
        # One process per server, and it is the one started early: the session spawned no second one.
        assert sorted(child_pids(proxy.pid)) == sorted(early.values()), "".join(proxy.log)


@pytest.mark.filterwarnings("ignore:The roots capability is deprecated")  # a handshake-era client, on purpose
async def test_a_client_declaring_roots_and_elicitation_gets_each_server_started_once(tmp_path: Path) -> None:
    # Claude Code declares roots and elicitation. A server's first session used to declare nothing (it began
    # before the client's initialize was read) and was reconnected when the declaration came: two starts.
    declared = types.ClientCapabilities(
        elicitation=types.ElicitationCapability(form=types.FormElicitationCapability()), roots=types.RootsCapability()
    )
    servers = {"relay": python_entry(RELAY_SERVER), "fx": fixture_entry()}
    config = write_config(tmp_path, servers)
    params = stdio_params(["-c", str(config), "--ledger", str(tmp_path / "l.db"), "--log-level", "info"], None)
    log_path = tmp_path / "proxy.log"

    async def roots(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri="file:///work")])

    with anyio.fail_after(60), log_path.open("w") as log:
        async with stdio_client(params, errlog=log) as (read, write):
            async with DeclaringClientSession(read, write, declared=declared, list_roots_callback=roots) as s:
                await s.initialize()
                names = {tool.name for tool in (await s.list_tools()).tools}
                assert {"declared", "roots", "echo"} <= names
                got = json.loads(text_of(await s.call_tool("declared", {})))
                assert got == {"elicitation": {"form": {}}, "roots": {}}
                assert text_of(await s.call_tool("roots", {})) == "file:///work"
    lines = log_path.read_text()
    assert lines.count("server 'relay' ready:") == 1 and lines.count("server 'fx' ready:") == 1, lines
    assert "reconnecting" not in lines, lines
