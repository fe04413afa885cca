"""The proxy's own tools, by name: always listed (recall, expand) and search mode's (search, invoke)."""

from __future__ import annotations

from . import expand, invoke, recall, tool_search
from .registry import OwnTool


def load_own_tools() -> tuple[dict[str, OwnTool], dict[str, OwnTool]]:
    """(always-listed tools by name, tools listed only when the catalog's presentation asks for them)."""
    always = {module.TOOL.name: OwnTool(module.TOOL, module.handle) for module in (recall, expand)}
    optional = {module.TOOL.name: OwnTool(module.TOOL, module.handle) for module in (tool_search, invoke)}
    return always, optional
