"""What recall_tool_result and context_guru_expand share: marker parsing, input errors, echoes.

Both tools read stored originals by an id the model copied from a result, and
both answer a bad argument with the same wording, so these live here rather
than in either tool (expand forwards its detail styles to recall; recall reads
`<<cg:HASH>>` markers as expand does).
"""

from __future__ import annotations

import re
from typing import Any

from ..reducers.base import HASH_RE, MARKER_RE
from .echo import ECHO_CHARS, echoed

_LOOSE_RE = re.compile(r"^(?:<<)?(?:cg:)?([0-9a-fA-F]{16})(?:>>)?$")


class BadInput(Exception):
    """An argument the caller can fix; its message is the answer's error text."""


def parse_hash(value: Any) -> str | None:
    """The 16-hex hash in a marker, `cg:HASH` or a bare hash; None when it is none of those."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    found = MARKER_RE.fullmatch(text)
    if found:
        return found.group(1)
    loose = _LOOSE_RE.match(text)
    if loose:
        candidate = loose.group(1).lower()
        return candidate if HASH_RE.match(candidate) else None
    return None


def quoted(value: Any) -> str:
    """`value` as an answer may repeat it: its repr, echoed (the caller has it already)."""
    return echoed(repr(value))


def quoted_names(names: list[str]) -> str:
    """Argument names as an error lists them: the first five, each clipped like any echo."""
    return ", ".join(n if len(n) <= ECHO_CHARS else quoted(n) for n in names[:5])
