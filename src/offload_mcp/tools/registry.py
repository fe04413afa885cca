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

from ..tool_names import ALWAYS_LISTED, EXPAND, RECALL

__all__ = ["ALWAYS_LISTED", "EXPAND", "RECALL", "OwnTool", "ToolEnv", "error_result", "load_own_tools", "text_result"]


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


# ---- loading own tools (used by the server) -------------------------------

OWN_TOOL_MODULES: dict[str, str] = {
    RECALL: "offload_mcp.tools.recall",
    EXPAND: "offload_mcp.tools.expand",
}
"""Always-listed own tools -> the module that implements them."""

OPTIONAL_TOOL_MODULES: tuple[str, ...] = ("offload_mcp.tools.tool_search", "offload_mcp.tools.invoke")
"""Own tools listed only when the catalog's presentation asks for them (search mode)."""

Handler = Callable[[dict[str, Any], ToolEnv], Awaitable[types.CallToolResult]]


@dataclass(frozen=True)
class OwnTool:
    tool: types.Tool
    handle: Handler
    implemented: bool = True


def _placeholder(name: str) -> OwnTool:
    tool = types.Tool(
        name=name,
        description=f"{name} (not implemented yet in this build).",
        input_schema={"type": "object", "properties": {}, "additionalProperties": True},
    )

    async def handle(arguments: dict[str, Any], env: ToolEnv) -> types.CallToolResult:
        return error_result(f"{name} is not implemented yet in this build of offload-mcp.")

    return OwnTool(tool=tool, handle=handle, implemented=False)


def _load(module_name: str) -> OwnTool | None:
    import importlib
    import logging

    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name == module_name:
            return None
        raise
    tool = getattr(module, "TOOL", None)
    handle = getattr(module, "handle", None)
    if not isinstance(tool, types.Tool) or handle is None:
        logging.getLogger(__name__).warning("%s lacks TOOL/handle; not loaded", module_name)
        return None
    return OwnTool(tool=tool, handle=handle)


def load_own_tools() -> tuple[dict[str, OwnTool], dict[str, OwnTool]]:
    """(always-listed tools by name, optional tools by name); placeholders for missing always-listed ones."""
    always: dict[str, OwnTool] = {}
    for name, module_name in OWN_TOOL_MODULES.items():
        loaded = _load(module_name)
        always[name] = loaded if loaded is not None and loaded.tool.name == name else _placeholder(name)
    optional: dict[str, OwnTool] = {}
    for module_name in OPTIONAL_TOOL_MODULES:
        loaded = _load(module_name)
        if loaded is not None:
            optional[loaded.tool.name] = loaded
    return always, optional
