"""The one small interface of the proxy's own tools (tools/own.py lists them).

Each own tool module exposes `TOOL` (an `mcp_types.Tool`) and
`async def handle(arguments: dict, env: ToolEnv) -> mcp_types.CallToolResult`.
Their results are never reduced or offloaded again (DESIGN: "hot" at this seam).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import mcp_types as types

from ..session import SessionMemory
from .names import ALWAYS_LISTED, EXPAND, RECALL

if TYPE_CHECKING:
    from ..catalog.catalog import Catalog
    from ..config import OffloadSettings
    from ..store import Ledger

__all__ = ["ALWAYS_LISTED", "EXPAND", "RECALL", "Handler", "OwnTool", "ToolEnv", "error_result", "text_result"]


@dataclass
class ToolEnv:
    """What an own tool may use; built by the server per call."""

    settings: OffloadSettings
    ledger: Ledger | None
    """The ledger (its BodyStore, StashStore and EventLog faces), or None when none could be opened."""
    session_id: str
    session: SessionMemory
    forward: Callable[[str, dict[str, Any]], Awaitable[types.CallToolResult]] | None = None
    """Call a catalog tool by its listed name, through the same shaping as a direct call."""
    catalog: Catalog | None = None
    owner: str | None = None
    """The caller's ledger ownership key (upstream/identity.py); None: the session id."""
    ledger_problem: str | None = None
    """Why no ledger is open, when none is (the error opening it gave), for the tools to say."""

    @property
    def ledger_owner(self) -> str:
        return self.owner or self.session_id


def owner_detail(env: ToolEnv) -> dict[str, str]:
    """`{"owner": key}` for a recall or expand event when the caller's ownership key is not its session
    (`principal:<name>`), so a principal's view of the ledger finds the event; else nothing."""
    return {"owner": env.owner} if env.owner and env.owner != env.session_id else {}


def no_ledger(env: ToolEnv) -> str:
    """ "no ledger is open in this proxy", with the reason it could not be opened when that is known:
    the model (and the user reading its transcript) learn what to fix, not only that nothing works."""
    why = f" ({env.ledger_problem})" if env.ledger_problem else ""
    return f"no ledger is open in this proxy{why}"


def error_result(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


def text_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)])


Handler = Callable[[dict[str, Any], ToolEnv], Awaitable[types.CallToolResult]]


@dataclass(frozen=True)
class OwnTool:
    tool: types.Tool
    handle: Handler
