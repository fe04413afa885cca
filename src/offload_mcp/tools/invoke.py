"""`invoke_tool`: call any tool of the wrapped servers by name (search mode).

The partner of `search_tools`: the model finds a cold tool there and calls it
here with `{"name": ..., "arguments": {...}}`. Before forwarding, the
arguments are checked against the target's inputSchema, so a mistake comes
back at once as one clear error naming every missing, unknown or mistyped
argument, with the schema to fix it — instead of a round trip to a server
that may answer less clearly. A valid call goes through `env.forward`, the
very path a direct tools/call takes: the same downstream session, timeout,
reducers, result policy and ledger, so an invoked result is shaped exactly
like a listed one.

"Unknown" means not among the schema's `properties` (nor matched by its
`patternProperties`) when the schema does not explicitly allow additional
properties: an extra argument is nearly always a misspelling, and many
servers ignore it silently.

Inert with a reason, recorded as an `invoke` event in the ledger for stats:
no catalog (`no_catalog`), unknown tool (`unknown_tool`, with the nearest
names), bad arguments (`bad_arguments`), and the proxy's own tools, which are
listed and called directly (`own_tool`). A forwarded call is recorded by the
shaper like any direct call (its `decision` event), so invoked tools count
toward hot-tool learning.
"""

from __future__ import annotations

import re
from typing import Any

import jsonschema
import mcp_types as types
import orjson
import regex

from .echo import echoed
from .names import ALWAYS_LISTED, INVOKE
from .registry import ToolEnv, error_result
from .tool_search import NAME as SEARCH_NAME
from .tool_search import index_for, note

NAME = INVOKE

TOOL = types.Tool(
    name=NAME,
    description=(
        f"Call a tool of the connected MCP servers that {SEARCH_NAME} found. `name` is the tool's name as "
        f"{SEARCH_NAME} returned it; `arguments` must match that tool's input schema. The result is the tool's own."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": f"The tool's name, from {SEARCH_NAME}."},
            "arguments": {"type": "object", "description": "The tool's arguments, per its input schema."},
        },
        "required": ["name"],
        "additionalProperties": False,
    },
)

MAX_SCHEMA_CHARS = 4_000


def argument_problems(schema: dict[str, Any], arguments: dict[str, Any]) -> list[str]:
    """Every problem with `arguments` under `schema`, deterministic order; empty when they are valid."""
    if not isinstance(schema, dict):
        return []
    problems: list[str] = []
    declared = schema.get("properties")
    properties: dict[str, Any] = declared if isinstance(declared, dict) else {}
    required = (
        [r for r in schema.get("required", []) if isinstance(r, str)]
        if isinstance(schema.get("required"), list)
        else []
    )
    missing = [name for name in required if name not in arguments]
    if missing:
        problems.append("missing required argument(s): " + ", ".join(missing))
    extra_allowed = schema.get("additionalProperties", None)
    if extra_allowed is False or (properties and extra_allowed is None):
        patterns = [p for p in (schema.get("patternProperties") or {}) if isinstance(p, str)]
        unknown = sorted(a for a in arguments if a not in properties and not any(_search(p, a) for p in patterns))
        if unknown:
            known = ", ".join(sorted(properties)) or "none"
            problems.append(f"unknown argument(s): {', '.join(unknown)} (known: {known})")
    try:
        validator_class = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        validator_class.check_schema(schema)
        validator = _with_bounded_patterns(validator_class)(schema)
    except jsonschema.SchemaError:
        return problems  # the server's own schema is broken: it will judge the call itself
    for error in sorted(
        validator.iter_errors(arguments), key=lambda e: (list(map(str, e.absolute_path)), e.validator or "", e.message)
    ):
        if error.validator in ("required", "additionalProperties") and not error.absolute_path:
            continue  # already said above, in plainer words
        where = ".".join(str(p) for p in error.absolute_path) or "(arguments)"
        problems.append(f"{where}: {_clip(error.message)}")
    return problems


PATTERN_TIMEOUT_S = 0.05
"""A server's schema `pattern` runs on the model's argument: one that backtracks catastrophically
(`^(a+)+$` on 'aaa…!') would hang the proxy, so each match is bounded and, past the bound, left
for the server to judge."""


def _search(pattern: str, text: str) -> bool:
    try:
        return regex.search(pattern, text, timeout=PATTERN_TIMEOUT_S) is not None
    except TimeoutError:
        return True  # undecided in time: do not call it unknown; the server judges it
    except (regex.error, re.error, OverflowError, RecursionError):
        return False


def _bounded_pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Any:
    if not validator.is_type(instance, "string") or not isinstance(pattern, str):
        return
    try:
        found = regex.search(pattern, instance, timeout=PATTERN_TIMEOUT_S)
    except (TimeoutError, regex.error, OverflowError, RecursionError):
        return
    if found is None:
        yield jsonschema.ValidationError(f"{_clip(repr(instance), 80)} does not match {pattern!r}")


def _bounded_pattern_properties(validator: Any, pattern_properties: Any, instance: Any, schema: Any) -> Any:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in pattern_properties.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _with_bounded_patterns(validator_class: Any) -> Any:
    return jsonschema.validators.extend(
        validator_class, {"pattern": _bounded_pattern, "patternProperties": _bounded_pattern_properties}
    )


def _clip(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def handle(arguments: dict[str, Any], env: ToolEnv) -> types.CallToolResult:
    arguments = dict(arguments or {})
    unexpected = sorted(set(arguments) - {"name", "arguments"})
    if unexpected:
        await note(env, "invoke", "refused", "bad_arguments")
        return error_result(
            f"{NAME}: unknown argument(s) {', '.join(map(echoed, unexpected[:5]))}; it takes `name` and `arguments` "
            f"(put the tool's own arguments inside `arguments`)"
        )
    name = arguments.get("name")
    if not isinstance(name, str) or not name:
        await note(env, "invoke", "refused", "bad_arguments")
        return error_result(f"{NAME}: `name` (the tool's name from {SEARCH_NAME}) is required")
    target_args = arguments.get("arguments", {})
    if target_args is None:
        target_args = {}
    if not isinstance(target_args, dict):
        await note(env, "invoke", "refused", "bad_arguments")
        return error_result(
            f"{NAME}: `arguments` must be an object of the tool's arguments, got {type(target_args).__name__}"
        )
    if name in ALWAYS_LISTED or name in (SEARCH_NAME, NAME):
        await note(env, "invoke", "refused", "own_tool")
        return error_result(f"{NAME}: `{name}` is one of offload-mcp's own tools; call it directly")
    catalog = env.catalog
    if catalog is None or env.forward is None:
        await note(env, "invoke", "refused", "no_catalog")
        return error_result(f"{NAME}: no downstream tools are available right now (no server is serving)")
    entry = catalog.lookup(name)
    if entry is None:
        near = _nearest(catalog, name)
        hint = f" Nearest names: {', '.join(near)}." if near else ""
        await note(env, "invoke", "refused", "unknown_tool", {"name": echoed(name)})
        return error_result(f"{NAME}: no tool named `{echoed(name)}`.{hint} Use {SEARCH_NAME} to find the right one.")
    problems = argument_problems(entry.tool.input_schema, target_args)
    if problems:
        schema = orjson.dumps(entry.tool.input_schema).decode()
        if len(schema) > MAX_SCHEMA_CHARS:
            schema = schema[:MAX_SCHEMA_CHARS] + "…"
        lines = "\n".join(f"- {p}" for p in problems)
        await note(env, "invoke", "refused", "bad_arguments", {"name": name, "problems": problems})
        return error_result(
            f"{NAME}: the arguments for `{name}` do not match its input schema; nothing was called.\n{lines}\ninputSchema: {schema}"
        )
    return await env.forward(name, target_args)


def _nearest(catalog: Any, name: str) -> list[str]:
    try:
        return [m.name for m in index_for(catalog).bm25(name, 3)]
    except ValueError:
        return []
