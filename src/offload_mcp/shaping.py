"""The seam between forwarding and economics: shape one downstream result.

The server calls `ResultShaper.shape` once per downstream tool result, on
arrival, in a worker thread (SQLite is synchronous). Order: reducers
(reducers/) -> result policy (policy/) -> ledger commit (store/) -> the bytes
the client receives. Every stash entry and offloaded body is committed before
a marker or stub is returned; when the ledger cannot be written the original
result goes back unmodified and the cause is logged.

PLACEHOLDER until issue 3/4 land: passes every result through unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import mcp_types as types


@dataclass(frozen=True)
class CallInfo:
    """What the shaper knows about the call that produced a result."""

    server: str
    tool: str
    """The name the client called (prefixed if the catalog prefixed it)."""
    downstream_tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    session_id: str = "default"
    output_schema: dict[str, Any] | None = None


class ResultShaper:
    def __init__(self, settings: Any, ledger: Any | None = None) -> None:
        self.settings = settings
        self.ledger = ledger

    def shape(self, call: CallInfo, result: types.CallToolResult) -> types.CallToolResult:
        return result


def build_shaper(settings: Any, ledger_path: Any | None = None) -> ResultShaper:
    """The shaper the server uses: opens the ledger (path override from `--ledger`).

    If the ledger cannot be opened the shaper still forwards results unmodified
    (never a stub without a body) and logs why. PLACEHOLDER until issue 3.
    """
    return ResultShaper(settings, None)
