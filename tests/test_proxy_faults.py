"""Faults and several servers: the proxy stays up and answers clearly."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client

from support.proxy import OFFLOAD_MCP, proxy_env, proxy_session, text_of
from support.servers import PYTHON, fixture_entry, write_config
from support.zygote import prewarmed


async def _wait_for(path: Path, needle: str, seconds: float = 10) -> str:
    with anyio.move_on_after(seconds):
        while needle not in path.read_text():
            await anyio.sleep(0.05)
    return path.read_text()


async def test_a_server_that_fails_to_start_is_reported_and_the_others_serve(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"good": fixture_entry(), "broken": fixture_entry("--fail-at-start")})
    log = tmp_path / "proxy.log"
    with log.open("w") as errlog:
        from support.proxy import stdio_params

        async with stdio_client(stdio_params(["-c", str(config)], None), errlog=errlog) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                names = [t.name for t in (await s.list_tools()).tools]
                assert "echo" in names and "broken__echo" not in names
                assert text_of(await s.call_tool("echo", {"text": "still here"})) == "still here"
                unknown = await s.call_tool("broken_tool", {})
                assert unknown.is_error and "broken (server 'broken'" in text_of(unknown)
    text = log.read_text()
    assert "server 'broken'" in text and "fixture_server.py --fail-at-start" in text
    assert "refusing to start (--fail-at-start)" in text and "exited with code 3" in text


async def test_a_server_that_failed_to_start_is_retried_in_the_background(tmp_path: Path) -> None:
    import mcp_types as types

    marker = tmp_path / "started-once"
    config = write_config(
        tmp_path,
        {"good": fixture_entry(), "late": fixture_entry("--prefix", "late_", "--fail-first-start", str(marker))},
        {"downstream": {"restart_backoff_s": 0.2}},
    )
    changed = [anyio.Event()]

    async def handler(message: object) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed[-1].set()

    async with proxy_session(["-c", str(config)], message_handler=handler) as s:
        names = [t.name for t in (await s.list_tools()).tools]
        assert "late_echo" not in names and marker.exists()
        # `good` announced that it joined before the first listing was answered; count only what follows.
        changed.append(anyio.Event())
        with anyio.fail_after(30):
            while "late_echo" not in names:
                await anyio.sleep(0.3)
                names = [t.name for t in (await s.list_tools()).tools]  # each listing retries a due server
        assert changed[-1].is_set()
        assert text_of(await s.call_tool("late_echo", {"text": "back"})) == "back"


async def test_missing_command_and_slow_start_are_reported(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        {
            "good": fixture_entry(),
            "ghost": {"command": "/nonexistent/mcp-server-ghost"},
            "spaced": {"command": f"{PYTHON} -m mcp_server_spaced"},
            "home": {"command": "~/bin/mcp-server-home"},
            "nowhere": fixture_entry(cwd=str(tmp_path / "gone")),
            "filed": fixture_entry(cwd=str(tmp_path / "proxy.log")),
            "slow": fixture_entry("--start-delay", "30"),
        },
        {"downstream": {"startup_timeout_s": 6}},
    )
    log = tmp_path / "proxy.log"
    with log.open("w") as errlog:
        from support.proxy import stdio_params

        with anyio.fail_after(30):
            async with stdio_client(stdio_params(["-c", str(config)], None), errlog=errlog) as (read, write):
                async with ClientSession(read, write) as s:
                    await s.initialize()
                    assert "echo" in [t.name for t in (await s.list_tools()).tools]
    text = log.read_text()
    assert "server 'ghost' (/nonexistent/mcp-server-ghost) failed to start: command not found" in text
    # What a shell would have done for the user is said: a whole command line in `command`, a `~`.
    assert f"command not found: {PYTHON} -m mcp_server_spaced (no shell splits it: `command` '{PYTHON}'" in text
    assert "command not found: ~/bin/mcp-server-home (no shell expands `~`: give the full path)" in text
    # A missing or wrong working directory is named as such, not as a missing command (it was).
    assert f"failed to start: working directory not found: {tmp_path / 'gone'}" in text
    assert f"failed to start: working directory is not a directory: {tmp_path / 'proxy.log'}" in text
    assert "server 'slow'" in text and "did not finish starting within 6s" in text


async def test_a_server_that_dies_mid_call_gives_a_clear_error_then_is_restarted() -> None:
    from support.servers import fixture_cmd

    async with proxy_session(["--name", "fx", "--", *fixture_cmd()]) as s:
        first_pid = text_of(await s.call_tool("pid", {}))
        crashed = await s.call_tool("crash", {"code": 9})
        assert crashed.is_error
        message = text_of(crashed)
        assert "server 'fx' died during the call to 'crash'" in message
        assert "exited with code 9" in message and "crashing" in message
        again = await s.call_tool("pid", {})
        assert not again.is_error and text_of(again) != first_pid


async def test_a_server_that_exits_between_calls_is_restarted_transparently() -> None:
    from support.servers import fixture_cmd

    async with proxy_session(["--name", "fx", "--", *fixture_cmd("--exit-after", "1")]) as s:
        assert text_of(await s.call_tool("echo", {"text": "one"})) == "one"
        await anyio.sleep(0.5)  # the fixture exits 50 ms after answering
        second = await s.call_tool("echo", {"text": "two"})
        assert not second.is_error and text_of(second) == "two"


async def test_upstream_cancel_and_timeout_both_cancel_the_downstream_call(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"fx": fixture_entry()}, {"downstream": {"call_timeout_s": 1.5}})
    log = tmp_path / "proxy.log"
    with log.open("w") as errlog:
        from support.proxy import stdio_params

        async with stdio_client(stdio_params(["-c", str(config), "--log-level", "debug"], None), errlog=errlog) as (
            read,
            write,
        ):
            async with ClientSession(read, write) as s:
                await s.initialize()
                pid = text_of(await s.call_tool("pid", {}))
                # 1. The client gives up: notifications/cancelled travels through to the server.
                with anyio.move_on_after(0.5):
                    await s.call_tool("sleep", {"seconds": 30})
                assert "stderr: cancelled" in await _wait_for(log, "stderr: cancelled")
                assert text_of(await s.call_tool("echo", {"text": "alive"})) == "alive"
                # 2. The proxy gives up at call_timeout_s: an isError result, the server's call cancelled.
                before = log.read_text().count("stderr: cancelled")
                with anyio.fail_after(15):
                    result = await s.call_tool("sleep", {"seconds": 30})
                assert result.is_error
                assert "'sleep' on server 'fx' did not answer within 1.5s" in text_of(result)
                with anyio.move_on_after(10):
                    while log.read_text().count("stderr: cancelled") == before:
                        await anyio.sleep(0.05)
                assert log.read_text().count("stderr: cancelled") == before + 1
                # The same healthy process serves on.
                assert text_of(await s.call_tool("pid", {})) == pid


async def test_two_servers_with_colliding_names_are_prefixed_and_routed(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        {"alpha": fixture_entry(), "beta": fixture_entry(), "gamma": fixture_entry("--prefix", "g_")},
    )
    async with proxy_session(["-c", str(config)]) as s:
        names = [t.name for t in (await s.list_tools()).tools]
        assert names[:2] == ["alpha__echo", "alpha__make_text"]
        assert "beta__echo" in names and "g_echo" in names and "echo" not in names
        assert names.index("alpha__pid") < names.index("beta__echo") < names.index("g_echo")
        pids = {text_of(await s.call_tool(n, {})) for n in ("alpha__pid", "beta__pid", "g_pid")}
        assert len(pids) == 3
        assert text_of(await s.call_tool("beta__echo", {"text": "b"})) == "b"


async def test_prefix_always_prefixes_every_tool(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"solo": fixture_entry()}, {"catalog": {"prefix": "always"}})
    async with proxy_session(["-c", str(config)]) as s:
        names = [t.name for t in (await s.list_tools()).tools]
        assert names[0] == "solo__echo" and names[-2:] == ["recall_tool_result", "context_guru_expand"]
        assert text_of(await s.call_tool("solo__echo", {"text": "p"})) == "p"


def test_prefix_never_refuses_a_collision(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"a": fixture_entry(), "b": fixture_entry()}, {"catalog": {"prefix": "never"}})
    done = subprocess.run(
        prewarmed([OFFLOAD_MCP, "serve", "-c", str(config)]),
        capture_output=True,
        text=True,
        env=proxy_env(),
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert "tool names collide" in done.stderr and "`echo` from a, b" in done.stderr


def test_catalog_naming_is_deterministic_and_independent_of_start_order() -> None:
    import mcp_types as types

    from offload_mcp.catalog.catalog import build_catalog
    from offload_mcp.catalog.settings import CatalogSettings

    def tool(name: str) -> Any:
        return types.Tool(name=name, input_schema={"type": "object"})

    servers = {
        "git": [tool("status"), tool("log")],
        "my.fs": [tool("status"), tool("read")],
        "x": [tool("recall_tool_result")],
    }
    catalog = build_catalog(servers, CatalogSettings(), reserved=["recall_tool_result"])
    assert [e.name for e in catalog.entries] == ["git__status", "log", "my_fs__status", "read", "x__recall_tool_result"]
    assert catalog.lookup("my_fs__status").downstream_name == "status"
    assert catalog.lookup("my_fs__status").server == "my.fs"
    again = build_catalog(dict(servers), CatalogSettings(), reserved=["recall_tool_result"])
    assert [e.tool.model_dump_json() for e in again.entries] == [e.tool.model_dump_json() for e in catalog.entries]
    # A prefixed name that is itself taken gets a numbered suffix.
    tricky = {"a": [tool("t"), tool("b__t")], "b": [tool("t")]}
    assert [e.name for e in build_catalog(tricky, CatalogSettings()).entries] == ["a__t", "b__t", "b__t_2"]


@pytest.mark.parametrize("bad", ["--fail-at-start"])
async def test_only_failing_servers_means_an_empty_but_working_proxy(tmp_path: Path, bad: str) -> None:
    # Issue 11: no silent green. The tool list says no server is serving, and why.
    config = write_config(tmp_path, {"broken": fixture_entry(bad)})
    async with proxy_session(["-c", str(config)]) as s:
        tools = (await s.list_tools()).tools
        assert [t.name for t in tools] == ["recall_tool_result", "context_guru_expand", "offload_mcp_status"]
        assert (
            "NO wrapped MCP server is serving" in tools[-1].description
            and "broken (server 'broken'" in tools[-1].description
        )
        status = await s.call_tool("offload_mcp_status", {})
        assert status.is_error and "Servers not serving: broken (server 'broken'" in text_of(status)


async def test_status_called_by_name_while_one_server_is_down_names_it(tmp_path: Path) -> None:
    # With a server serving, offload_mcp_status is not listed; a model that calls it anyway (an earlier
    # listing, a guess) must not be told that every wrapped server is serving while one is down.
    config = write_config(tmp_path, {"good": fixture_entry(), "broken": fixture_entry("--fail-at-start")})
    async with proxy_session(["-c", str(config)]) as s:
        names = [t.name for t in (await s.list_tools()).tools]
        assert "offload_mcp_status" not in names and any(n.endswith("echo") for n in names)
        status = await s.call_tool("offload_mcp_status", {})
        assert status.is_error and "Servers not serving: broken (server 'broken'" in text_of(status)
        assert "every wrapped server is serving" not in text_of(status)


def test_wrapped_servers_do_not_inherit_offload_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from offload_mcp.downstream.spawn import inherited_environment

    monkeypatch.setenv("OFFLOAD_MCP_AUTH_TOKEN", "s3cret")
    monkeypatch.setenv("SOME_USER_VAR", "kept")
    env = inherited_environment()
    assert "OFFLOAD_MCP_AUTH_TOKEN" not in env and env["SOME_USER_VAR"] == "kept" and "PATH" in env
