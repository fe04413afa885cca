"""End to end over stdio: the real proxy in front of the fixture server, both protocol eras."""

from __future__ import annotations

import json

import mcp_types as types
import pytest

from support.proxy import proxy_client, proxy_session, text_of
from support.servers import fixture_cmd

FIXTURE_TOOLS = [
    "echo",
    "make_text",
    "json_array",
    "json_records",
    "image",
    "cut_emoji",
    "audio",
    "resources_mix",
    "structured",
    "bad_structured",
    "fail",
    "with_meta",
    "echo_meta",
    "progress",
    "sleep",
    "crash",
    "add_tool",
    "pid",
    "touch_resource",
]


async def test_handshake_session_end_to_end() -> None:
    """One proxy, one handshake-era session: every forwarding behaviour in turn.

    The fixture paginates every listing one item per page, so the proxy has to follow cursors.
    """
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with proxy_session(["--", *fixture_cmd("--page-size", "1")]) as s:
        names = [t.name for t in (await s.list_tools()).tools]
        assert names == FIXTURE_TOOLS + ["recall_tool_result", "context_guru_expand"]
        result = await s.call_tool("echo", {"text": "héllo ✓"})
        assert text_of(result) == "héllo ✓" and not result.is_error

        # Every content block type, _meta and isError come back intact.
        image = await s.call_tool("image", {})
        assert isinstance(image.content[1], types.ImageContent) and image.content[1].mime_type == "image/png"
        audio = await s.call_tool("audio", {})
        assert isinstance(audio.content[0], types.AudioContent)
        mix = await s.call_tool("resources_mix", {})
        assert [type(b).__name__ for b in mix.content] == ["EmbeddedResource", "EmbeddedResource", "ResourceLink"]
        assert mix.content[1].resource.blob == "AAECAw=="
        meta = await s.call_tool("with_meta", {})
        assert meta.meta == {"fixture/tag": "kept"} and meta.content[0].meta == {"fixture/tag": "kept"}
        failed = await s.call_tool("fail", {"message": "boom"})
        assert failed.is_error and text_of(failed) == "boom"
        structured = await s.call_tool("structured", {"value": 4})
        assert structured.structured_content == {"value": 4, "label": "v4"}

        # Progress is relayed; our progressToken and reserved keys are not forwarded, custom _meta is.
        done = await s.call_tool("progress", {"steps": 3}, progress_callback=on_progress)
        assert text_of(done) == "done"
        assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
        echoed = await s.call_tool("echo_meta", {"a": 1}, meta={"custom/key": "v"})
        assert json.loads(text_of(echoed)) == {"arguments": {"a": 1}, "meta_keys": ["custom/key"]}

        # A result that fails its own outputSchema reaches the client as an error, bytes intact.
        bad = await s.call_tool("bad_structured", {})
        assert bad.is_error and "does not match its outputSchema at value" in bad.content[0].text
        assert json.loads(bad.content[1].text) == {"value": "not-an-int", "label": "bad"}
        assert bad.structured_content == {"value": "not-an-int", "label": "bad"}

        # Own tools answer (real or placeholder), unknown tools are answered clearly.
        own = await s.call_tool("recall_tool_result", {"id": "trm_0000"})
        assert own.content and text_of(own)
        unknown = await s.call_tool("no_such_tool", {})
        assert unknown.is_error and "Unknown tool 'no_such_tool'" in text_of(unknown)

        # Resources (paginated), templates and prompts are forwarded.
        resources = await s.list_resources()
        assert [str(r.uri) for r in resources.resources] == ["fixture://hello", "fixture://blob"]
        templates = await s.list_resource_templates()
        assert templates.resource_templates[0].uri_template == "fixture://item/{id}"
        assert (await s.read_resource("fixture://hello")).contents[0].text == "hello from fixture"
        assert (await s.read_resource("fixture://item/42")).contents[0].text == "item 42"
        assert (await s.read_resource("fixture://blob")).contents[0].blob == "AAECAw=="
        assert [p.name for p in (await s.list_prompts()).prompts] == ["greet"]
        greeting = await s.get_prompt("greet", {"name": "Ada"})
        assert greeting.messages[0].content.text == "Hello, Ada!"


async def test_modern_client_negotiates_2026_and_calls() -> None:
    async with proxy_client(["--", *fixture_cmd()]) as c:
        assert c.protocol_version == "2026-07-28"
        tools = await c.list_tools()
        assert "json_array" in [t.name for t in tools.tools]
        result = await c.call_tool("json_array", {"count": 3})
        assert json.loads(text_of(result))[2] == {"id": 2, "name": "item-2", "status": "ok"}
        structured = await c.call_tool("structured", {"value": 5})
        assert structured.structured_content == {"value": 5, "label": "v5"}


async def test_tools_list_is_byte_stable_across_runs() -> None:
    dumps = []
    for _ in range(2):
        async with proxy_session(["--", *fixture_cmd()]) as s:
            listed = await s.list_tools()
            dumps.append(listed.model_dump_json(by_alias=True))
            dumps.append((await s.list_tools()).model_dump_json(by_alias=True))
    assert len(set(dumps)) == 1


async def test_list_changed_refreshes_catalog_and_notifies_handshake_client() -> None:
    import anyio

    changed = [anyio.Event()]

    async def handler(message: object) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed[-1].set()

    async with proxy_session(["--", *fixture_cmd()], message_handler=handler) as s:
        await s.list_tools()
        # Servers start in the background and announce that they joined with a list_changed, sent before the
        # first listing is answered: only one that comes after the new tool was added counts here.
        changed.append(anyio.Event())
        await s.call_tool("add_tool", {"name": "late_tool"})
        with anyio.fail_after(10):
            await changed[-1].wait()
        names = [t.name for t in (await s.list_tools()).tools]
        assert "late_tool" in names
        assert text_of(await s.call_tool("late_tool", {"text": "x"})) == "x"


async def test_list_changed_reaches_modern_client_on_listen_stream() -> None:
    import anyio

    async with proxy_client(["--", *fixture_cmd()]) as c:
        await c.list_tools()
        async with c.listen(tools_list_changed=True) as subscription:
            await c.call_tool("add_tool", {"name": "late_tool"})
            with anyio.fail_after(10):
                async for event in subscription:
                    assert type(event).__name__ == "ToolsListChanged"
                    break
        assert "late_tool" in [t.name for t in (await c.list_tools()).tools]


@pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed")  # handshake-era feature, on purpose
async def test_resource_subscriptions_and_completion_are_forwarded() -> None:
    import anyio

    updated: list[str] = []
    got = anyio.Event()

    async def handler(message: object) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            updated.append(str(message.params.uri))
            got.set()

    async with proxy_session(["--", *fixture_cmd()], message_handler=handler) as s:
        assert s.server_capabilities.resources.subscribe
        await s.subscribe_resource("fixture://hello")
        assert text_of(await s.call_tool("touch_resource", {})) == "touched fixture://hello"
        with anyio.fail_after(10):
            await got.wait()
        assert updated == ["fixture://hello"]
        await s.unsubscribe_resource("fixture://hello")
        assert "not subscribed" in text_of(await s.call_tool("touch_resource", {}))
        done = await s.complete(types.PromptReference(name="greet"), {"name": "name", "value": "A"})
        assert done.completion.values == ["Ada", "Alan"]
