"""A result whose body the ledger could not take: cut to what the client accepts, saying so."""

from __future__ import annotations

import os
from typing import Any

import mcp_types as types

from ..config import OffloadSettings
from ..store import LedgerUnavailable
from .body import json_chars, sent_chars

META_KEEP_CHARS = 2_000
"""A stub or a cut result keeps the result's `_meta` up to this size; a larger one stays in the ledger only."""


UNSTORED_META_KEY = "offload-mcp/unstored"
"""`_meta` key of a result cut because the ledger could not store its body: why, and how much was shown."""

_UNSTORED_WHY = {
    "ledger_error": "the ledger could not store it",
    "no_ledger": "no ledger is open to store it",
}


def cut_unstored(
    result: types.CallToolResult, body: dict[str, Any], limit: int, reason: str, *, output_schema: bool = False
) -> types.CallToolResult:
    """`result` bounded to `limit` sent characters: its first text (at a line end when one is near), a note
    saying the rest is lost unless the call is repeated, and `_meta[UNSTORED_META_KEY]`. Other content
    blocks stay; structuredContent goes (it cannot be cut and stay valid), and when the tool declares an
    outputSchema the result becomes an error, which validating clients accept without it."""
    total = sent_chars(body)
    why = _UNSTORED_WHY.get(reason, "the ledger could not store it")
    meta = {UNSTORED_META_KEY: {"reason": reason, "chars": total, "shown": 0}}
    kept_meta = dict(result.meta or {}) if json_chars(body.get("_meta")) <= META_KEEP_CHARS else {}

    def note(shown: int) -> str:
        return (
            f"\n\n[offload-mcp: cut to the first {shown:,} of {total:,} characters: the full result is larger "
            f"than the client accepts ({limit:,}) and {why}, so it cannot be recalled. "
            "Repeat the call, with narrower arguments if it has them, to see the rest.]"
        )

    overhead = len(note(total)) + json_chars({**kept_meta, **meta}) + 16
    budget = max(0, limit - overhead)
    blocks: list[Any] = []
    shown = 0
    for block in result.content:
        if not isinstance(block, types.TextContent):
            blocks.append(block)
            continue
        room = budget - shown
        if room <= 0:
            continue
        text = block.text
        if len(text) > room:
            line_end = text.rfind("\n", 0, room)
            text = text[: line_end + 1] if line_end >= room // 2 else text[:room]
        shown += len(text)
        blocks.append(block.model_copy(update={"text": text}))
    meta[UNSTORED_META_KEY]["shown"] = shown
    blocks.append(types.TextContent(text=note(shown).lstrip("\n")))
    update: dict[str, Any] = {"content": blocks, "structured_content": None, "meta": {**kept_meta, **meta}}
    if output_schema:
        update["is_error"] = True
    return result.model_copy(update=update)


def ledger_problem_for_client(
    err: LedgerUnavailable, settings: OffloadSettings, ledger_path: str | os.PathLike[str] | None
) -> str:
    """Why no ledger opened, as the model may read it (no_ledger): "the ledger", no URL, host or user."""
    from ..redaction import ledger_for_client, redact_secrets
    from ..store.location import resolve

    try:
        where = resolve(settings.ledger, ledger_path).display
    except LedgerUnavailable:
        return redact_secrets(str(err))
    return ledger_for_client(str(err), where)
