"""The proxy's own tools: one module each, one small interface.

Each own tool module exposes `TOOL` (an `mcp_types.Tool`) and
`async def handle(arguments: dict, env: ToolEnv) -> mcp_types.CallToolResult`.
Their results are never reduced or offloaded again (DESIGN: "hot" at this seam).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from ..reducers.base import SessionMemory

RECALL = "recall_tool_result"
EXPAND = "context_guru_expand"
ALWAYS_LISTED = (RECALL, EXPAND)


@dataclass
class ToolEnv:
    """What an own tool may use; built by the server per call."""

    settings: Any
    """offload_mcp.config.OffloadSettings"""
    ledger: Any | None
    """offload_mcp.store.Ledger, or None when no ledger could be opened"""
    session_id: str
    session: SessionMemory
    forward: Callable[[str, dict[str, Any]], Awaitable[types.CallToolResult]] | None = None
    """Call a catalog tool by its listed name, through the same shaping as a direct call."""
    catalog: Any | None = None


def error_result(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


def text_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)])
