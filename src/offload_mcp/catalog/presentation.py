"""What the client sees on tools/list: a small pure function of the catalog.

`present(entries, own_tools, settings)` returns the tools to list, in order,
plus wire-only fields per tool name (e.g. `defer_loading`) that the server's
middleware splices into the tools/list JSON, since the SDK's typed models
would drop unknown fields. The proxy's own tools are always listed, after
the downstream tools, never deferred.

Modes (`catalog.deferral`): this initial version lists every tool as given
for every mode ("off" semantics); "hint" and "search" are added by
catalog/deferral.py and catalog/search.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types

from .catalog import CatalogEntry
from .settings import CatalogSettings


@dataclass(frozen=True)
class Presentation:
    tools: list[types.Tool]
    wire_extras: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Tool name -> extra top-level JSON fields for that tool on the wire."""


def present(
    entries: Sequence[CatalogEntry],
    own_tools: Sequence[types.Tool],
    settings: CatalogSettings,
    **context: Any,
) -> Presentation:
    """The listed tools for `settings.deferral` (currently "off" semantics for every mode)."""
    return Presentation(tools=[e.tool for e in entries] + list(own_tools), wire_extras={})
