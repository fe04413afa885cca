"""End to end over the HTTP transports, upstream (SSE, streamable HTTP) and downstream (url servers)."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client

from support.proxy import proxy_http, proxy_session, text_of
from support.servers import FIXTURE_SERVER, fixture_cmd, fixture_over_http, python_entry, write_config
from support.zygote import prewarmed


@asynccontextmanager
async def connect(url: str, transport: str, era: str) -> Any:
    """A client of the given era over the given transport; yields an object with list_tools/call_tool."""
    if transport == "sse":
        if era == "handshake":
            async with sse_client(url) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    yield session
        else:
            async with Client(sse_client(url)) as client:
                yield client
    else:
        async with Client(url, mode="legacy" if era == "handshake" else "auto") as client:
            yield client


@pytest.fixture(scope="module", params=["sse", "streamable-http"])
def http_proxy(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    with proxy_http(["--", *fixture_cmd()], request.param) as url:
        yield request.param, url


@pytest.mark.parametrize("era", ["handshake", "modern"])
async def test_list_call_progress_structured_over_http(http_proxy: tuple[str, str], era: str) -> None:
    transport, url = http_proxy
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with connect(url, transport, era) as client:
        expected = "2026-07-28" if era == "modern" else "2025-11-25"
        assert client.protocol_version == expected
        names = [t.name for t in (await client.list_tools()).tools]
        assert names[0] == "echo" and names[-2:] == ["recall_tool_result", "context_guru_expand"]
        assert text_of(await client.call_tool("echo", {"text": f"{transport}/{era}"})) == f"{transport}/{era}"
        done = await client.call_tool("progress", {"steps": 2}, progress_callback=on_progress)
        assert text_of(done) == "done" and seen == [1, 2]
        structured = await client.call_tool("structured", {"value": 9})
        assert structured.structured_content == {"value": 9, "label": "v9"}
        image = await client.call_tool("image", {})
        assert isinstance(image.content[1], types.ImageContent)
        resource = await client.read_resource("fixture://hello")
        assert resource.contents[0].text == "hello from fixture"


def test_healthz_reports_servers(http_proxy: tuple[str, str]) -> None:
    _, url = http_proxy
    base = url.rsplit("/", 1)[0]
    body = httpx2.get(f"{base}/healthz").json()
    assert body["status"] == "ok"
    assert body["servers"][0]["state"] == "ready" and body["servers"][0]["tools"] == 19
    metrics = httpx2.get(f"{base}/metrics")
    assert metrics.status_code == 200 and "offload_mcp_calls" in metrics.text


def test_foreign_host_header_is_refused(http_proxy: tuple[str, str]) -> None:
    transport, url = http_proxy
    response = httpx2.post(url if transport != "sse" else url, headers={"Host": "evil.example"}, json={})
    assert response.status_code in (400, 403, 405, 421)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("transport", ["sse", "streamable-http"])
async def test_remote_downstream_servers(tmp_path: Any, transport: str) -> None:
    with fixture_over_http(transport) as url:
        config = write_config(tmp_path, {"remote": {"url": url, "type": transport}})
        async with proxy_session(["-c", str(config)]) as session:
            names = [t.name for t in (await session.list_tools()).tools]
            assert "echo" in names
            assert text_of(await session.call_tool("echo", {"text": "via http"})) == "via http"
            mix = await session.call_tool("resources_mix", {})
            assert [type(b).__name__ for b in mix.content] == ["EmbeddedResource", "EmbeddedResource", "ResourceLink"]


def test_auth_token_is_required_when_configured(tmp_path: Any) -> None:
    config = write_config(tmp_path, {"fx": python_entry(str(FIXTURE_SERVER))}, {"server": {"auth_token": "s3cret"}})
    with proxy_http(["-c", str(config)], "streamable-http") as url:
        base = url.rsplit("/", 1)[0]
        assert httpx2.get(f"{base}/healthz").status_code == 200
        assert httpx2.post(url, json={}).status_code == 401
        ok = httpx2.post(
            url,
            headers={"Authorization": "Bearer s3cret", "Accept": "application/json, text/event-stream"},
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        )
        assert ok.status_code != 401


def test_non_loopback_bind_without_token_is_refused(tmp_path: Any) -> None:
    from support.proxy import OFFLOAD_MCP, proxy_env

    done = subprocess.run(
        prewarmed([OFFLOAD_MCP, "serve", "--transport", "sse", "--host", "0.0.0.0", "--", *fixture_cmd()]),
        capture_output=True,
        text=True,
        env=proxy_env(),
        timeout=60,
    )
    assert done.returncode == 2
    assert "auth_token" in done.stderr
