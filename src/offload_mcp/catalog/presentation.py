"""What the client sees on tools/list: a small function of the catalog and the session's hot set.

`present(entries, own_tools, settings, **context)` returns the tools to list,
in order, plus wire-only fields per tool name (e.g. `defer_loading`) that the
server's middleware splices into the tools/list JSON, since the SDK's typed
models would drop unknown fields. The proxy's own tools are always listed,
after the downstream tools, never deferred.

Modes (`catalog.deferral`, see catalog/deferral.py): `hint` marks cold tools
for deferred loading, `search` lists the hot tools plus `search_tools` and
`invoke_tool`, `off` lists every tool exactly as given (no marks, not even
`anthropic/maxResultSizeChars`: it is the pass-through, and the byte bound
hint mode is held to).

Context the server passes: `optional_tools` (name -> Tool: the search-mode
tools), `ledger` (call history for hot-tool learning), `session_id` (the hot
set is decided at a session's first listing and kept for that session, so
its list never flaps) and `offload` (OffloadSettings: the policy bound that
`anthropic/maxResultSizeChars` declares).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types

from ..tools.names import INVOKE, SEARCH
from . import deferral
from .catalog import CatalogEntry
from .hotset import HotSet, HotSetMemory
from .settings import CatalogSettings

SEARCH_TOOL = SEARCH
INVOKE_TOOL = INVOKE

HOT_SETS = HotSetMemory()
"""Per-session learned hot sets of this process (session ids are unique per proxy)."""

PROCESS_SESSION = "process"


@dataclass(frozen=True)
class Presentation:
    tools: list[types.Tool]
    wire_extras: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Tool name -> extra top-level JSON fields for that tool on the wire."""
    hot: HotSet = field(default_factory=HotSet)
    """The hot set behind this listing, with why each tool is hot."""


def naming_servers(search_tool: types.Tool, entries: Sequence[CatalogEntry]) -> types.Tool:
    """The search tool with the servers it searches named, so the model knows when searching can help."""
    counts: dict[str, int] = {}
    for entry in entries:
        counts[entry.server] = counts.get(entry.server, 0) + 1
    if not counts:
        return search_tool
    servers = ", ".join(f"{server} ({n} tools)" for server, n in counts.items())
    return search_tool.model_copy(update={"description": f"{search_tool.description} Servers searched: {servers}."})


def present(
    entries: Sequence[CatalogEntry],
    own_tools: Sequence[types.Tool],
    settings: CatalogSettings,
    **context: Any,
) -> Presentation:
    """The listed tools for `settings.deferral`."""
    optional: Mapping[str, types.Tool] = context.get("optional_tools") or {}
    memory: HotSetMemory = context.get("hot_sets") or HOT_SETS
    own_names = [t.name for t in own_tools]
    hot = memory.hot_set(
        str(context.get("session_id") or PROCESS_SESSION),
        deferral.candidates(entries),
        settings,
        own_tools=own_names,
        history=context.get("ledger"),
        now=context.get("now"),
    )
    search_tools = [optional[name] for name in (SEARCH_TOOL, INVOKE_TOOL) if name in optional]
    mode = settings.deferral
    if mode == "search" and len(search_tools) < 2:
        mode = "hint"  # never hide cold tools without a way to reach them
    if mode == "search" and search_tools[0].name == SEARCH_TOOL:
        search_tools[0] = naming_servers(search_tools[0], entries)
    tools, extras = deferral.apply(
        mode,
        entries,
        own_tools,
        hot,
        max_result_chars=deferral.max_result_size_chars(context.get("offload")),
        search_tools=search_tools,
        invoke_name=INVOKE_TOOL,
    )
    return Presentation(tools=tools, wire_extras=extras, hot=hot)
