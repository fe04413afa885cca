"""The client models (analysis/clients.py) by size: what `sized` says is what `view` shows, and which clientInfo names which."""

from __future__ import annotations

import pytest

from offload_mcp.analysis.clients import (
    CLAUDE_CODE_INLINE_CHARS,
    CLAUDE_CODE_MAX_OUTPUT_CHARS,
    ChannelSizes,
    client_model,
    for_client_info,
)

EDGES = (
    0,
    1,
    1_999,
    2_000,
    2_001,
    CLAUDE_CODE_INLINE_CHARS - 1,
    CLAUDE_CODE_INLINE_CHARS,
    CLAUDE_CODE_INLINE_CHARS + 1,
    99_999,
    CLAUDE_CODE_MAX_OUTPUT_CHARS,
    CLAUDE_CODE_MAX_OUTPUT_CHARS + 1,
    1_467_635,
)


def _bodies(chars: int) -> list[dict]:
    text = ("é line of text\n" * (chars // 15 + 1))[:chars]
    half = text[: chars // 2]
    return [
        {"content": [{"type": "text", "text": text}]},
        {"content": [{"type": "text", "text": half}, {"type": "text", "text": half}]},
        # structuredContent (non-ASCII, so its characters are fewer than its UTF-8 bytes) beside a short text
        {"content": [{"type": "text", "text": "see structuredContent"}], "structuredContent": {"rows": [text]}},
        # a stub's resource_link, which Claude Code shows as a line of its own (issue 42), after text or alone
        {"content": [{"type": "text", "text": text}, LINK]},
        {"content": [LINK, {"type": "text", "text": half}, LINK]},
        {"content": [LINK]},
    ]


LINK = {"type": "resource_link", "uri": "offload://result/trm_0123456789abcdef", "name": "trm_0123456789abcdef"}


@pytest.mark.parametrize("name", ["claude-code", "plain"])
@pytest.mark.parametrize("declared", [None, 100_000, 900_000])
@pytest.mark.parametrize("chars", EDGES)
def test_sized_is_the_length_and_fate_of_the_view(name: str, declared: int | None, chars: int) -> None:
    client = client_model(name)
    for body in _bodies(chars):
        view = client.view(body, tool="mcp__git__git_log", declared_max_chars=declared)
        sized = client.sized(ChannelSizes.of(body), tool="mcp__git__git_log", declared_max_chars=declared)
        assert (sized.chars, sized.fate) == (len(view.text), view.fate)


def test_claude_code_rejects_files_and_keeps_by_size() -> None:
    client = client_model("claude-code")
    assert client.sized(ChannelSizes(40_000)).fate == "inline"
    assert client.sized(ChannelSizes(60_000)).fate == "file"
    assert client.sized(ChannelSizes(60_000), declared_max_chars=100_000).fate == "inline"
    assert client.sized(ChannelSizes(60_000, structured=1_000)).fate == "inline"  # it reads structuredContent
    # what the real CLI (2.1.332) did in tests/test_claude_code_e2e.py: 400,000 chars filed, 401,000 rejected
    assert client.sized(ChannelSizes(400_000)).fate == "file"
    rejected = client.sized(ChannelSizes(401_000))
    assert rejected.fate == "rejected" and 1_000 < rejected.chars < 1_500  # an error naming a file, no bytes


@pytest.mark.parametrize(
    ("name", "model"),
    [("claude-code", "claude-code"), ("Claude Code", "claude-code"), ("mcp-inspector-cli", "plain"), (None, "plain")],
)
def test_client_info_names_the_model(name: str | None, model: str) -> None:
    assert for_client_info(name) == model


def test_the_shaper_measures_the_channels_as_the_client_models_do() -> None:
    import mcp_types as types
    import orjson

    from offload_mcp.shaping import channel_sizes, dump_result, sent_chars

    result = types.CallToolResult(
        content=[types.TextContent(text="é" * 10), types.TextContent(text="ab")],
        structured_content={"rows": [{"name": "é" * 5, "n": 1}]},
    )
    dumped = dump_result(result)
    sent_chars(dumped)  # the shaper measured its structuredContent once already: the characters come from there
    plain = orjson.loads(orjson.dumps(dumped))
    assert (
        channel_sizes(dumped)
        == ChannelSizes.of(plain)
        == ChannelSizes(13, len(orjson.dumps(plain["structuredContent"]).decode()))
    )
