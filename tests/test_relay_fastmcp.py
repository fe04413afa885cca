"""The fastmcp Client through the proxy to tests/fixtures/relay_server.py (issue 15).

The fixture samples, elicits (form and URL), lists roots and logs; the proxy
must relay each server-to-client request to the fastmcp Client's handlers and
bring their answers back, over stdio (handshake era) and streamable HTTP (2026
era); logs arrive named by their server, and a client that declared no
elicitation gets a refusal naming the missing capability.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from fastmcp import Client
from fastmcp.client.logging import LogMessage
from fastmcp.client.transports import StdioTransport
from mcp.shared.exceptions import MCPError

from support.proxy import OFFLOAD_MCP, proxy_env, proxy_http, text_of
from support.relay import relay_config, wait_for
from support.servers import ROOT


class Handlers:
    """The fastmcp Client's handlers; `seen` records every request that reached them."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.logs: list[LogMessage] = []
        self.completed: list[str] = []

    async def sampling(self, messages: list[types.SamplingMessage], params: Any, context: Any) -> str:
        self.seen.append("sampling")
        # A plain string: fastmcp answers it as model "fastmcp-slim".
        return f"fm:{getattr(messages[0].content, 'text', '')}"

    async def elicitation(self, message: str, response_type: Any, params: Any, context: Any) -> Any:
        if isinstance(params, types.ElicitRequestURLParams):
            self.seen.append(f"elicitation:url:{params.url}")
            return types.ElicitResult(action="accept")
        self.seen.append("elicitation:form")
        return {"name": "Grace"}  # data alone: fastmcp makes it an accept

    async def roots(self, context: Any) -> list[str]:
        self.seen.append("roots")
        return ["file:///roots/fastmcp"]

    async def log(self, message: LogMessage) -> None:
        self.logs.append(message)

    async def notified(self, message: Any) -> None:
        if isinstance(message, types.ElicitCompleteNotification):
            self.completed.append(message.params.elicitation_id)


async def refusal(call: Any) -> str:
    """The error a call ends in, whether the proxy made it an isError result or a JSON-RPC error."""
    try:
        result = await call
    except MCPError as err:
        return err.error.message
    assert result.is_error, text_of(result)
    return text_of(result)


# Two proxy processes in all: stdio with the handshake era pinned, and streamable HTTP where
# fastmcp's default "auto" negotiates the 2026 era (requests then travel as input_required rounds).
@pytest.mark.parametrize(
    ("transport", "mode", "era"), [("stdio", "legacy", "2025-11-25"), ("streamable-http", "auto", "2026-07-28")]
)
async def test_fastmcp_client_samples_elicits_lists_roots_and_logs_through_the_proxy(
    tmp_path: Path, transport: str, mode: Any, era: str
) -> None:
    handlers = Handlers()
    config = relay_config(tmp_path)

    async def run(target: Any) -> None:
        client = Client(
            target,
            sampling_handler=handlers.sampling,
            elicitation_handler=handlers.elicitation,
            roots=handlers.roots,
            log_handler=handlers.log,
            message_handler=handlers.notified,
            mode=mode,
        )
        with anyio.fail_after(90):
            async with client:
                assert client.protocol_version == era
                await exercise(client)

    async def exercise(client: Client[Any]) -> None:
        # The downstream session declares what the fastmcp Client declared: the SDK session
        # under it offers form and URL elicitation, sampling and roots.
        assert json.loads(text_of(await client.call_tool("declared", {}))) == {
            "elicitation": {"form": {}, "url": {}},
            "roots": {"listChanged": True},
            "sampling": {},
        }

        assert text_of(await client.call_tool("sample", {"prompt": "hi"})) == "fm:hi (model fastmcp-slim)"
        assert text_of(await client.call_tool("ask_name", {})) == "accept Grace"
        # The client declared elicitation.url, so a URL elicitation reaches its handler and is accepted.
        url = "https://example.com/login"
        assert text_of(await client.call_tool("open_url", {"url": url})) == "accept"
        if era == "2026-07-28":
            # That era has no notifications/elicitation/complete: the retried call itself is the signal.
            assert handlers.completed == []
        else:
            # The server's notifications/elicitation/complete reaches the client whose call sent it.
            await wait_for(lambda: handlers.completed == ["elicit-1"])
        assert text_of(await client.call_tool("roots", {})) == "file:///roots/fastmcp"
        assert handlers.seen == ["sampling", "elicitation:form", f"elicitation:url:{url}", "roots"]

        # Logs reach the client's log handler with the server named ("relay/<logger>").
        assert text_of(await client.call_tool("chatty", {"n": 2})) == "logged 2"
        await wait_for(lambda: len(handlers.logs) >= 2)
        assert [(m.level, m.logger, m.data) for m in handlers.logs] == [
            ("info", "relay/chat", "message 0"),
            ("info", "relay/chat", "message 1"),
        ]

    if transport == "stdio":
        await run(StdioTransport(OFFLOAD_MCP, ["serve", *config], env=proxy_env(), cwd=str(ROOT)))
    else:
        with proxy_http(config) as endpoint:
            await run(endpoint)
            # On the same proxy, a fastmcp Client with no handlers declares no elicitation. The shared
            # downstream session still declares the union of its clients (the first one's URL mode), so
            # the fixture does send its URL elicitation, and the proxy refuses it for this client with
            # the missing capability named. (fastmcp cannot declare form without URL: given an
            # elicitation handler, the SDK session under it declares both.)
            with anyio.fail_after(60):
                async with Client(endpoint) as bare:
                    refused = await refusal(
                        bare.call_tool("open_url", {"url": "https://example.com/pay"}, raise_on_error=False)
                    )
                    assert "did not declare the elicitation capability" in refused
