"""The stub an offloaded result becomes: small, deterministic, useful on its own.

It carries the `trm_` id, the tool and the size (chars, estimated tokens), a
structural index (describe.py), an identifier index (index/: the ids, shas,
names, refs, first column an agent passes to its next call, one line per item
within `policy.stub_index_chars`, then how many more and how to page them), a
short head preview, and one line saying how to call `recall_tool_result`.
Shape, index and head read the text as a terminal shows it
(textscan.without_escapes: no colour escapes; the stored body keeps them).
It is a pure function of (body, tool name, id, settings): no clocks, no
counters, so identical input and config give identical bytes and the
client's prompt cache stays warm.

structuredContent: some clients (Claude Code) show their model
`structuredContent` instead of the text when a result has it, so an
offloaded result's structuredContent is the stub too: `stub_object`, the id
plus the whole stub text, never a shrunk copy that hides what it dropped.
Clients validate `structuredContent` against the tool's outputSchema, so
the proxy lists every downstream outputSchema widened by `admit_stub` to
also accept that object.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import orjson

from ..text.data_view import DataView, decode_fields, find_data, value_at, view_of
from ..text.jsonpath_keys import is_plain_key, key_segment
from .describe import describe_json, describe_text
from .index import json_index, text_index
from .textscan import TextScan, without_escapes

RecallMode = Literal["window", "structural", "both"]

_PREVIEW_LINES = 6
_PREVIEW_LINE_CHARS = 120
_EXAMPLE_KEY_CHARS = 60
"""A longer first key (a URL, a sentence) makes no example worth its room: `$.key` says the form."""


def _est_tokens(chars: int, chars_per_token: float) -> int:
    return int(round(chars / chars_per_token))


def text_blocks(body: Mapping[str, Any]) -> list[str]:
    """The model-visible text of each text block (and embedded text resource) of a stored result."""
    out: list[str] = []
    for block in body.get("content") or []:
        if block.get("type") == "text":
            out.append(block.get("text", ""))
        elif (
            block.get("type") == "resource" and isinstance(block.get("resource"), dict) and "text" in block["resource"]
        ):
            out.append(block["resource"]["text"])
    return out


def recall_hint(trm_id: str, mode: RecallMode, *, has_json: bool = True, json_example: str = "$.key") -> str:
    """The call that brings a detail back, cheapest style first: a search, then a JSONPath, then ranges."""
    styles = []
    if mode in ("window", "both") or not has_json:
        styles.append('query="text"')
    if mode in ("structural", "both") and has_json:
        styles.append(f'json_path="{json_example}"')
    if mode in ("window", "both") or not has_json:
        styles += ['lines="1-200"', "offset=0, max_chars=8000"]
    return f'Get any part: recall_tool_result(mem_id="{trm_id}", {" | ".join(styles)})'


def json_path_example(doc: Any) -> str:
    """A JSONPath into `doc` that reads a small first slice: `$.entities[0:20]`, `$[0:20]`, `$.info`, or
    the first key quoted when no key is a plain name (a map keyed by date: `$['2020-01-02']`), so the
    example is one the recall tool reads as it stands (`$.key` read nothing there)."""
    if isinstance(doc, list):
        return "$[0:20]"
    if isinstance(doc, dict):
        for key, value in doc.items():
            if isinstance(value, list) and len(value) > 20 and is_plain_key(key):
                return f"$.{key}[0:20]"
        for key in doc:
            if is_plain_key(key):
                return f"$.{key}"
        for key in doc:
            if isinstance(key, str) and len(key) <= _EXAMPLE_KEY_CHARS:
                return "$" + key_segment(key)
    return "$.key"


def _example_inside(doc: Any, decoded_path: str) -> str:
    """json_path_example(doc), read inside the first field whose JSON text was decoded when there is one
    (`$.content[0:20]`, not `$.content`: the whole file again)."""
    if decoded_path and isinstance(doc, dict):
        inner = value_at(doc, decoded_path)
        # through objects of one key (a GraphQL answer's `data.repository.issues`), to where the document
        # branches: the example reads a slice of what it holds, not the whole document once more
        for _ in range(_ENVELOPE_DEPTH):
            if not (isinstance(inner, dict) and len(inner) == 1):
                break
            ((key, value),) = inner.items()
            if not (is_plain_key(key) and isinstance(value, (dict, list)) and value):
                break
            decoded_path, inner = f"{decoded_path}.{key}", value
        if isinstance(inner, (dict, list)) and inner:
            example = json_path_example(inner)
            if example != "$.key":
                return decoded_path + example[1:]
    return json_path_example(doc)


_ENVELOPE_DEPTH = 6


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
    index_chars: int = 0,
    text_json: tuple[Any] | None = None,
) -> str:
    """The stub text. Stays within `budget_tokens` by shortening the preview, then the shape lines;
    plus, when `index_chars` > 0, an identifier index (index/) of at most `index_chars` chars.
    `text_json`: the JSON value the first text block holds (`parse_json_text`'s), when the caller
    knows it without a parse (the structuredContent it spells), else None and the text is parsed."""
    texts = text_blocks(body)
    structured = body.get("structuredContent")
    header = (
        f"[offloaded tool result {trm_id}] {tool}: {chars:,} chars (~{_est_tokens(chars, chars_per_token):,} tokens)"
        " stored, not shown here; below is only its shape and first lines"
    )
    if len(texts) > 1:
        header += f" in {len(texts)} text blocks"
    if reason:
        header += f"; {reason}"
    # The data each text holds, wherever it sits (data_view), read once: describe and the index share it
    views: list[DataView | None] = [find_data(text) for text in texts[1 if text_json else 0 : 3]]
    if text_json and texts:
        views.insert(0, view_of(text_json[0], texts[0]))
    parsed = [view.value if view is not None else None for view in views]
    # and what both read of the text (lines, head, commits), as a terminal shows it: no colour escapes
    scans = [TextScan(without_escapes(text)) for text in texts[:3]]
    index_lines = []
    for i, text in enumerate(texts[:3]):
        label = f"block {i + 1}: " if len(texts) > 1 else ""
        index_lines.append(f"shape: {label}{describe_text(text, views[i], scans[i])}")
    if len(texts) > 3:
        index_lines.append(f"shape: +{len(texts) - 3} more text blocks")
    # structuredContent's string fields that hold JSON text (server-filesystem's `{content: "<the file>"}`)
    # are read decoded, as recall's json_path reads them
    structured_doc, decoded = decode_fields(structured) if structured is not None else (None, ())
    if structured is not None and (not texts or _structured_differs(texts, structured_doc, parsed[0])):
        shown = ", ".join(decoded[:3]) + (", ..." if len(decoded) > 3 else "")
        index_lines.append(
            f"structuredContent: {describe_json(structured_doc)}"
            + (f" (with the JSON text of {shown} decoded)" if decoded else "")
        )
    preview_source = scans[0].text if texts else (orjson.dumps(structured).decode() if structured is not None else "")
    doc = structured_doc if structured is not None else (parsed[0] if parsed else None)
    if structured is not None:
        inner = decoded[0] if decoded else ""
    else:
        inner = views[0].decoded_fields[0] if views and views[0] is not None and views[0].decoded_fields else ""
    has_json = doc is not None
    hint = recall_hint(trm_id, recall_mode, has_json=has_json, json_example=_example_inside(doc, inner))
    budget = int(budget_tokens * chars_per_token)
    ids = _id_index(scans, doc, index_chars, trm_id, text_doc=parsed[0] if parsed else None)
    if ids:
        header = header.replace(
            "below is only its shape and first lines", "below is its shape, an index of its identifiers and first lines"
        )
        budget += len(ids) + 1
    return _fit_to_budget(header, index_lines, ids, preview_source, hint, budget)


def _fit_to_budget(header: str, index_lines: list[str], ids: str, preview_source: str, hint: str, budget: int) -> str:
    """The fullest stub within `budget` chars: the preview shortens first, then the shape lines; the
    header, the identifier index and the recall hint always stay (the header clipped as a last resort)."""
    for preview_lines in (_PREVIEW_LINES, 3, 1, 0):
        preview = _preview(preview_source, preview_lines)
        for index in (
            index_lines,
            [_clip(line, 160) for line in index_lines],
            [_clip(index_lines[0], 120)] if index_lines else [],
        ):
            parts = [header, *index]
            if ids:
                parts.append(ids)
            if preview:
                parts.append("head:\n" + preview)
            parts.append(hint)
            stub = "\n".join(parts)
            if len(stub) <= budget:
                return stub
    return "\n".join([_clip(header, max(80, budget - len(hint) - 1)), hint])


def _id_index(scans: list[TextScan], doc: Any, index_chars: int, trm_id: str, *, text_doc: Any) -> str:
    """The identifier index of the first text block (or structuredContent), within `index_chars`; '' if none.

    structuredContent `{content: "<the text>"}` (server-filesystem's read_text_file) holds no records of
    its own: the text is indexed instead, as text, or as the JSON it holds. A JSON file read that way had
    no index at all; its paging call is a search, as recall's json_path reads the structuredContent."""
    if index_chars <= 0:
        return ""
    index = json_index(doc, index_chars, trm_id) if doc is not None else ""
    if not index and text_doc is not None and text_doc is not doc:
        index = json_index(text_doc, index_chars, trm_id, json_paths=False)
    if not index and scans and text_doc is None:
        index = text_index(scans[0].text, index_chars, trm_id, scans[0])
    if not index:
        index = _inner_text_index(scans, doc, text_doc, index_chars, trm_id)
    return index


_INNER_TEXT_DEPTH = 4
"""String encodings and envelopes read through to find a text inside a result's JSON (double-encoded is two)."""
_INNER_TEXT_MIN_LINES = 3
_PAGE_FROM_CHARS = 60
"""A paging call finds a record's line in the stored text by its first chars, as the stored text spells them."""
_PAGE_FROM_MIN_CHARS = 8
"""Fewer chars could be found anywhere: the call is then a search for them."""


def _inner_text_index(scans: list[TextScan], doc: Any, text_doc: Any, index_chars: int, trm_id: str) -> str:
    """The index of the line-oriented text a result's JSON holds ('' if none): a git log as one JSON string
    literal (double-encoded too), inside `{"type": "text", "text": ...}` or a result field, between lines of
    prose or in a markdown fence. Its records are listed as the text's own (text_index) and paged by a char
    offset into the stored text, where the record's line is found; by a search for it if it is not.

    Why: such a result was described by its shell (a JSON object of 2 keys, a string of 290K chars) and had
    no index at all, so none of its shas, dates or reverts was in the stub."""
    stored = scans[0].text if scans else ""
    inner = None
    for source in (text_doc, doc if doc is not text_doc else None, stored):
        # the stored text's own data is text_doc, read already (find_data): only its string literals are new
        inner = _text_inside(source, 0, find=source is not stored) if source is not None else None
        if inner is not None and inner is not stored:
            break
    if inner is None or inner is stored:
        return ""

    def pager(line: int) -> str:
        start = 0
        for _ in range(line - 1):
            start = inner.find("\n", start) + 1
        end = inner.find("\n", start)
        head = inner[start : end if end >= 0 else len(inner)][:_PAGE_FROM_CHARS]
        # as the stored text spells it: as is (a fence, prose), or JSON-escaped once or twice (a string literal)
        spelled = head
        for _ in range(_INNER_TEXT_DEPTH):
            at = stored.find(spelled) if len(spelled) >= _PAGE_FROM_MIN_CHARS else -1
            if at >= 0:
                return f'recall_tool_result(mem_id="{trm_id}", offset={at}, max_chars=8000)'
            spelled = orjson.dumps(spelled).decode()[1:-1]
        return f'recall_tool_result(mem_id="{trm_id}", query={orjson.dumps(head.strip()).decode()})'

    return text_index(inner, index_chars, trm_id, pager=pager)


def _text_inside(value: Any, depth: int, *, find: bool = True) -> str | None:
    """The text of several lines `value` holds, read through JSON string literals, the data a text holds
    between lines of prose (data_view; not looked for in `value` itself unless `find`) and an object's or
    array's longest string; None when none."""
    if isinstance(value, str):
        if depth < _INNER_TEXT_DEPTH:
            if value[:1] == '"':
                try:
                    decoded = orjson.loads(value)
                except orjson.JSONDecodeError:
                    decoded = None
                if isinstance(decoded, str):
                    return _text_inside(decoded, depth + 1)
            literal = _string_literal_line(value)
            if literal is not None:
                return _text_inside(literal, depth + 1)
            view = find_data(value) if find else None
            if view is not None:
                inner = _text_inside(view.value, depth + 1)
                if inner is not None:
                    return inner
        return value if value.count("\n") >= _INNER_TEXT_MIN_LINES else None
    if depth >= _INNER_TEXT_DEPTH:
        return None
    longest = _longest_string(value, _ENVELOPE_DEPTH)
    return _text_inside(longest, depth + 1) if longest is not None else None


def _string_literal_line(text: str) -> str | None:
    """The JSON string literal a text holds on a line of its own between lines of prose or a markdown fence,
    decoded, when that line is most of the text; else None."""
    start = text.find('\n"') + 1
    if start <= 0:
        return None
    end = text.find("\n", start)
    line = text[start : end if end >= 0 else len(text)].rstrip("\r")
    if len(line) * 2 < len(text) or not line.endswith('"'):
        return None
    try:
        decoded = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return decoded if isinstance(decoded, str) else None


def _longest_string(value: Any, depth: int) -> str | None:
    """The longest string among `value`'s fields and items, `depth` levels down at most."""
    if isinstance(value, str):
        return value
    if depth <= 0:
        return None
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    best: str | None = None
    for item in items:
        found = _longest_string(item, depth - 1)
        if found is not None and (best is None or len(found) > len(best)):
            best = found
    return best


def _structured_differs(texts: list[str], structured: Any, parsed: Any) -> bool:
    # Many servers put the same data in both places; describe it once.
    if len(texts) != 1:
        return True
    if parsed is not None:  # the text's JSON, parsed once for describe and the index: not a second time here
        return bool(parsed != structured)
    try:
        return bool(orjson.loads(texts[0]) != structured)
    except orjson.JSONDecodeError:
        return True


def _preview(text: str, max_lines: int) -> str:
    """The first `max_lines` lines (`text.split("\n", max_lines)[:max_lines]`), each clipped, indented.

    Line by line with str.find: the split copied the whole rest of the text into its last piece
    once per preview length the budget loop tries, and a huge line is clipped
    from the text instead of copied whole first.
    """
    if max_lines <= 0 or not text:
        return ""
    out = []
    start = 0
    for _ in range(max_lines):
        end = text.find("\n", start)
        stop = len(text) if end < 0 else end
        if stop - start > 4 * _PREVIEW_LINE_CHARS and text[stop - 1] != "\r":
            out.append("  " + text[start : start + _PREVIEW_LINE_CHARS - 1] + "…")  # what _clip keeps of it
        else:
            out.append("  " + _clip(text[start:stop].rstrip("\r"), _PREVIEW_LINE_CHARS))
        if end < 0:
            break
        start = end + 1
    return "\n".join(out)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ------------------------------------------------------------------ structuredContent

STUB_KEY = "offloaded_result"
"""The one key of the structuredContent stub object."""

STUB_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "offload-mcp stored this result; recall it by mem_id.",
    "properties": {
        STUB_KEY: {
            "type": "object",
            "properties": {
                "mem_id": {"type": "string", "pattern": "^trm_[0-9a-f]{16}$"},
                "summary": {"type": "string"},
            },
            "required": ["mem_id", "summary"],
        }
    },
    "required": [STUB_KEY],
}
"""What a stubbed structuredContent looks like; every advertised outputSchema admits it (see `admit_stub`)."""


def stub_object(trm_id: str, stub_text: str) -> dict[str, Any]:
    """structuredContent of an offloaded result: the id and the whole stub text, never a shrunk copy.

    Claude Code shows its model structuredContent instead of the text when a result has it, so this
    channel must say on its own what is missing and how to get it: the stub text does exactly that.
    """
    return {STUB_KEY: {"mem_id": trm_id, "summary": stub_text}}


def admit_stub(schema: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The outputSchema the proxy advertises: the downstream's, or the stub object.

    Validating clients (ClientSession, mcp.Client, the Inspector) check structuredContent against the
    listed schema, so the listed schema is `{"type": "object", "anyOf": [original, STUB_SCHEMA]}`.
    `$defs`/`definitions` stay at the root so `#/$defs/...` references still resolve; any other
    local reference into the original is rebased under `#/anyOf/0`. Deterministic: same in, same out.
    """
    if schema is None:
        return None
    if not isinstance(schema, Mapping):
        return dict(schema) if schema else None
    root_keys = ("$schema", "$id", "$defs", "definitions")
    original = {k: _rebase_refs(v) for k, v in schema.items() if k not in root_keys}
    widened: dict[str, Any] = {k: schema[k] for k in ("$schema", "$id") if k in schema}
    widened["type"] = "object"
    widened["anyOf"] = [original, STUB_SCHEMA]
    for key in ("$defs", "definitions"):
        if key in schema:
            widened[key] = _rebase_refs(schema[key])
    return widened


def _rebase_refs(value: Any) -> Any:
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if (
                k == "$ref"
                and isinstance(v, str)
                and v.startswith("#/")
                and not v.startswith(("#/$defs/", "#/definitions/"))
            ):
                out[k] = "#/anyOf/0/" + v[2:]
            else:
                out[k] = _rebase_refs(v)
        return out
    if isinstance(value, list):
        return [_rebase_refs(v) for v in value]
    return value


def is_stub_object(structured: Any) -> bool:
    return isinstance(structured, dict) and set(structured) == {STUB_KEY}
