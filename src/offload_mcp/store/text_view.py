"""The text a stored body is read and searched as: what recall's offsets, lines and queries address.

One text block: exactly its text; several (and embedded text resources): joined by a newline; no text
at all: the structuredContent as compact JSON. The search index holds this same text, so the line
numbers a search hit names are the ones `recall_tool_result(lines=...)` reads.
"""

from __future__ import annotations

from typing import Any

import orjson


def text_blocks(result: dict[str, Any]) -> list[str]:
    """The result's text blocks' text, then its embedded text resources' text, in order."""
    content = result.get("content") or []
    texts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
    texts += [
        b["resource"]["text"]
        for b in content
        if isinstance(b, dict)
        and b.get("type") == "resource"
        and isinstance(b.get("resource"), dict)
        and "text" in b["resource"]
    ]
    return texts


def text_view(result: dict[str, Any]) -> str:
    """The text recall reads in `result` (see the module docstring)."""
    texts = text_blocks(result)
    if texts:
        return "\n".join(texts)
    structured = result.get("structuredContent")
    return orjson.dumps(structured).decode() if structured is not None else ""
