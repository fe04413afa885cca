"""What an MCP client puts in its model's context for one tool result.

The proxy's savings are only real in the model's context, and clients differ
in what they take from a CallToolResult. Each client here is a pure function
of (the result as sent on the wire, what the tool declared) to a `ClientView`:
the exact text the model reads and the result's fate. Replay (`--client`),
benches and tests share these models so every figure counts the same thing.

- `plain`: the text blocks, joined with a newline (what most clients show).
  Inert for sizes: it never cuts, files or rejects anything.
- `claude-code`: Claude Code's handling of MCP results, as the real CLI
  (2.1.332, run headless in tests/test_claude_code_e2e.py against a fake
  Messages API) does it:
  1. `structuredContent`, when the result has it, is what the model reads
     (serialized as compact JSON), else the text blocks;
  2. a result over 400,000 chars (what 2.1.332 does with the default
     `MAX_MCP_OUTPUT_TOKENS`; 400,000 is filed, 401,000 is not) is
     rejected: the model gets an error that names the size and a file the
     whole result was saved to, with instructions to read it in parts, and
     none of the bytes (`rejected`: one Read away at best, nothing in view);
  3. otherwise a result over its inline size (50,000 chars, unless the tool
     declares a larger `_meta["anthropic/maxResultSizeChars"]`, honoured up
     to 500,000) is written to a file: the model gets a ~2,000-char preview
     and the file's path inside `<persisted-output>` (it can Read the file:
     the bytes are recoverable at the cost of one more tool call);
  4. everything else is inline.
  The messages mirror the CLI's; their file path is derived from the
  content's hash, so the same result always yields the same bytes (replay is
  byte-stable), and is shorter than a real one (which names the project,
  the session and the tool), so a modelled message runs ~100-150 chars
  shorter than the real one.

Sizes only: `sized(ChannelSizes, ...)` gives the length and fate `view` would
give a result whose channels have those sizes, through the same rules and the
same message builders; the ledger keeps sizes, not bodies' views, so `stats`,
the exit summary and `/metrics` count what the client would have shown with it.
`for_client_info(name)` names the model for the `clientInfo.name` a client sent
at initialize (Claude Code sends `claude-code`); any other client is `plain`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

CLAUDE_CODE_MAX_OUTPUT_CHARS = 400_000
"""Claude Code (2.1.332, default MAX_MCP_OUTPUT_TOKENS) rejects an MCP result above this many chars, files one below."""
CLAUDE_CODE_INLINE_CHARS = 50_000
"""Claude Code files an MCP result above this many chars to disk (unless the tool declares more)."""
CLAUDE_CODE_MAX_DECLARED_CHARS = 500_000
"""The largest `anthropic/maxResultSizeChars` Claude Code honours."""
CLAUDE_CODE_PREVIEW_CHARS = 2_000
"""How much of a filed result the model sees inline."""
CHARS_PER_TOKEN = 4.0

FATES = ("inline", "file", "rejected")

CLIENT_INFO_NAMES = {"claude-code": "claude-code"}
"""`clientInfo.name` (lower case, spaces as `-`) -> client model; Claude Code sends `claude-code`."""


def for_client_info(name: str | None) -> str:
    """The client model for the `clientInfo.name` a client declared; `plain` for any other (or none)."""
    if not name:
        return "plain"
    return CLIENT_INFO_NAMES.get("-".join(name.strip().lower().replace("_", " ").split()), "plain")


@dataclass(frozen=True)
class ChannelSizes:
    """The characters of a result's two text channels, as a client reads them."""

    text: int
    """The text blocks joined with a newline (`text_of`)."""
    structured: int | None = None
    """structuredContent as compact JSON, in characters; None when the result has none."""
    links: int = 0
    """What the result's `resource_link` blocks add to Claude Code's text channel (`_text_and_links`)."""

    @classmethod
    def of(cls, body: dict[str, Any], *, structured_chars: int | None = None) -> ChannelSizes:
        """The sizes of `body`'s channels; `structured_chars` when the caller has measured it (json_chars)."""
        texts: list[int] = []
        links: list[int] = []
        for block in body.get("content") or []:
            if not isinstance(block, dict):
                continue
            kind = block.get("type", "text")
            if kind == "text":
                texts.append(len(block.get("text", "")))
            elif kind == "resource_link":
                links.append(len(_link_line(block)))
        text = sum(texts) + max(0, len(texts) - 1)  # len(text_of(body)), without the copy
        # Each link line joins the text channel with one newline, unless it is the channel's first part.
        link_chars = sum(links) + len(links) - (1 if links and not texts else 0)
        if body.get("structuredContent") is None:
            return cls(text, None, link_chars)
        structured = structured_chars if structured_chars is not None else json_chars(body["structuredContent"])
        return cls(text, structured, link_chars)


def json_chars(value: Any) -> int:
    """Characters (not bytes) of a value's compact JSON, as `orjson.dumps(value).decode()` spells it."""
    return chars_of_json(orjson.dumps(value))


def chars_of_json(raw: bytes) -> int:
    return len(raw) if raw.isascii() else len(raw.decode())


@dataclass(frozen=True)
class SizedView:
    chars: int
    """The length of what `view` would put in the model's context."""
    fate: str


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

    def sized(self, sizes: ChannelSizes, *, tool: str = "tool", declared_max_chars: int | None = None) -> SizedView:
        """What `view` gives, in length and fate, for a result whose channels have these sizes."""
        ...


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
            parts.append(_link_line(block))
    return "\n".join(parts)


def _link_line(block: dict[str, Any]) -> str:
    return f"[Resource link: {block.get('name', '')}] {block.get('uri', '')}"


@dataclass(frozen=True)
class PlainClient:
    """Shows the text blocks, whatever their size."""

    name: str = "plain"

    def channel(self, body: dict[str, Any]) -> str:
        return text_of(body)

    def view(self, body: dict[str, Any], *, tool: str = "tool", declared_max_chars: int | None = None) -> ClientView:
        return ClientView(text_of(body), "inline")

    def sized(self, sizes: ChannelSizes, *, tool: str = "tool", declared_max_chars: int | None = None) -> SizedView:
        return SizedView(sizes.text, "inline")


@dataclass(frozen=True)
class ClaudeCodeClient:
    """Claude Code's MCP result handling (see the module docstring for the rules and their order)."""

    name: str = "claude-code"
    max_output_chars: int = CLAUDE_CODE_MAX_OUTPUT_CHARS
    inline_chars: int = CLAUDE_CODE_INLINE_CHARS
    preview_chars: int = CLAUDE_CODE_PREVIEW_CHARS
    chars_per_token: float = CHARS_PER_TOKEN

    @property
    def max_output_tokens(self) -> int:
        """The rejection bound in tokens at this model's estimate (chars / 4)."""
        return int(self.max_output_chars / self.chars_per_token)

    def inline_limit(self, declared_max_chars: int | None) -> int:
        """Chars shown inline: the default, or the tool's larger declaration (capped where Claude Code caps it)."""
        if declared_max_chars is None:
            return self.inline_chars
        return max(self.inline_chars, min(declared_max_chars, CLAUDE_CODE_MAX_DECLARED_CHARS))

    def channel(self, body: dict[str, Any]) -> str:
        structured = body.get("structuredContent")
        return orjson.dumps(structured).decode() if structured is not None else _text_and_links(body)

    def fate(self, chars: int, declared_max_chars: int | None) -> str:
        """What happens to a result whose channel has `chars` characters (the module docstring's rules, in order)."""
        if chars > self.max_output_chars:
            return "rejected"
        if chars > self.inline_limit(declared_max_chars):
            return "file"
        return "inline"

    @staticmethod
    def saved_path(digest: str) -> str:
        """Where the CLI saves a large result; `digest` is 16 hex chars of the content's hash."""
        return f"/home/user/.claude/projects/-work-project/tool-results/mcp-{digest}.txt"

    def rejection(self, chars: int, digest: str) -> str:
        path = self.saved_path(digest)
        return (
            f"Error: result ({chars:,} characters) exceeds maximum allowed tokens. Output has been saved to {path}.\n"
            "Format: Plain text\n"
            "Use offset and limit parameters to read specific portions of the file, search within it for specific "
            "content, and jq to make structured queries.\n"
            "REQUIREMENTS FOR SUMMARIZATION/ANALYSIS/REVIEW:\n"
            f"- You MUST read the content from the file at {path} in sequential chunks until 100% of the content has "
            "been read.\n"
            "- If you receive truncation warnings when reading the file, reduce the chunk size until you have read "
            "100% of the content without truncation.\n"
            "- Before producing ANY summary or analysis, you MUST explicitly describe what portion of the content you "
            "have read. ***If you did not read the entire content, you MUST explicitly state this.***\n"
            "- If after a few attempts you cannot read the file (file not found, lines too long for Read's "
            "offset/limit, no shell access), STOP retrying. Summarize what you were able to read, explicitly state "
            "which portion you could not read and why, and proceed.\n"
        )

    def filed_header(self, chars: int, digest: str) -> str:
        """The message before a filed result's preview."""
        return (
            f"<persisted-output>\nOutput too large ({chars / 1024:.1f}KB). Full output saved to: "
            f"{self.saved_path(digest)}\n\nPreview (first {self.preview_chars // 1000}KB):\n"
        )

    FILED_FOOTER = "\n...\n</persisted-output>"

    def view(self, body: dict[str, Any], *, tool: str = "tool", declared_max_chars: int | None = None) -> ClientView:
        text = self.channel(body)
        fate = self.fate(len(text), declared_max_chars)
        if fate == "inline":
            return ClientView(text, fate)
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        if fate == "rejected":
            return ClientView(self.rejection(len(text), digest), fate)
        preview = text[: self.preview_chars]
        return ClientView(self.filed_header(len(text), digest) + preview + self.FILED_FOOTER, fate)

    def sized(self, sizes: ChannelSizes, *, tool: str = "tool", declared_max_chars: int | None = None) -> SizedView:
        chars = sizes.structured if sizes.structured is not None else sizes.text + sizes.links
        fate = self.fate(chars, declared_max_chars)
        if fate == "rejected":
            return SizedView(len(self.rejection(chars, "0" * 16)), fate)
        if fate == "file":
            preview = min(chars, self.preview_chars)
            return SizedView(len(self.filed_header(chars, "0" * 16)) + preview + len(self.FILED_FOOTER), fate)
        return SizedView(chars, fate)


CLIENTS: dict[str, ClientModel] = {"plain": PlainClient(), "claude-code": ClaudeCodeClient()}


def client_model(name: str) -> ClientModel:
    """The client model by name; a clear error naming the choices otherwise."""
    try:
        return CLIENTS[name]
    except KeyError:
        raise ValueError(f"unknown client {name!r}: choose one of {', '.join(sorted(CLIENTS))}") from None
