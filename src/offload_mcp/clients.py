"""What an MCP client puts in its model's context for one tool result.

The proxy's savings are only real in the model's context, and clients differ
in what they take from a CallToolResult. Each client here is a pure function
of (the result as sent on the wire, what the tool declared) to a `ClientView`:
the exact text the model reads and the result's fate. Replay (`--client`),
benches and tests share these models so every figure counts the same thing.

- `plain`: the text blocks, joined with a newline (what most clients show).
  Inert for sizes: it never cuts, files or rejects anything.
- `claude-code`: Claude Code's handling of MCP results (2026 releases, as
  its documentation states them):
  1. `structuredContent`, when the result has it, is what the model reads
     (serialized as compact JSON), else the text blocks;
  2. a result over `MAX_MCP_OUTPUT_TOKENS` (25,000 tokens by default,
     estimated here as chars / 4 like the rest of the project) is rejected:
     the model gets an error naming the size and none of the bytes;
  3. otherwise a result over its inline size (50,000 chars, unless the tool
     declares a larger `_meta["anthropic/maxResultSizeChars"]`, honoured up
     to 500,000) is written to a file: the model gets a ~2,000-char preview
     and the file's path (it can Read the file: the bytes are recoverable
     at the cost of one more tool call);
  4. everything else is inline.
  The file path in the preview message is derived from the content's hash,
  so the same result always yields the same bytes (replay is byte-stable).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

CLAUDE_CODE_MAX_MCP_OUTPUT_TOKENS = 25_000
"""Claude Code rejects an MCP result above this many tokens (env MAX_MCP_OUTPUT_TOKENS)."""
CLAUDE_CODE_INLINE_CHARS = 50_000
"""Claude Code files an MCP result above this many chars to disk (unless the tool declares more)."""
CLAUDE_CODE_MAX_DECLARED_CHARS = 500_000
"""The largest `anthropic/maxResultSizeChars` Claude Code honours."""
CLAUDE_CODE_PREVIEW_CHARS = 2_000
"""How much of a filed result the model sees inline."""
CHARS_PER_TOKEN = 4.0

FATES = ("inline", "file", "rejected")


@dataclass(frozen=True)
class ClientView:
    text: str
    """Exactly what the model's context holds for this result."""
    fate: str
    """`inline` (all of it), `file` (a preview; the rest is one Read away), `rejected` (none of it)."""


class ClientModel(Protocol):
    @property
    def name(self) -> str: ...

    def channel(self, body: dict[str, Any]) -> str:
        """The part of a result this client reads, before any size rule."""
        ...

    def view(
        self, body: dict[str, Any], *, tool: str = "tool", declared_max_chars: int | None = None
    ) -> ClientView: ...


def text_of(body: dict[str, Any]) -> str:
    """The result's text blocks joined with a newline; other block types carry no text."""
    return "\n".join(
        block.get("text", "")
        for block in body.get("content") or []
        if isinstance(block, dict) and block.get("type", "text") == "text"
    )


def _text_and_links(body: dict[str, Any]) -> str:
    """Claude Code's text of a result: its text blocks, and each `resource_link` as the line it shows
    the model for one (`[Resource link: NAME] URI`, as seen in tests/test_claude_code_e2e.py), in order."""
    parts = []
    for block in body.get("content") or []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type", "text")
        if kind == "text":
            parts.append(block.get("text", ""))
        elif kind == "resource_link":
            parts.append(f"[Resource link: {block.get('name', '')}] {block.get('uri', '')}")
    return "\n".join(parts)


@dataclass(frozen=True)
class PlainClient:
    """Shows the text blocks, whatever their size."""

    name: str = "plain"

    def channel(self, body: dict[str, Any]) -> str:
        return text_of(body)

    def view(self, body: dict[str, Any], *, tool: str = "tool", declared_max_chars: int | None = None) -> ClientView:
        return ClientView(text_of(body), "inline")


@dataclass(frozen=True)
class ClaudeCodeClient:
    """Claude Code's MCP result handling (see the module docstring for the rules and their order)."""

    name: str = "claude-code"
    max_output_tokens: int = CLAUDE_CODE_MAX_MCP_OUTPUT_TOKENS
    inline_chars: int = CLAUDE_CODE_INLINE_CHARS
    preview_chars: int = CLAUDE_CODE_PREVIEW_CHARS
    chars_per_token: float = CHARS_PER_TOKEN

    def inline_limit(self, declared_max_chars: int | None) -> int:
        """Chars shown inline: the default, or the tool's larger declaration (capped where Claude Code caps it)."""
        if declared_max_chars is None:
            return self.inline_chars
        return max(self.inline_chars, min(declared_max_chars, CLAUDE_CODE_MAX_DECLARED_CHARS))

    def channel(self, body: dict[str, Any]) -> str:
        structured = body.get("structuredContent")
        return orjson.dumps(structured).decode() if structured is not None else _text_and_links(body)

    def view(self, body: dict[str, Any], *, tool: str = "tool", declared_max_chars: int | None = None) -> ClientView:
        text = self.channel(body)
        tokens = int(len(text) / self.chars_per_token)
        if tokens > self.max_output_tokens:
            return ClientView(
                f'Error: MCP tool "{tool}" response ({tokens} tokens) exceeds maximum allowed tokens '
                f"({self.max_output_tokens}). Please use pagination, filtering, or limit parameters to reduce the response size.",
                "rejected",
            )
        if len(text) > self.inline_limit(declared_max_chars):
            digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
            return ClientView(
                f"Output too large ({len(text)} characters). Full output saved to: "
                f"/home/user/.claude/projects/-work-project/tool-results/mcp-{digest}.txt\n\n"
                f"Preview (first {self.preview_chars} characters):\n{text[: self.preview_chars]}",
                "file",
            )
        return ClientView(text, "inline")


CLIENTS: dict[str, ClientModel] = {"plain": PlainClient(), "claude-code": ClaudeCodeClient()}


def client_model(name: str) -> ClientModel:
    """The client model by name; a clear error naming the choices otherwise."""
    try:
        return CLIENTS[name]
    except KeyError:
        raise ValueError(f"unknown client {name!r}: choose one of {', '.join(sorted(CLIENTS))}") from None
