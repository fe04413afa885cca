"""/metrics on the real proxy over HTTP: scraped and parsed after real calls; the per-call log line on stderr."""

from __future__ import annotations

import re
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from mcp import Client

from support.metrics import scrape, total
from support.proxy import running_proxy, text_of
from support.servers import fixture_entry, write_config

# No collapse: a 300K-char text reaches the policy whole and is offloaded (over the client limit).
OFFLOAD = {
    "reducers": {"pipeline": ["dedup", "smartcrush", "linecap"], "smartcrush": {"min_chars": 0}}
}  # the 25K json_array is smartcrush-sized only without its 60K floor


@contextmanager
def proxy_over_http(args: list[str], transport: str) -> Iterator[tuple[str, list[str]]]:
    """`offload-mcp serve --transport T --port 0 --log-level info ARGS`; yields (endpoint URL, stderr lines so far)."""
    with running_proxy(args, transport, log_level="info") as proxy:
        yield proxy.url, proxy.log


async def play(url: str, transport: str) -> None:
    if transport == "sse":
        from mcp.client.sse import sse_client

        target = sse_client(url)
    else:
        target = url
    async with Client(target) as client:
        big = await client.call_tool("make_text", {"size": 300_000})
        mem = re.search(r"trm_[0-9a-f]{16}", text_of(big))
        assert mem, text_of(big)[:500]
        await client.call_tool("json_array", {"count": 500})
        await client.call_tool("echo", {"text": "hi"})
        await client.call_tool("fail", {"message": "boom"})
        recalled = await client.call_tool("recall_tool_result", {"mem_id": mem.group(0), "query": "line 42:"})
        assert "line 42:" in text_of(recalled)
        bad = await client.call_tool("recall_tool_result", {"mem_id": "trm_0000000000000000"})
        assert bad.is_error


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
async def test_metrics_count_real_calls(tmp_path, transport):
    config = write_config(tmp_path, {"fx": fixture_entry()}, OFFLOAD)
    with proxy_over_http(["-c", str(config), "--ledger", str(tmp_path / "l.db")], transport) as (url, stderr):
        base = url.rsplit("/", 1)[0]
        before = scrape(base)
        assert total(before, "offload_mcp_calls_total") == 0
        await play(url, transport)
        # The proxy records a call's metrics just after answering it: give the last one a moment.
        deadline = time.monotonic() + 10
        parsed = scrape(base)
        while total(parsed, "offload_mcp_calls_total") < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
            parsed = scrape(base)

        assert total(parsed, "offload_mcp_calls_total", server="fx") == 4
        assert total(parsed, "offload_mcp_calls_total", tool="fail", outcome="error") == 1
        assert total(parsed, "offload_mcp_results_total", decision="offload", reason="over_client_limit") == 1
        assert total(parsed, "offload_mcp_results_total", decision="reduce") == 1
        assert total(parsed, "offload_mcp_reducer_events_total", reducer="smartcrush", outcome="acted") == 1
        assert total(parsed, "offload_mcp_reducer_events_total", outcome="declined") >= 1
        assert total(parsed, "offload_mcp_result_chars_in_total", server="fx") >= 300_000
        assert total(parsed, "offload_mcp_result_chars_out_total", server="fx") < 50_000
        assert total(parsed, "offload_mcp_tokens_saved_total", server="fx", mode="enforce") > 70_000
        assert total(parsed, "offload_mcp_recalls_total", outcome="ok") == 1
        assert total(parsed, "offload_mcp_recalls_total", outcome="error") == 1
        assert total(parsed, "offload_mcp_call_duration_seconds_count", server="fx") == 4
        assert total(parsed, "offload_mcp_downstream_restarts_total") == 0

        while sum(" call server=" in line for line in stderr) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        lines = [line for line in stderr if " call server=" in line]
        assert len(lines) == 4, "".join(stderr)
        offloaded = next(line for line in lines if "tool=make_text" in line)
        assert "decision=offload reason=over_client_limit chars_in=300000" in offloaded
        assert "line 0" not in "".join(lines)  # never a body in the log


def test_metrics_need_the_token_when_one_is_set(tmp_path):
    config = write_config(tmp_path, {"fx": fixture_entry()}, {"server": {"auth_token": "s3cret"}})
    with proxy_over_http(["-c", str(config), "--ledger", str(tmp_path / "l.db")], "streamable-http") as (url, _):
        base = url.rsplit("/", 1)[0]
        with pytest.raises(urllib.error.HTTPError) as refused:
            scrape(base)
        assert refused.value.code == 401
        assert total(scrape(base, {"Authorization": "Bearer s3cret"}), "offload_mcp_calls_total") == 0


async def test_metrics_count_each_result_against_the_raw_bytes_and_against_claude_code_alone(tmp_path):
    import mcp_types as types

    config = write_config(tmp_path, {"fx": fixture_entry()}, {})
    args = ["-c", str(config), "--ledger", str(tmp_path / "l.db")]
    with proxy_over_http(args, "streamable-http") as (url, _stderr):
        base = url.rsplit("/", 1)[0]
        async with Client(url, client_info=types.Implementation(name="claude-code", version="2.1.0")) as client:
            await client.call_tool("make_text", {"size": 450_000})  # Claude Code alone rejects it (over 400,000 chars)
            await client.call_tool("make_text", {"size": 70_000})  # Claude Code alone files it with a preview
            await client.call_tool("echo", {"text": "hi"})
        async with Client(url) as client:  # a client with no size rules of its own
            await client.call_tool("make_text", {"size": 300_000})
        deadline = time.monotonic() + 10
        parsed = scrape(base)
        while total(parsed, "offload_mcp_calls_total") < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
            parsed = scrape(base)

    net = "offload_mcp_tokens_saved_net"
    raw = total(parsed, net, baseline="raw", client="claude-code", mode="enforce")
    alone = total(parsed, net, baseline="client_alone", client="claude-code", mode="enforce")
    # Against the raw bytes the stubs save nearly all of them; against Claude Code alone (a rejection naming a file
    # and a 2,000-char preview) they save or cost a few hundred: both figures, labelled, never one for the other.
    assert raw > 80_000 and abs(alone) < 2_000 and alone != 0
    assert total(parsed, "offload_mcp_client_alone_results_total", client="claude-code", fate="rejected") == 1
    assert total(parsed, "offload_mcp_client_alone_results_total", client="claude-code", fate="file") == 1
    assert total(parsed, "offload_mcp_client_alone_results_total", client="claude-code", fate="inline") == 1
    # A client that names no known model shows every byte: its two baselines agree.
    plain_raw = total(parsed, net, baseline="raw", client="plain")
    assert plain_raw > 70_000 and total(parsed, net, baseline="client_alone", client="plain") == pytest.approx(
        plain_raw, rel=0.02
    )
    # The existing name still counts the raw baseline.
    assert total(parsed, "offload_mcp_tokens_saved_total", mode="enforce") == pytest.approx(raw + plain_raw)
