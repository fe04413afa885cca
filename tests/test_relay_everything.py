"""server-everything behind the proxy with a client that offers sampling, elicitation and roots.

The 4 capability-gated tools must be listed and must return what the
client's callbacks gave, over stdio and streamable HTTP, in both protocol
eras (handshake: requests relayed mid-call; 2026: input_required rounds).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.client.stdio import stdio_client

from support.proxy import proxy_http, stdio_params, text_of
from support.servers import NPM_BIN

EVERYTHING = str(NPM_BIN / "mcp-server-everything")
GATED = {"get-roots-list", "trigger-sampling-request", "trigger-elicitation-request", "trigger-url-elicitation"}


class Callbacks:
    """A client's side of the relayed requests; records what reached it."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.seen: list[str] = []

    async def sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        prompt = params.messages[0].content
        self.seen.append("sampling")
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(text=f"{self.tag} sampled [{getattr(prompt, 'text', '')}]"),
            model=f"model-{self.tag}",
        )

    async def elicitation(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.seen.append(f"elicitation:{params.mode or 'form'}")
        if isinstance(params, types.ElicitRequestURLParams):
            return types.ElicitResult(action="accept")
        return types.ElicitResult(action="accept", content={"name": f"Ada {self.tag}", "check": True})

    async def roots(self, context: ClientRequestContext) -> types.ListRootsResult:
        self.seen.append("roots")
        return types.ListRootsResult(roots=[types.Root(uri=f"file:///work/{self.tag}", name=f"root-{self.tag}")])

    def kwargs(self) -> dict[str, Any]:
        return {
            "sampling_callback": self.sampling,
            "elicitation_callback": self.elicitation,
            "list_roots_callback": self.roots,
        }


async def exercise(client: Any, tag: str) -> None:
    names = {t.name for t in (await client.list_tools()).tools}
    assert GATED <= names, sorted(names)
    sampled = text_of(await client.call_tool("trigger-sampling-request", {"prompt": "hello", "maxTokens": 5}))
    assert f"{tag} sampled [" in sampled and "hello" in sampled and f"model-{tag}" in sampled
    elicited = text_of(await client.call_tool("trigger-elicitation-request", {}))
    assert f"- Name: Ada {tag}" in elicited and "Agreed to terms: true" in elicited
    url = text_of(
        await client.call_tool("trigger-url-elicitation", {"url": "https://example.com/x", "message": "open it"})
    )
    assert "User completed the URL elicitation flow" in url and "https://example.com/x" in url
    roots = text_of(await client.call_tool("get-roots-list", {}))
    assert f"file:///work/{tag}" in roots and f"root-{tag}" in roots


@asynccontextmanager
async def stdio_client_of(era: str, callbacks: Callbacks) -> AsyncIterator[Any]:
    params = stdio_params(["--", EVERYTHING], None)
    if era == "handshake":
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, **callbacks.kwargs()) as session:
                await session.initialize()
                yield session
    else:
        async with Client(params, mode="2026-07-28", **callbacks.kwargs()) as client:
            assert client.protocol_version == "2026-07-28"
            yield client


@pytest.mark.parametrize("era", ["handshake", "modern"])
async def test_everything_gated_tools_over_stdio(era: str) -> None:
    callbacks = Callbacks(f"stdio-{era}")
    async with stdio_client_of(era, callbacks) as client:
        await exercise(client, callbacks.tag)
    assert {"sampling", "elicitation:form", "elicitation:url"} <= set(callbacks.seen)


@pytest.mark.parametrize("era", ["handshake", "modern"])
async def test_everything_gated_tools_over_streamable_http(era: str) -> None:
    # One proxy per era: a downstream session keeps the roots it was last given (see docs/relay.md).
    callbacks = Callbacks(f"http-{era}")
    mode = "legacy" if era == "handshake" else "2026-07-28"
    with proxy_http(["--", EVERYTHING]) as url:
        async with Client(url, mode=mode, **callbacks.kwargs()) as client:
            await exercise(client, callbacks.tag)
    assert {"sampling", "elicitation:form", "elicitation:url"} <= set(callbacks.seen)
