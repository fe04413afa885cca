"""The stub an offloaded result becomes: small, deterministic, useful on its own.

It carries the `trm_` id, the tool and the size (chars, estimated tokens), a
structural index (describe.py), a short head preview, and one line saying how
to call `recall_tool_result`. It is a pure function of (body, tool name,
id, settings): no clocks, no counters, so identical input and config give
identical bytes and the client's prompt cache stays warm.

outputSchema: a client validates `structuredContent` against the tool's
declared `outputSchema` (the Python SDK raises when it is missing or does
not conform). So when the downstream tool declared one, the stub keeps the
original `structuredContent` if it is small (at most `keep_chars`);
otherwise it builds a small stand-in — every long string replaced by a
pointer to recall, every long array cut to its first items — and keeps it
only if it still validates against the schema. If no small valid stand-in
exists, `structured_stand_in` returns None and the shaper keeps the result
inline (reason `output_schema`) rather than break the client.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import orjson

from .describe import describe_json, describe_text, parse_json_text

RecallMode = Literal["window", "structural", "both"]

_PREVIEW_LINES = 6
_PREVIEW_LINE_CHARS = 120


def _est_tokens(chars: int, chars_per_token: float) -> int:
    return int(round(chars / chars_per_token))


def text_blocks(body: Mapping[str, Any]) -> list[str]:
    """The model-visible text of each text block (and embedded text resource) of a stored result."""
    out: list[str] = []
    for block in body.get("content") or []:
        if block.get("type") == "text":
            out.append(block.get("text", ""))
        elif block.get("type") == "resource" and isinstance(block.get("resource"), dict) and "text" in block["resource"]:
            out.append(block["resource"]["text"])
    return out


def recall_hint(trm_id: str, mode: RecallMode, *, has_json: bool = True) -> str:
    styles = []
    if mode in ("window", "both") or not has_json:
        styles += ['query="text"', "offset=0, max_chars=8000", 'lines="1-200"']
    if mode in ("structural", "both") and has_json:
        styles.append('json_path="$.key"')
    return f'Get any part: recall_tool_result(mem_id="{trm_id}", {" | ".join(styles)})'


def build_stub(
    *,
    trm_id: str,
    tool: str,
    body: Mapping[str, Any],
    chars: int,
    chars_per_token: float = 4.0,
    budget_tokens: int = 250,
    recall_mode: RecallMode = "both",
    reason: str = "",
) -> str:
    """The stub text. Stays within `budget_tokens` by shortening the preview, then the index."""
    texts = text_blocks(body)
    structured = body.get("structuredContent")
    header = f"[offloaded tool result {trm_id}] {tool}: {chars:,} chars (~{_est_tokens(chars, chars_per_token):,} tokens)"
    if len(texts) > 1:
        header += f" in {len(texts)} text blocks"
    if reason:
        header += f"; {reason}"
    index_lines = []
    for i, text in enumerate(texts[:3]):
        label = f"block {i + 1}: " if len(texts) > 1 else ""
        index_lines.append(f"shape: {label}{describe_text(text)}")
    if len(texts) > 3:
        index_lines.append(f"shape: +{len(texts) - 3} more text blocks")
    if structured is not None and (not texts or _structured_differs(texts, structured)):
        index_lines.append(f"structuredContent: {describe_json(structured)}")
    preview_source = texts[0] if texts else (orjson.dumps(structured).decode() if structured is not None else "")
    has_json = structured is not None or any(parse_json_text(t) is not None for t in texts[:1])
    hint = recall_hint(trm_id, recall_mode, has_json=has_json)
    budget = int(budget_tokens * chars_per_token)

    for preview_lines in (_PREVIEW_LINES, 3, 1, 0):
        preview = _preview(preview_source, preview_lines)
        for index in (index_lines, [_clip(line, 160) for line in index_lines], [_clip(index_lines[0], 120)] if index_lines else []):
            parts = [header, *index]
            if preview:
                parts.append("head:\n" + preview)
            parts.append(hint)
            stub = "\n".join(parts)
            if len(stub) <= budget:
                return stub
    return "\n".join([_clip(header, max(80, budget - len(hint) - 1)), hint])


def _structured_differs(texts: list[str], structured: Any) -> bool:
    # Many servers put the same data in both places; describe it once.
    if len(texts) != 1:
        return True
    try:
        return orjson.loads(texts[0]) != structured
    except orjson.JSONDecodeError:
        return True


def _preview(text: str, max_lines: int) -> str:
    if max_lines <= 0 or not text:
        return ""
    lines = text.split("\n", max_lines)[:max_lines]
    return "\n".join("  " + _clip(line.rstrip("\r"), _PREVIEW_LINE_CHARS) for line in lines)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ------------------------------------------------------------------ outputSchema

_STRING_KEEP = 200
_ARRAY_KEEP = 3


def structured_stand_in(
    structured: Any, output_schema: Mapping[str, Any], trm_id: str, *, keep_chars: int
) -> tuple[Any, str] | None:
    """A `structuredContent` the client will accept alongside the stub, and how it was made.

    Returns (value, "kept") when the original is at most `keep_chars` of JSON,
    (value, "stand_in") when a shrunken copy validates against the schema,
    or None when neither is possible.
    """
    if len(orjson.dumps(structured)) <= keep_chars:
        return structured, "kept"
    candidate = _shrink(structured, "$", trm_id)
    if len(orjson.dumps(candidate)) > keep_chars:
        return None
    if not _validates(candidate, output_schema):
        return None
    return candidate, "stand_in"


def _shrink(value: Any, path: str, trm_id: str) -> Any:
    if isinstance(value, str) and len(value) > _STRING_KEEP:
        return f'[offloaded: {len(value):,} chars; recall_tool_result(mem_id="{trm_id}", json_path="{path}")]'
    if isinstance(value, list):
        head = value[:_ARRAY_KEEP] if len(value) > _ARRAY_KEEP else value
        return [_shrink(v, f"{path}[{i}]", trm_id) for i, v in enumerate(head)]
    if isinstance(value, dict):
        return {k: _shrink(v, f"{path}.{_path_key(k)}", trm_id) for k, v in value.items()}
    return value


def _path_key(key: str) -> str:
    return key if key.isidentifier() else "'" + key.replace("'", "\\'") + "'"


def _validates(value: Any, schema: Mapping[str, Any]) -> bool:
    from jsonschema.validators import validator_for
    from referencing import Registry

    try:
        cls = validator_for(schema)
        return next(iter(cls(schema, registry=Registry()).iter_errors(value)), None) is None
    except Exception:  # an unusable schema cannot be satisfied knowingly
        return False
