"""A downstream that misbehaves in every way we could think of: each gets a clear error or the
untouched result, the other servers keep serving, and a dead server is restarted.

The misbehaving server is tests/fixtures/hostile_server.py (raw JSON-RPC, no SDK), run beside
the well-behaved fixture server behind one real proxy process over stdio.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client

from support.proxy import proxy_session, recall_whole, stdio_params, text_of
from support.servers import ROOT, fixture_entry, python_entry, write_config

HOSTILE = str(ROOT / "tests" / "fixtures" / "hostile_server.py")
sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
import fixture_server  # noqa: E402
import hostile_server  # noqa: E402

from support.servers import fixture_over_http  # noqa: E402


def hostile_entry(*opts: str) -> dict[str, Any]:
    return python_entry(HOSTILE, *opts)


async def _call(s: ClientSession, tool: str, args: dict[str, Any] | None = None, limit: float = 30) -> Any:
    with anyio.fail_after(limit):
        return await s.call_tool(tool, args or {})


async def _assert_good_serves(s: ClientSession) -> None:
    result = await _call(s, "good__echo", {"text": "still serving"})
    assert not result.is_error and text_of(result) == "still serving"


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return write_config(
        tmp_path,
        {"good": fixture_entry(), "bad": hostile_entry()},
        {"downstream": {"call_timeout_s": 2, "restart_backoff_s": 0}},
    )


async def test_malformed_answers_get_clear_errors_and_nothing_else_breaks(config: Path, tmp_path: Path) -> None:
    async with proxy_session(["-c", str(config), "--ledger", str(tmp_path / "l.db")]) as s:
        # Garbage on stdout before a good answer: the line is ignored, the answer arrives untouched.
        garbage = await _call(s, "garbage", {"text": "after garbage"})
        assert not garbage.is_error and text_of(garbage) == "after garbage"

        malformed = await _call(s, "malformed")
        assert malformed.is_error
        assert "server 'bad' returned a malformed result for 'malformed'" in text_of(malformed)

        # Wire-level JSON nested 10,000 deep: the parser's depth limit answers at once, not at the timeout.
        started = time.monotonic()
        deep = await _call(s, "deep", {"depth": 10_000})
        assert deep.is_error and time.monotonic() - started < 2
        message = text_of(deep)
        assert "server 'bad' answered 'deep', but the server's answer could not be used" in message
        assert "recursion limit" in message

        # Non-UTF-8 bytes: decoded with U+FFFD in place of each invalid byte; the valid text is untouched.
        non_utf8 = await _call(s, "non_utf8")
        assert not non_utf8.is_error and text_of(non_utf8) == "caf\ufffd \ufffd\ufffd bytes"

        await _assert_good_serves(s)
        alive = await _call(s, "bad__echo", {"text": "same process"})
        assert text_of(alive) == "same process"


async def _cut_emoji_read_as_u_fffd(
    config: Path, tmp_path: Path, tool: str, size: int, recalled: str, server: str, still: str
) -> None:
    """Through the proxy, `tool` answers "row \\ufffd" inline and, with `size`, is offloaded and recalled as
    `recalled`; `still` (an echo) serves after; `server`'s log says once per message how many were replaced."""
    log = tmp_path / "proxy.log"
    with log.open("w") as errlog:
        params = stdio_params(["-c", str(config), "--ledger", str(tmp_path / "l.db")], None)
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            small = await _call(s, tool)
            assert not small.is_error and text_of(small) == "row \ufffd"
            large = await _call(s, tool, {"size": size})
            assert not large.is_error
            found = re.search(r"trm_[0-9a-f]{16}", text_of(large))
            assert found, text_of(large)[:300]
            assert await recall_whole(s, found.group(0)) == recalled
            assert text_of(await _call(s, still, {"text": "still serving"})) == "still serving"
    warnings = [line for line in log.read_text().splitlines() if "lone UTF-16 surrogate" in line]
    assert [re.sub(r".* WARNING ", "", line) for line in warnings] == [
        f"offload_mcp.downstream.{server}: replaced {n} lone UTF-16 surrogate escape(s) in a message with U+FFFD"
        " (a string cut inside a character?)"
        for n in (1, recalled.count("\ufffd"))
    ]


async def test_lone_surrogate_escapes_are_read_as_u_fffd_inline_offloaded_and_recalled(
    config: Path, tmp_path: Path
) -> None:
    # Node writes `"row \\ud83d"` for a string sliced inside an emoji: the whole answer was an error.
    sent = hostile_server.surrogate_text(500_000)  # a lone high surrogate, then a whole emoji, per line
    recalled = sent.replace(" \ud83d\U0001f600", " \ufffd\U0001f600")
    await _cut_emoji_read_as_u_fffd(config, tmp_path, "lone_surrogates", 500_000, recalled, "bad", "good__echo")


@pytest.mark.parametrize(
    ("transport", "opts"), [("streamable-http", ()), ("streamable-http", ("--json-response",)), ("sse", ())]
)
async def test_a_remote_servers_lone_surrogate_escapes_are_read_as_u_fffd_inline_offloaded_and_recalled(
    tmp_path: Path, transport: str, opts: tuple[str, ...]
) -> None:
    # The SDK's parse refused the whole message: over streamable HTTP the call failed with a -32700 parse
    # error, and over legacy SSE the event was dropped and the call waited out its whole timeout.
    with fixture_over_http(transport, *opts) as url:
        config = write_config(
            tmp_path, {"web": {"url": url, "type": transport}}, {"downstream": {"call_timeout_s": 20}}
        )
        recalled = fixture_server.lone_surrogate_text(400_000, "\ufffd")  # parsed off the loop (> 256 KiB)
        await _cut_emoji_read_as_u_fffd(config, tmp_path, "cut_emoji", 400_000, recalled, "web", "echo")


async def test_deep_text_and_ten_thousand_blocks_lose_nothing(config: Path, tmp_path: Path) -> None:
    async with proxy_session(["-c", str(config), "--ledger", str(tmp_path / "l.db")]) as s:
        depth = 10_000
        original = '{"a":' * depth + "1" + "}" * depth
        deep = await _call(s, "deep_text", {"depth": depth})
        assert not deep.is_error
        shown = text_of(deep)
        markers = re.findall(r"<<cg:([0-9a-f]{16})>>", shown)
        if markers:  # cut: each marker restores an exact piece of the original
            for marker in markers:
                expanded = await _call(s, "context_guru_expand", {"marker": f"<<cg:{marker}>>"})
                assert not expanded.is_error and text_of(expanded) in original
            assert shown.startswith(original[:100]) and shown.rstrip().endswith(original[-100:])
        elif re.search(r"trm_[0-9a-f]{16}", shown):  # offloaded: recall gives back the exact original
            assert await recall_whole(s, re.search(r"trm_[0-9a-f]{16}", shown).group(0)) == original  # type: ignore[union-attr]
        else:
            assert shown == original

        blocks = await _call(s, "many_blocks", {"count": 10_000}, limit=60)
        assert not blocks.is_error
        stub = text_of(blocks)
        found = re.search(r"trm_[0-9a-f]{16}", stub)
        assert found, stub[:300]
        expected = "\n".join(f"block {i}" for i in range(10_000))
        assert await recall_whole(s, found.group(0), max_chars=50_000) == expected
        await _assert_good_serves(s)


async def test_a_100_mb_result_is_refused_by_max_result_bytes_with_a_clear_error(tmp_path: Path) -> None:
    # Default settings: max_result_bytes is 64 MiB.
    config = write_config(tmp_path, {"good": fixture_entry(), "bad": hostile_entry()})
    async with proxy_session(["-c", str(config), "--ledger", str(tmp_path / "l.db")]) as s:
        started = time.monotonic()
        huge = await _call(s, "huge", {"mb": 100}, limit=60)
        elapsed = time.monotonic() - started
        assert huge.is_error
        message = text_of(huge)
        assert "server 'bad' answered 'huge', but the server's answer could not be used" in message
        assert "over offload.downstream.max_result_bytes=67,108,864" in message
        assert elapsed < 30
        # The same server keeps serving: it was not the server's fault to be big, only ours to refuse.
        assert text_of(await _call(s, "bad__echo", {"text": "after huge"})) == "after huge"
        await _assert_good_serves(s)


async def test_a_configured_max_result_bytes_bounds_smaller_results(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"bad": hostile_entry()}, {"downstream": {"max_result_bytes": 200_000}})
    async with proxy_session(["-c", str(config), "--ledger", str(tmp_path / "l.db")]) as s:
        small = await _call(s, "big", {"size": 100_000})
        assert not small.is_error
        too_big = await _call(s, "big", {"size": 300_000})
        assert too_big.is_error and "max_result_bytes=200,000" in text_of(too_big)


async def test_crashes_and_hangs_answer_clearly_and_the_server_restarts(config: Path, tmp_path: Path) -> None:
    async with proxy_session(["-c", str(config), "--ledger", str(tmp_path / "l.db")]) as s:
        first_pid = text_of(await _call(s, "bad__pid"))

        crash = await _call(s, "crash_now")
        assert crash.is_error and "server 'bad' died during the call to 'crash_now'" in text_of(crash)
        assert "exited with code 9" in text_of(crash) and "hostile: crash_now" in text_of(crash)
        await _assert_good_serves(s)
        second_pid = text_of(await _call(s, "bad__pid"))
        assert second_pid != first_pid

        mid = await _call(s, "crash_mid")
        assert mid.is_error and "exited with code 11" in text_of(mid)
        third_pid = text_of(await _call(s, "bad__pid"))
        assert third_pid not in (first_pid, second_pid)

        for tool in ("hang", "garbage_only"):
            started = time.monotonic()
            hung = await _call(s, tool)
            assert hung.is_error and f"'{tool}' on server 'bad' did not answer within 2s" in text_of(hung)
            assert time.monotonic() - started < 10
        # A hang is the call's problem, not the server's: the same process still serves.
        assert text_of(await _call(s, "bad__pid")) == third_pid
        await _assert_good_serves(s)


@pytest.mark.parametrize(
    ("flag", "explains"),
    [
        ("--crash-on-initialize", "exited with code 5"),
        ("--hang-on-initialize", "did not finish starting within 6s"),
        ("--garbage-on-initialize", "did not finish starting within 6s"),
    ],
)
async def test_a_server_failing_during_initialize_is_reported_and_the_others_serve(
    tmp_path: Path, flag: str, explains: str
) -> None:
    config = write_config(
        tmp_path,
        {"good": fixture_entry(), "bad": hostile_entry(flag)},
        {"downstream": {"startup_timeout_s": 6, "call_timeout_s": 3, "restart_backoff_s": 0}},
    )
    log = tmp_path / "proxy.log"
    with log.open("w") as errlog, anyio.fail_after(60):
        async with stdio_client(stdio_params(["-c", str(config)], None), errlog=errlog) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                names = [t.name for t in (await s.list_tools()).tools]
                assert "echo" in names and "hang" not in names
                assert text_of(await _call(s, "echo", {"text": "up"})) == "up"
                unknown = await _call(s, "crash_now")
                assert unknown.is_error and "Servers not serving: bad (server 'bad'" in text_of(unknown)
    text = log.read_text()
    assert "server 'bad'" in text and explains in text


async def test_a_garbage_banner_before_serving_is_tolerated(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"bad": hostile_entry("--garbage-banner")})
    async with proxy_session(["-c", str(config), "--ledger", str(tmp_path / "l.db")]) as s:
        assert text_of(await _call(s, "echo", {"text": "banner ok"})) == "banner ok"


async def test_timeouts_and_cancellations_under_load_leave_no_call_running_downstream(tmp_path: Path) -> None:
    config = write_config(
        tmp_path, {"bad": hostile_entry()}, {"downstream": {"call_timeout_s": 1, "restart_backoff_s": 0}}
    )
    async with proxy_session(["-c", str(config), "--ledger", str(tmp_path / "l.db")]) as s:
        outcomes: dict[str, int] = {"timeout": 0, "cancelled": 0, "ok": 0}

        async def timed_out(i: int) -> None:
            result = await _call(s, "slow", {"seconds": 30, "text": f"t{i}"})
            assert result.is_error and "did not answer within 1s" in text_of(result)
            outcomes["timeout"] += 1

        async def cancelled(i: int) -> None:
            with anyio.move_on_after(0.3):
                await s.call_tool("slow", {"seconds": 30, "text": f"c{i}"})
            outcomes["cancelled"] += 1

        async def quick(i: int) -> None:
            result = await _call(s, "slow", {"seconds": 0.05, "text": f"q{i}"})
            assert text_of(result) == f"q{i}"
            outcomes["ok"] += 1

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for i in range(20):
                    tg.start_soon(timed_out, i)
                    tg.start_soon(cancelled, i)
                    tg.start_soon(quick, i)
        assert outcomes == {"timeout": 20, "cancelled": 20, "ok": 20}

        # Every abandoned call that reached the server was cancelled there: nothing is left running, and
        # only the 20 quick calls ran to their end (an abandoned one sleeps 30 s). Each timed-out call reached
        # it (the SDK arms the timeout once the request is written); one its client gave up on after 0.3 s may
        # not have, and then it ran nowhere. The server counts a call when it reads it, so the poll cannot read
        # 0 before a late call's thread has started (a CI run read 32 cancelled + 20 completed of 60 calls).
        counts: dict[str, int] = {}
        with anyio.fail_after(10):
            while True:
                counts = json.loads(text_of(await s.call_tool("inflight", {})))
                if counts["inflight"] == 0:
                    break
                await anyio.sleep(0.1)
        assert counts["completed"] == 20, counts
        assert counts["cancelled"] == counts["received"] - 20, counts
        assert 40 <= counts["received"] <= 60, counts
