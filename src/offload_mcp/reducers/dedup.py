"""dedup: an output byte-identical to an earlier one in the same session becomes a pointer.

How it works: the shaper records the cg hash of every output the model received
(`Pipeline.commit_session`) with a short description of the call that produced
it. A later output with the same hash is replaced by
``[repeat of earlier `git_status`; expand <<cg:HASH>>]``. The pointer names the
producing call, never a position: a position is unresolvable for the model and
would make the bytes depend on where the output sits.
Exact bytes only: a whitespace-insensitive key would make the identity claim false.
Only a copy the model saw with every value is pointed at (Pipeline.commit_session):
after linecap, smartcrush or collapse cut it, a repeat is shaped afresh, since a
pointer would hide again what the cut hid (docs/design.md, "Reducers": what
this costs and what it keeps visible).
When it shines: agents re-reading the same file or re-running the same command.
When it is inert: no exact repeat in the session (`no_earlier_copy`), small
outputs (`below_min_tokens`), outputs carrying a marker (`already_marked`).
"""

from __future__ import annotations

from typing import Any

import orjson

from .base import Acted, Declined, FloorTerms, Outcome, ReduceContext, estimate_tokens, has_marker, marker
from .settings import DedupSettings

MAX_SUMMARY_CHARS = 48
"""An argument summary longer than this is dropped: the seed caps the pointer's cost."""


def _summary(arguments: dict[str, Any]) -> str:
    if not arguments:
        return ""
    if len(arguments) == 1:
        (value,) = arguments.values()
        if isinstance(value, str):
            return value
    # sorted keys: the same arguments always render the same bytes
    try:
        return orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        return ""


def describe_call(tool: str, arguments: dict[str, Any]) -> str:
    """`tool` or `tool summary` in backticks; "" when the tool is unknown."""
    if not tool:
        return ""
    summary = _summary(arguments).strip()
    if summary and len(summary) <= MAX_SUMMARY_CHARS and "\n" not in summary and "`" not in summary:
        return f"`{tool} {summary}`"
    return f"`{tool.replace('`', '')}`"


def pointer(hash_: str, producer: str) -> str:
    if producer:
        return f"[repeat of earlier {producer}; expand {marker(hash_)}]"
    return f"[repeat of an earlier tool output; expand {marker(hash_)}]"


class Dedup:
    name = "dedup"
    shows_every_value = True
    """A pointer to a copy the model has: every value stays in its context."""

    def __init__(self, settings: DedupSettings) -> None:
        self.settings = settings

    def reduce(self, text: str, ctx: ReduceContext) -> Outcome:
        if estimate_tokens(text, ctx) <= self.settings.min_tokens:
            return Declined("below_min_tokens")
        if has_marker(text):
            return Declined("already_marked")
        hash_ = ctx.session.seen_hash(text)
        if hash_ is None:
            return Declined("no_earlier_copy")
        reduced = pointer(hash_, ctx.session.seen[hash_])
        if len(reduced) >= len(text):
            return Declined("marker_no_win")
        return Acted(reduced, {hash_: text})

    def floor(self, text: str, ctx: ReduceContext, terms: FloorTerms) -> FloorTerms | None:
        """No floor for a repeat (its pointer is a line); any other text passes through whole."""
        return None if ctx.session.seen_hash(text) is not None else terms

    def remember_hash(self, hash_: str, chars: int, ctx: ReduceContext) -> None:
        """Record an output the model received (by hash); the first producer keeps the name."""
        if chars / ctx.chars_per_token <= self.settings.min_tokens:
            return  # could never be deduplicated: not worth the memory
        ctx.session.remember(hash_, chars, describe_call(ctx.tool, ctx.arguments))
