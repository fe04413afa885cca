"""collapse: the content-agnostic last resort for an oversized output — a head/tail window.

How it works: above `max_tokens` (estimated) the output keeps `head_lines` +
`tail_lines` lines around an omission line carrying the marker, when that at
least halves the output in bytes and fits the budget. Otherwise (the one-line
JSON case, or huge lines inside the window) it keeps a character window: the
budget starts at `max_tokens` x 4 characters (never above the content), is
split head:tail in the head_lines:tail_lines ratio, and is tightened up to 3
passes while a density-aware estimate of the window overshoots `max_tokens`
(dense JSON runs nearer 2.5 chars/token), never below a 200-character floor so
the model always has a cue about what to expand. Cuts fall on character
boundaries (a Python str slice never splits a code point). The choice is made
on bytes only, so the same content always yields the same bytes.
When it shines: huge logs and API responses nothing more specific handled.
When it is inert: `below_max_tokens`, `too_few_lines_and_chars`,
`already_marked`, `kept_verbatim_after_expand`, `marker_no_win`.
"""

from __future__ import annotations

import re

from .base import (
    EXPAND_CUE,
    Declined,
    Outcome,
    ReduceContext,
    cg_hash,
    common_decline,
    estimate_tokens,
    marker,
    never_worse,
)
from .settings import CollapseSettings

CHAR_FLOOR = 200
MAX_PASSES = 3
_PIECE_RE = re.compile(r"[A-Za-z]+|\d{1,3}|[^\sA-Za-z\d]")


def dense_token_estimate(text: str, chars_per_token: float) -> float:
    """Tokens for the fit loop: the larger of chars/ratio and a count of words, digit groups and symbols.

    Punctuation-heavy text (JSON) tokenizes far denser than prose; counting
    symbols individually catches that without a tokenizer dependency.
    """
    return max(len(text) / chars_per_token, len(_PIECE_RE.findall(text)) * 0.75)


def _omission(first: int, last: int, total: int, unit: str, offset: int, hash_: str) -> str:
    """Which lines/chars are gone and the expand offset where they start: a cut the model can act on."""
    return f"... ({unit} {first}-{last} of {total} omitted; expand from offset {offset}) {marker(hash_)} {EXPAND_CUE}"


class Collapse:
    name = "collapse"
    yields_to_offload = True
    """It windows an output (a head and a tail of lines): a stub with an index and sliced recall serves better."""

    def __init__(self, settings: CollapseSettings) -> None:
        self.settings = settings
        self.head = max(settings.head_lines, 0)
        self.tail = max(settings.tail_lines, 0)

    def reduce(self, text: str, ctx: ReduceContext) -> Outcome:
        max_tokens = self.settings.max_tokens
        if estimate_tokens(text, ctx) <= max_tokens:
            return Declined("below_max_tokens")
        if (gate := common_decline(text, ctx)) is not None:
            return gate
        hash_ = cg_hash(text)
        by_lines = self._line_window(text, hash_, max_tokens * ctx.chars_per_token)
        if by_lines is not None:
            return never_worse(text, by_lines, hash_)
        if len(text) <= CHAR_FLOOR:
            return Declined("too_few_lines_and_chars")
        return never_worse(text, self._char_window(text, hash_, max_tokens, ctx.chars_per_token), hash_)

    def _line_window(self, text: str, hash_: str, budget_chars: float) -> str | None:
        head, tail = self.head, self.tail
        if head + tail == 0:
            return None
        lines = text.split("\n")
        omitted = len(lines) - head - tail
        if omitted <= 0:
            return None
        kept_head = lines[:head]
        kept_tail = lines[len(lines) - tail :] if tail else []
        offset = sum(len(line) + 1 for line in kept_head)
        note = _omission(head + 1, head + omitted, len(lines), "lines", offset, hash_)
        window = "\n".join([*kept_head, note, *kept_tail])
        # bytes, not line counts: huge lines inside the window must not pass as a cut
        if len(window.encode("utf-8", "surrogatepass")) * 2 > len(text.encode("utf-8", "surrogatepass")):
            return None
        if len(window) > budget_chars:
            return None
        return window

    def _char_window(self, text: str, hash_: str, max_tokens: int, cpt: float) -> str:
        head_share = 0.5 if self.head + self.tail == 0 else self.head / (self.head + self.tail)
        budget = max(min(max_tokens * cpt, len(text)), CHAR_FLOOR)
        window = ""
        for _ in range(MAX_PASSES):
            head_chars = int(budget * head_share)
            tail_chars = int(budget) - head_chars
            omitted = len(text) - head_chars - tail_chars
            tail_part = text[len(text) - tail_chars :] if tail_chars else ""
            note = _omission(head_chars, head_chars + omitted - 1, len(text), "chars", head_chars, hash_)
            window = f"{text[:head_chars]}\n{note}\n{tail_part}"
            measured = dense_token_estimate(text[:head_chars], cpt) + dense_token_estimate(tail_part, cpt)
            if measured <= max_tokens or budget <= CHAR_FLOOR:
                break
            budget = max(budget * max_tokens / measured * 0.95, CHAR_FLOOR)
        return window
