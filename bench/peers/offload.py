"""offload-mcp as a peer: its own shaper in-process, and its proxy as a subprocess.

In-process (`Shaping`): the same `ResultShaper` the server runs (shaping/),
with a throwaway ledger, one session per trajectory, so corpus records are
shaped exactly as they would be on arrival. Every shaped result is then
restored through the ledger (`get_body` for a `trm_` stub, `get_stash` for each
`<<cg:HASH>>` marker) and compared with the original byte for byte; a record
that does not come back is counted as lost, never as a win.

As a proxy (`proxy_command`): `offload-mcp serve --ledger L CMD ARGS...`, the
inline one-server form, which every latency and large-output row uses.
"""

from __future__ import annotations

import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp_types as types

TRM_RE = re.compile(r"\btrm_[0-9A-Za-z_-]{6,}")
MARKER_RE = re.compile(r"<<cg:([0-9a-f]{16})>>")


def proxy_command(downstream: list[str], ledger: Path, extra: list[str] | None = None) -> list[str]:
    exe = shutil.which("offload-mcp") or str(Path(sys.executable).parent / "offload-mcp")
    return [exe, "serve", "--ledger", str(ledger), *(extra or []), *downstream]


def _text_of_body(body: dict[str, Any]) -> str:
    return "\n".join(b.get("text", "") for b in body.get("content", []) if b.get("type") == "text")


@dataclass
class Restore:
    ok: bool
    via: str  # "inline" | "stub" | "markers" | "lost"


def restore(original: str, shown: str, ledger: Any) -> Restore:
    """Can the model get `original` back, exactly, from what it was shown, through the ledger alone?

    Covers each way the proxy hands bytes back: a `trm_` stub (the stored body,
    as `recall_tool_result` pages it), a whole-output trailer marker (its stash is
    the untouched original, as `context_guru_expand` returns it), and segment
    markers (each stash entry spliced back where its marker stands).
    """
    from offload_mcp.store.ledger import UnknownId

    if shown == original:
        return Restore(True, "inline")
    for trm in dict.fromkeys(TRM_RE.findall(shown)):
        try:
            if _text_of_body(ledger.get_body(trm)) == original:
                return Restore(True, "stub")
        except UnknownId:
            continue
    hashes = list(dict.fromkeys(MARKER_RE.findall(shown)))
    if not hashes:
        return Restore(False, "lost")
    stash: dict[str, str] = {}
    for h in hashes:
        try:
            stash[h] = ledger.get_stash(h)
        except UnknownId:
            pass
    if original in stash.values():
        return Restore(True, "markers")
    text = shown
    for _ in range(8):  # segment form: splice each cut back, nested cuts included
        if not MARKER_RE.search(text):
            break
        try:
            text = MARKER_RE.sub(
                lambda m: stash[m.group(1)] if m.group(1) in stash else ledger.get_stash(m.group(1)), text
            )
        except UnknownId:
            break
    return Restore(text == original, "markers" if text == original else "lost")


def shaper_status() -> str:
    """'' when the real shaper is in the tree, else why the offload rows are missing."""
    try:
        from offload_mcp import shaping
    except Exception as err:  # pragma: no cover - import failure is reported, not raised
        return f"offload_mcp.shaping does not import: {err}"
    if not hasattr(shaping.ResultShaper, "shape_with_report"):
        return "offload-mcp's shaper has not landed yet (shaping.py is still the pass-through placeholder)"
    return ""


class Shaping:
    """The server's shaper with a private ledger at `ledger_path`."""

    def __init__(self, ledger_path: Path, settings: Any | None = None) -> None:
        from offload_mcp.config import OffloadSettings
        from offload_mcp.shaping import build_shaper
        from offload_mcp.store.ledger import Ledger

        self.settings = settings or OffloadSettings()
        self.shaper = build_shaper(self.settings, ledger_path)
        self.ledger = Ledger.open(self.settings.ledger, ledger_path)

    def shape(self, text: str, *, tool: str, arguments: dict[str, Any], session: str) -> tuple[str, Any]:
        from offload_mcp.shaping import CallInfo

        call = CallInfo(server="corpus", tool=tool, downstream_tool=tool, arguments=arguments, session_id=session)
        result = types.CallToolResult(content=[types.TextContent(type="text", text=text)])
        if hasattr(self.shaper, "shape_with_report"):
            shaped, report = self.shaper.shape_with_report(call, result)
        else:
            shaped, report = self.shaper.shape(call, result), None
        out = "\n".join(b.text for b in shaped.content if isinstance(b, types.TextContent))
        return out, report

    def close(self) -> None:
        for thing in (self.ledger, getattr(self.shaper, "ledger", None)):
            close = getattr(thing, "close", None)
            if close:
                close()
