"""upstream/routing.py in-process: resources, prompts and completions reach the wrapped server that owns them."""

from __future__ import annotations

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from offload_mcp.config import OffloadSettings, parse_config
from offload_mcp.downstream.pool import DownstreamPool
from offload_mcp.upstream.routing import ResourcePromptRouter, route_prompts, strip_meta, template_matches
from support.servers import fixture_entry


def test_routing_through_a_real_wrapped_server() -> None:
    config = parse_config({"mcpServers": {"fx": fixture_entry()}})

    async def scenario() -> None:
        async with DownstreamPool(config.mcpServers, config.offload.downstream) as pool:
            router = ResourcePromptRouter(pool)
            router.rebuild(config.offload.catalog.separator)
            assert [p.name for p in router.list_prompts()] == ["greet"]
            greeting = await router.get_prompt(types.GetPromptRequestParams(name="greet", arguments={"name": "Ada"}))
            assert greeting.messages[0].content.text == "Hello, Ada!"
            assert "fixture://hello" in {str(r.uri) for r in router.list_resources()}
            item = await router.read_resource(types.ReadResourceRequestParams(uri="fixture://item/7"))  # by template
            assert item.contents[0].text == "item 7"
            done = await router.complete(
                types.CompleteRequestParams(
                    ref=types.PromptReference(name="greet"), argument=types.CompletionArgument(name="name", value="A")
                )
            )
            assert done.completion.values == ["Ada", "Alan"]
            with pytest.raises(MCPError, match="Unknown prompt: nope"):
                await router.get_prompt(types.GetPromptRequestParams(name="nope"))

    anyio.run(scenario)


def test_no_wrapped_resources_is_a_clear_error() -> None:
    async def scenario() -> None:
        async with DownstreamPool({}, OffloadSettings().downstream) as pool:
            router = ResourcePromptRouter(pool)
            router.rebuild("__")
            assert router.list_prompts() == [] and router.list_resources() == []
            with pytest.raises(MCPError, match="no wrapped server serves resources"):
                await router.read_resource(types.ReadResourceRequestParams(uri="file:///x"))

    anyio.run(scenario)


def test_shared_prompt_names_get_the_server_prefix_and_meta_loses_our_keys() -> None:
    greet = types.Prompt(name="greet")
    routes = route_prompts({"a": [greet], "b": [greet, types.Prompt(name="solo")]}, "__")
    assert routes == {"a__greet": ("a", "greet"), "b__greet": ("b", "greet"), "solo": ("b", "solo")}
    assert template_matches("fixture://item/{id}", "fixture://item/42") and not template_matches(
        "fixture://item/{id}", "fixture://item/4/2"
    )
    assert strip_meta({"progressToken": 1, "io.modelcontextprotocol/related": {}, "trace": "t"}) == {"trace": "t"}
    assert strip_meta({"progressToken": 1}) is None
