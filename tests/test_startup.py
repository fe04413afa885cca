"""Start-up no client gives up on (issue 11): initialize at once, late servers join, a hung one costs nothing."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client

from support.proxy import running_proxy, stdio_params, text_of
from support.servers import PYTHON, ROOT, fixture_entry, python_entry, write_config
from support.zygote import prewarmed

HOSTILE = str(ROOT / "tests" / "fixtures" / "hostile_server.py")


async def test_initialize_is_immediate_and_late_servers_join_with_list_changed(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        {
            "hung": python_entry(HOSTILE, "--hang-on-initialize"),
            "good": fixture_entry(),
            "late": fixture_entry("--start-delay", "12"),
        },
        # The first listing waits at most 8 s: `late` (12 s) joins afterwards, `hung` never does.
        {"downstream": {"startup_timeout_s": 25, "first_list_wait_s": 8}, "catalog": {"prefix": "always"}},
    )
    changed = [anyio.Event()]

    async def on_message(message: object) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed[-1].set()

    with anyio.fail_after(60):
        async with stdio_client(stdio_params(["-c", str(config), "--ledger", str(tmp_path / "l.db")], None)) as (
            read,
            write,
        ):
            async with ClientSession(read, write, message_handler=on_message) as s:
                started = time.monotonic()
                await s.initialize()
                # Idle machine: ~1 s, nearly all of it importing the MCP SDK. The bound is loose for a shared
                # CI box; the old start-up waited for `hung` up to startup_timeout_s (25 s here).
                assert time.monotonic() - started < 10.0, "initialize must not wait for downstream servers"
                started = time.monotonic()
                names = [t.name for t in (await s.list_tools()).tools]
                waited = time.monotonic() - started
                changed.append(anyio.Event())  # `good` joining during that wait was announced too; wait for the next
                assert (
                    "good__echo" in names
                    and "late__echo" not in names
                    and not any(n.startswith("hung__") for n in names)
                )
                assert waited < 11.0, f"the first listing waits at most first_list_wait_s (took {waited:.1f}s)"
                assert text_of(await s.call_tool("good__echo", {"text": "up"})) == "up"
                await changed[-1].wait()
                names = [t.name for t in (await s.list_tools()).tools]
                assert "late__echo" in names and "offload_mcp_status" not in names
                assert text_of(await s.call_tool("late__echo", {"text": "joined"})) == "joined"
                # A later listing never waits, though `hung` is still starting: a wait would last the whole
                # first_list_wait_s (8 s). How fast it answers: bench/bench_loop_pace.py (listing).
                started = time.monotonic()
                await s.list_tools()
                assert time.monotonic() - started < 4.0, "a later listing waited for a server still starting"
                unknown = await s.call_tool("hung__echo", {})
                assert unknown.is_error and "Still starting (their tools join when ready): hung." in text_of(unknown)


def test_a_server_still_starting_does_not_hold_the_exit(tmp_path: Path) -> None:
    import json
    import subprocess

    from support.proxy import OFFLOAD_MCP, proxy_env

    config = write_config(
        tmp_path,
        {"hung": python_entry(HOSTILE, "--hang-on-initialize")},
        {"downstream": {"startup_timeout_s": 60}},
    )
    proc = subprocess.Popen(
        prewarmed([OFFLOAD_MCP, "serve", "-c", str(config), "--ledger", str(tmp_path / "l.db")]),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=proxy_env(),
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        proc.stdin.write(
            (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}) + "\n").encode()
        )
        proc.stdin.flush()
        assert b'"serverInfo"' in proc.stdout.readline()
        closed = time.monotonic()
        proc.stdin.close()  # how a stdio client ends the session
        assert proc.wait(timeout=30) == 0
        assert time.monotonic() - closed < 20, "exit waited for the hung server's startup_timeout_s (60 s)"
    finally:
        proc.kill()


def test_the_start_up_heap_is_frozen_out_of_the_cyclic_collector(tmp_path: Path) -> None:
    """serve freezes what start-up made (gc.freeze), so the full collections a large JSON answer triggers
    do not walk it again each time (85 -> 16 ms each, commands/serve.py). The console script pauses the
    collector until then (offload_mcp/__main__.py), and serve freezes without collecting first: no full
    collection walks the start-up heap at all (three with the collector on; one, ~0.12 s of CPU, before)."""
    cfg = write_config(tmp_path, {"fx": fixture_entry()})
    with running_proxy(["-c", str(cfg), "--ledger", str(tmp_path / "l.db")], log_level="debug", prewarm=False) as proxy:
        deadline = time.monotonic() + 30
        while not any("start-up objects" in line for line in proxy.log) and time.monotonic() < deadline:
            time.sleep(0.05)
    frozen = [re.search(r"froze ([\d,]+) start-up objects .* after (\d+) full collections", ln) for ln in proxy.log]
    found = [(int(m.group(1).replace(",", "")), int(m.group(2))) for m in frozen if m]
    assert found, "".join(proxy.log[-20:])
    objects, full_collections = found[0]
    assert objects > 20_000
    assert full_collections == 0, "the collector walked the whole heap during start-up"


def test_every_other_command_runs_with_the_collector_on(tmp_path: Path) -> None:
    """The start-up pause ends before any command but serve runs: replay and stats hold whole corpora."""
    probe = (
        "import gc, sys\n"
        "from offload_mcp.__main__ import main\n"
        "sys.argv = ['offload-mcp', 'init', '-o', '-']\n"
        "code = main()\n"
        "print('collector', gc.isenabled(), code, file=sys.stderr)\n"
    )
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    done = subprocess.run([PYTHON, "-c", probe], capture_output=True, text=True, env=env, timeout=60)
    assert "collector True 2" in done.stderr, done.stderr  # init without a client config: exit 2, collector on
