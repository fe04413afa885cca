"""What the client does alone: Claude Code's own handling of large MCP results, as a policy.

No proxy runs; this models what reaches the model when Claude Code receives a
result directly (the behaviour the issue and DESIGN.md describe):

- over MAX_MCP_OUTPUT_TOKENS (25,000 tokens by default, counted here as
  chars / 4 like the rest of the benchmark) the result is rejected: the model
  sees a short error asking for pagination, and the bytes are lost (the model
  must call the tool again, differently, to see any of them);
- otherwise a text result over 50,000 chars is saved to a file: the model
  sees a path and a ~2,000-char preview, and can re-read the file with its
  Read tool (every byte recoverable, at the cost of reading it back);
- everything else goes to the model inline.

Newer Claude Code releases persist over-limit results to a file instead of
rejecting them; `persist_over_limit=True` models that variant.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_MCP_OUTPUT_TOKENS = 25_000
PERSIST_OVER_CHARS = 50_000
PREVIEW_CHARS = 2_000
CHARS_PER_TOKEN = 4.0


@dataclass(frozen=True)
class ClientOutcome:
    fate: str  # "inline" | "file" | "rejected"
    chars_to_model: int
    chars_recoverable: int
    """Of the original, how many chars the model can still get back exactly."""


def _rejection_message(tool: str, tokens: int) -> str:
    return (
        f'Error: MCP tool "{tool}" response ({tokens} tokens) exceeds maximum allowed tokens '
        f"({MAX_MCP_OUTPUT_TOKENS}). Please use pagination, filtering, or limit parameters to reduce the response size."
    )


def _file_message(chars: int) -> str:
    return (
        f"Output too large ({chars} characters). Full output saved to: "
        "/home/user/.claude/projects/-work-project/tool-results/mcp-result-0123456789abcdef.txt\n\n"
        f"Preview (first {PREVIEW_CHARS} characters):\n"
    )


def claude_code_alone(text: str, tool: str = "tool", *, persist_over_limit: bool = False) -> ClientOutcome:
    chars = len(text)
    tokens = int(chars / CHARS_PER_TOKEN)
    if tokens > MAX_MCP_OUTPUT_TOKENS and not persist_over_limit:
        return ClientOutcome("rejected", len(_rejection_message(tool, tokens)), 0)
    if chars > PERSIST_OVER_CHARS:
        return ClientOutcome("file", len(_file_message(chars)) + PREVIEW_CHARS, chars)
    return ClientOutcome("inline", chars, chars)
