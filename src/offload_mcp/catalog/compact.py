"""Lossless trims of a tool definition: bytes `off` passes on verbatim that no client reads differently without.

Hint mode spends bytes on marks (catalog/deferral.py); these trims are where
most of them come from, so that a hinted listing is never larger than the
same tools listed as given. Each trim removes only what the
protocol (or the schema dialect) already implies, so every client, whether
it honours the marks or not, reads the same tool:

- `execution: {"taskSupport": "forbidden"}`: the MCP default when
  `execution` is absent (2025-11-25, tasks).
- `inputSchema` / `outputSchema` `$schema` naming draft-07, 2019-09 or
  2020-12, on a schema that uses only keywords those dialects read alike
  (no `$ref`, `definitions`, tuple `items`, `dependencies`, ...). MCP
  2025-11-25 reads a schema without `$schema` as 2020-12, so the meaning is
  unchanged; Claude Code itself strips `$schema` before the model sees it.
- A property's `title` that is its name title-cased (`repo_path` ->
  `Repo Path`, what pydantic writes for every field): a function of the
  key, so it says nothing the key does not.
- Annotation hints at the value both the spec and Claude Code take when the
  hint is absent: `readOnlyHint: false`, `idempotentHint: false`, and
  `destructiveHint: false` on a read-only tool (the spec reads it only
  when `readOnlyHint` is false); an annotations object left empty.
- A description's docstring indentation: the Python SDK sends a tool's
  docstring as written (`"Do a thing.\n\n    Args:\n        a: ..."`);
  the indentation common to the lines after the first and the whitespace
  around the whole go, as Python's own `help()` shows a docstring. Relative
  indentation, line breaks and every word stay.

When it is inert: a tool with none of these (hand-written, tight
definitions) is returned as the same object. Deterministic: same tool in,
same bytes out. Descriptions are never cut: they are what the model reads
when it uses the tool.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import Any

import mcp_types as types

DIALECTS_READ_ALIKE = frozenset(
    {
        "http://json-schema.org/draft-07/schema#",
        "http://json-schema.org/draft-07/schema",
        "https://json-schema.org/draft/2019-09/schema",
        "https://json-schema.org/draft/2020-12/schema",
    }
)
"""`$schema` values under which the keywords below mean what they mean in 2020-12 (MCP's default dialect)."""

_KEYWORDS_READ_ALIKE = frozenset(
    {
        "type",
        "properties",
        "patternProperties",
        "additionalProperties",
        "propertyNames",
        "required",
        "items",
        "minItems",
        "maxItems",
        "uniqueItems",
        "contains",
        "minProperties",
        "maxProperties",
        "enum",
        "const",
        "default",
        "examples",
        "description",
        "title",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minLength",
        "maxLength",
        "pattern",
        "format",
        "anyOf",
        "oneOf",
        "allOf",
        "not",
        "if",
        "then",
        "else",
        "readOnly",
        "writeOnly",
        "$comment",
    }
)
"""Keywords draft-07 and 2020-12 define identically. Anything else (references, tuple items, ...) keeps `$schema`."""

_SUBSCHEMA = ("additionalProperties", "propertyNames", "items", "contains", "not", "if", "then", "else")
_SUBSCHEMA_MAPS = ("properties", "patternProperties")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf")

_DEFAULT_EXECUTION = {"taskSupport": "forbidden"}


def reads_alike(schema: Any, *, root: bool = True) -> bool:
    """Whether `schema` uses only keywords draft-07 and 2020-12 read alike (so its `$schema` can go)."""
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, Mapping):
        return False
    for key, value in schema.items():
        if key == "$schema" and root:
            continue
        if key not in _KEYWORDS_READ_ALIKE:
            return False
        if key in _SUBSCHEMA and not reads_alike(value, root=False):
            return False  # a list under `items` is a tuple in draft-07, not in 2020-12
        if key in _SUBSCHEMA_MAPS and not (
            isinstance(value, Mapping) and all(reads_alike(v, root=False) for v in value.values())
        ):
            return False
        if key in _SUBSCHEMA_LISTS and not (isinstance(value, list) and all(reads_alike(v, root=False) for v in value)):
            return False
    return True


def _title_of(name: str) -> str:
    """The title pydantic writes for a field named `name`."""
    return name.title().replace("_", " ")


def _drop_derived_titles(schema: Any) -> Any:
    """`schema` without property titles that only restate the property name (nested objects included)."""
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _SUBSCHEMA_MAPS and isinstance(value, Mapping):
            props: dict[str, Any] = {}
            for name, sub in value.items():
                sub = _drop_derived_titles(sub)
                if key == "properties" and isinstance(sub, Mapping) and sub.get("title") == _title_of(name):
                    sub = {k: v for k, v in sub.items() if k != "title"}
                props[name] = sub
            out[key] = props
        elif key in _SUBSCHEMA:
            out[key] = _drop_derived_titles(value)
        elif key in _SUBSCHEMA_LISTS and isinstance(value, list):
            out[key] = [_drop_derived_titles(v) for v in value]
        else:
            out[key] = value
    return out


def schema(value: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A tool schema with its implied parts trimmed (see the module doc); None stays None."""
    if value is None:
        return None
    trimmed = _drop_derived_titles(value)
    if trimmed.get("$schema") in DIALECTS_READ_ALIKE and reads_alike(trimmed):
        trimmed = {k: v for k, v in trimmed.items() if k != "$schema"}
    return trimmed


def description(text: str | None) -> str | None:
    """`text` without docstring indentation (see the module doc); None and tidy text stay as they are."""
    if not text:
        return text
    first, newline, rest = text.partition("\n")
    return (first + newline + textwrap.dedent(rest)).strip()


def _annotations(value: types.ToolAnnotations | None) -> types.ToolAnnotations | None:
    if value is None:
        return None
    drop: set[str] = set()
    if value.read_only_hint is False:
        drop.add("read_only_hint")
    if value.idempotent_hint is False:
        drop.add("idempotent_hint")
    if value.read_only_hint is True and value.destructive_hint is False:
        drop.add("destructive_hint")
    if not drop:
        return value
    kept = value.model_copy(update=dict.fromkeys(drop))
    return kept if kept.model_dump(exclude_none=True) else None


def tool(definition: types.Tool) -> types.Tool:
    """`definition` without what the protocol already implies; the same object when nothing is implied."""
    update: dict[str, Any] = {}
    tidy = description(definition.description)
    if tidy != definition.description:
        update["description"] = tidy
    input_schema = schema(definition.input_schema)
    if input_schema != definition.input_schema:
        update["input_schema"] = input_schema
    if definition.output_schema is not None:
        output_schema = schema(definition.output_schema)
        if output_schema != definition.output_schema:
            update["output_schema"] = output_schema
    execution = definition.execution
    if execution is not None and execution.model_dump(by_alias=True, exclude_none=True) == _DEFAULT_EXECUTION:
        update["execution"] = None
    annotations = _annotations(definition.annotations)
    if annotations is not definition.annotations:
        update["annotations"] = annotations
    return definition.model_copy(update=update) if update else definition
