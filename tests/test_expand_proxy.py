"""context_guru_expand and GET /expand/{hash} through the real proxy (fixture server downstream)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from mcp import Client

from offload_mcp.reducers.base import MARKER_RE, marker
from offload_mcp.session import cg_hash
from offload_mcp.store import Ledger
from offload_mcp.store.settings import LedgerSettings
from support.proxy import proxy_http, proxy_session, text_of
from support.servers import fixture_cmd

NOISY = "\x1b[33mwarning: peer dependency unmet\x1b[0m\n" * 40 + "\n" * 30 + "build complete in 4.2s\n"


@pytest.fixture(scope="module", params=["sse", "streamable-http"])
def http_proxy(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str, Path]]:
    ledger = tmp_path_factory.mktemp("expand") / "ledger.db"
    with proxy_http(["--ledger", str(ledger), "--", *fixture_cmd()], request.param) as url:
        yield request.param, url, ledger


def base_of(url: str) -> str:
    return url.rsplit("/", 1)[0]


async def _client(url: str, transport: str):
    if transport == "sse":
        from mcp.client.sse import sse_client

        return Client(sse_client(url))
    return Client(url)


async def test_marker_expands_over_mcp_and_http(http_proxy: tuple[str, str, Path]) -> None:
    transport, url, _ledger = http_proxy
    async with await _client(url, transport) as client:
        reduced = text_of(await client.call_tool("echo", {"text": NOISY}))
        hashes = MARKER_RE.findall(reduced)
        assert hashes == [cg_hash(NOISY)], reduced
        assert len(reduced) < len(NOISY) and reduced.count("warning: peer dependency unmet") == 1
        for form in (marker(hashes[0]), hashes[0]):
            restored = await client.call_tool("context_guru_expand", {"marker": form})
            assert not restored.is_error and text_of(restored) == NOISY
        again = text_of(await client.call_tool("echo", {"text": NOISY}))
        if transport == "sse":
            assert again == f"[repeat of earlier `echo`; expand {marker(hashes[0])}]", (
                "a repeat names the call, never a position"
            )
        else:
            # A 2026-era streamable-HTTP request carries no identity: it has no history to repeat from (issue 13 #1).
            assert again == reduced
        bad = await client.call_tool("context_guru_expand", {"marker": "<<cg:nothex>>"})
        assert bad.is_error and "16" in text_of(bad)
    response = httpx2.get(f"{base_of(url)}/expand/{hashes[0]}")
    assert response.status_code == 200 and response.text == NOISY
    assert response.headers["content-type"].startswith("text/plain")


def test_get_expand_unknown_and_malformed(http_proxy: tuple[str, str, Path]) -> None:
    _, url, ledger_path = http_proxy
    original = "exact bytes é😀\r\n" * 10
    ledger = Ledger.open(LedgerSettings(), ledger_path)
    try:
        ledger.commit(stash={cg_hash(original): original})
    finally:
        ledger.close()
    ok = httpx2.get(f"{base_of(url)}/expand/{cg_hash(original)}")
    assert ok.status_code == 200 and ok.content == original.encode("utf-8")
    unknown = httpx2.get(f"{base_of(url)}/expand/{'0' * 16}")
    assert unknown.status_code == 404 and "no stashed original" in unknown.text
    malformed = httpx2.get(f"{base_of(url)}/expand/not-a-hash")
    assert malformed.status_code == 400 and "16 hex digits" in malformed.text


async def test_expand_over_stdio(tmp_path: Path) -> None:
    async with proxy_session(["--ledger", str(tmp_path / "l.db"), "--", *fixture_cmd()]) as session:
        names = [t.name for t in (await session.list_tools()).tools]
        assert "context_guru_expand" in names and "recall_tool_result" in names
        reduced = text_of(await session.call_tool("echo", {"text": NOISY}))
        (h,) = MARKER_RE.findall(reduced)
        restored = await session.call_tool("context_guru_expand", {"marker": marker(h)})
        assert text_of(restored) == NOISY
        unknown = await session.call_tool("context_guru_expand", {"marker": "f" * 16})
        assert unknown.is_error and "no stashed original" in text_of(unknown)
