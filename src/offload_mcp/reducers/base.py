"""The one interface every reducer shares, and the `<<cg:HASH>>` marker.

A reducer is a pure function of (text, context): it either acts, returning the
shorter text and the originals it cut (stashed behind markers), or declines
with a named reason. Reducers never write to the ledger themselves; the shaper
commits every stash entry before any marker reaches the client.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..session import SessionMemory as SessionMemory
from ..session import cg_hash as cg_hash

MARKER_RE = re.compile(r"<<cg:([0-9a-f]{16})>>")
HASH_RE = re.compile(r"^[0-9a-f]{16}$")


def marker(hash_: str) -> str:
    return f"<<cg:{hash_}>>"


def has_marker(text: str) -> bool:
    return MARKER_RE.search(text) is not None


@dataclass(frozen=True)
class ReduceContext:
    tool: str
    arguments: dict[str, Any]
    session: SessionMemory
    chars_per_token: float = 4.0


@dataclass(frozen=True)
class Acted:
    text: str
    stash: dict[str, str]
    """cg hash -> the exact original segment it replaces."""


@dataclass(frozen=True)
class Declined:
    reason: str


Outcome = Acted | Declined


@dataclass(frozen=True)
class FloorTerms:
    """What a pipeline's reducers promise about its output, for the line scan of Pipeline.floor_chars.

    The scan counts every distinct line once (blank lines nothing), as the reducers that give a floor
    leave each distinct line in the output once; each such reducer adds its own term (Reducer.floor)."""

    cap: int = 0
    """Lines are cut to no fewer than this many chars (0: no line is cut)."""
    keeps_whole: Callable[[str], bool] | None = None
    """A line the cap never cuts (None: every line over the cap may be cut)."""
    clean_lines: Callable[[str], list[str]] | None = None
    """A noisy text's lines as a reducer rewrites them, one chunk at a time (None: the lines as they are).
    A rewritten line counts at most `cap` chars, whether `keeps_whole` holds or not."""
    drop_lines: Callable[[list[str]], list[str]] | None = None
    """The rewritten lines less those the reducer removes (applied after `clean_lines`)."""
    json_head_unbounded: bool = False
    """A rewritten text whose first non-blank line opens a JSON document has no floor (it may re-encode)."""


class Reducer(Protocol):
    """A reducer: `name` and `reduce`. Two optional members say how it relates to the rest of the shaping
    (Pipeline reads them with `floor_of` and `yields_to_offload`; a reducer without them gives no floor
    and does not yield):

    - `floor(text, ctx, terms) -> FloorTerms | None`: `terms` with this reducer's promise added, or None
      when it promises no lower bound on its output for `text` (it may cut anything);
    - `yields_to_offload: bool`: it windows an output (keeps a head and a tail) where a stub with an
      index and sliced recall serves better, so the shaper first judges the output reduced without it;
    - `shows_every_value: bool`: its output leaves every value in the model's context, so dedup may later
      point at a copy seen through it.
    """

    name: str

    def reduce(self, text: str, ctx: ReduceContext) -> Outcome: ...


def floor_of(reducer: Reducer, text: str, ctx: ReduceContext, terms: FloorTerms) -> FloorTerms | None:
    """`reducer.floor(...)` when it declares one, else None (no lower bound)."""
    floor: Callable[[str, ReduceContext, FloorTerms], FloorTerms | None] | None = getattr(reducer, "floor", None)
    return None if floor is None else floor(text, ctx, terms)


def yields_to_offload(reducer: Reducer) -> bool:
    return bool(getattr(reducer, "yields_to_offload", False))


def shows_every_value(reducer: Reducer) -> bool:
    return bool(getattr(reducer, "shows_every_value", False))


EXPAND_CUE = "[full output: call context_guru_expand]"
"""The trailer a whole-output marker carries (seed: extract, collapse, linecap)."""


def trailer(hash_: str) -> str:
    return f"{marker(hash_)} {EXPAND_CUE}"


def estimate_tokens(text: str, ctx: ReduceContext) -> float:
    """The project-wide estimate (chars / chars_per_token): depends on bytes only, so replay-safe."""
    return len(text) / ctx.chars_per_token


def common_decline(text: str, ctx: ReduceContext) -> Declined | None:
    """The two gates every cutting reducer shares: marked content, and content the model expanded."""
    if has_marker(text):
        return Declined("already_marked")
    if ctx.session.expanded and cg_hash(text) in ctx.session.expanded:
        return Declined("kept_verbatim_after_expand")
    return None


def never_worse(original: str, reduced: str, reducer_stash_hash: str) -> Outcome:
    """Commit only if the result, marker included, is smaller (in characters)."""
    if len(reduced) >= len(original):
        return Declined("marker_no_win")
    return Acted(reduced, {reducer_stash_hash: original})
