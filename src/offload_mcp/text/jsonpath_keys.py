"""Which object keys a JSONPath may spell as plain names (`$.items`) and still read back.

jsonpath-ng's lexer takes a name of ASCII letters, digits and `_` (not first a digit), and reads
`where`, `wherenot`, `true`, `false` and `null` as words of its own; any other key must be quoted
(`$['a b']`). Two places spell paths a model copies into its next call: the stub's index
(policy/index/json_records.py, which walks only plain keys) and the JSONPath worker's match paths
(tools/jsonpath_worker.py, which quotes the rest). One rule for both, so neither shows a path the
other refuses. Kept free of imports: the worker process loads it on every evaluation.
"""

from __future__ import annotations

import re

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
PARSER_WORDS = frozenset({"where", "wherenot", "true", "false", "null"})
"""Plain-looking keys the lexer reads as words of its own."""


def is_plain_key(key: object) -> bool:
    """Whether `key` can stand in a JSONPath as `.key`, unquoted."""
    return isinstance(key, str) and _PLAIN.fullmatch(key) is not None and key not in PARSER_WORDS


def key_segment(key: str) -> str:
    """`key` as one step of a JSONPath: `.items` when plain, else quoted, `\\` and `'` escaped: `['a b']`."""
    if is_plain_key(key):
        return f".{key}"
    return "['" + key.replace("\\", "\\\\").replace("'", "\\'") + "']"
