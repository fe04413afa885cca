"""tabulate: a JSON document re-encoded compactly, each array of same-keyed objects as one table.

How it works: the whole text must be one JSON document. Every array of at
least `min_rows` objects that share the same keys in the same order becomes
`{"columns": [k1, k2, ...], "rows": [[v1, v2, ...], ...]}` (recursively: a cell
may hold a table), and the document is written without indentation. Every value
stays visible, each key appears once per table instead of once per row: nothing
an agent may pass to its next call is hidden. The original bytes are stashed
behind one marker, named in a note that says what changed.
Measured reason (shared corpora, needed facts = values an agent later passed
to a tool): on `mcp_dev.jsonl.gz` it removes ~2% of all chars (pretty-printed
API documents, hourly weather, station lists) and on `dev.jsonl.gz` ~0.2%
(tau-bench flight lists), with no needed fact and no value hidden.
When it is inert: not one JSON document (`not_json_document`), numbers the
compact writer would spell differently (`number_spelling`: `1e5`, `1.50`,
integers beyond 64 bits; a value must read as the agent saw it), a saving
smaller than the note (`marker_no_win`), outputs at or above `max_chars`
(`above_max_chars`, default the client limit: the policy judges those on
their raw size and a stub pages the original), `already_marked`,
`kept_verbatim_after_expand`, short outputs (`below_min_size`).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import orjson

from ..text.data_view import decode_fields, find_data, may_hold_body, value_at
from .base import Declined, FloorTerms, Outcome, ReduceContext, cg_hash, common_decline, marker, never_worse
from .settings import TabulateSettings

_NUMBER_RE = re.compile(r'"(?:[^"\\]|\\.)*"|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)')
"""JSON strings (skipped) or number literals (group 1): the literals must survive re-encoding as spelled."""


def _numbers_spelled_alike(text: str) -> bool:
    """True when every number literal of the original is written the same way by the compact writer."""
    literals = {m.group(1) for m in _NUMBER_RE.finditer(text)} - {None}
    for literal in literals:
        try:
            reread = orjson.loads(literal)
        except orjson.JSONDecodeError:
            return False
        if orjson.dumps(reread).decode() != literal:
            return False
    return True


_SPELLING_CHARS = "0123456789.eE+-"


def _spelled_alike(text: str, value: Any) -> bool:
    """Every number reads as in the original: the fast path compares character counts.

    Compacting only drops whitespace outside strings, so when no string holds a
    `\\u` escape (which the writer turns into the character) the compact
    document has exactly the original's digits, dots, exponents and signs
    unless a number is spelled differently (`1.50` -> `1.5`, `1e5` -> `100000`).
    Counting 15 characters is ~50x faster than the literal-by-literal check,
    which stays as the fallback for escaped text.
    """
    if "\\u" in text:
        return _numbers_spelled_alike(text)
    compact = orjson.dumps(value).decode()
    return all(text.count(ch) == compact.count(ch) for ch in _SPELLING_CHARS)


class Tabulate:
    name = "tabulate"
    shows_every_value = True
    """It re-encodes JSON: every value stays in the model's context."""

    def __init__(self, settings: TabulateSettings) -> None:
        self.settings = settings

    def floor(self, text: str, ctx: ReduceContext, terms: FloorTerms) -> FloorTerms | None:
        """It re-encodes JSON below its `max_chars` only: a JSON document there (a whole one, one in a JSON
        string, one after lines of prose) may re-encode much smaller, so no floor; nor for a noisy text
        whose cleaned head is JSON."""
        ceiling = self.settings.max_chars
        if not (ceiling and len(text) >= ceiling) and (text.lstrip()[:1] in ("{", "[", '"') or may_hold_body(text)):
            return None
        return replace(terms, json_head_unbounded=True)

    def _table(self, value: Any, tables: list[int]) -> Any:
        """`value` with its uniform object arrays as tables; `tables[0]` counts them (no shared state: threads)."""
        if isinstance(value, list):
            if len(value) >= self.settings.min_rows and all(isinstance(item, dict) for item in value):
                keys = list(value[0])
                if keys and all(list(item) == keys for item in value):
                    tables[0] += 1
                    return {"columns": keys, "rows": [[self._table(item[k], tables) for k in keys] for item in value]}
            return [self._table(item, tables) for item in value]
        if isinstance(value, dict):
            return {key: self._table(item, tables) for key, item in value.items()}
        return value

    def reduce(self, text: str, ctx: ReduceContext) -> Outcome:
        if len(text) < self.settings.min_chars:
            return Declined("below_min_size")
        if self.settings.max_chars and len(text) >= self.settings.max_chars:
            return Declined("above_max_chars")
        head = text.lstrip()[:1]
        if head not in ("{", "[", '"') and not may_hold_body(text):
            return Declined("not_json_document")
        if (gate := common_decline(text, ctx)) is not None:
            return gate
        value: Any = None
        if head in ("{", "["):
            try:
                value = orjson.loads(text)
            except orjson.JSONDecodeError:
                value = None
        if value is not None:
            if not _spelled_alike(text, value):
                return Declined("number_spelling")
            # JSON text in its fields ({"type": "text", "text": "<a document>"}) is written as the document
            decoded, fields = decode_fields(value, keep_prose=True)
            for path in fields:
                raw = value_at(value, path)
                if isinstance(raw, str) and not _spelled_alike(raw, value_at(decoded, path)):
                    return Declined("number_spelling")
            tables = [0]
            encoded = orjson.dumps(self._table(decoded, tables)).decode()
            shown = ", ".join(fields[:3]) + (", ..." if len(fields) > 3 else "")
            return self._outcome(text, encoded, tables[0], f"the JSON text of {shown} decoded, " if fields else "")
        return self._in_place(text)

    def _in_place(self, text: str) -> Outcome:
        """A JSON body inside a JSON string literal or between lines of prose (data_view), re-encoded where it
        sits: the prose stays, the string's escapes go (the model reads the document, not `\\"` per quote)."""
        view = find_data(text)
        if view is None or view.syntax != "JSON" or view.decoded_fields or not (view.string_depth or view.prose_around):
            return Declined("not_json_document")
        if view.string_depth and text.strip()[:1] != '"':
            return Declined("not_json_document")  # prose outside the string too: no one text to rewrite in place
        body = view.inner[view.inner_start : view.inner_end]
        if not _spelled_alike(body, view.value):
            return Declined("number_spelling")
        tables = [0]
        encoded = orjson.dumps(self._table(view.value, tables)).decode()
        rewritten = view.inner[: view.inner_start] + encoded + view.inner[view.inner_end :]
        if not view.string_depth:
            rewritten = text[: view.start] + encoded + text[view.end :]
        where = "decoded from its JSON string, " if view.string_depth else ""
        return self._outcome(text, rewritten, tables[0], where)

    @staticmethod
    def _outcome(text: str, encoded: str, count: int, where: str) -> Outcome:
        hash_ = cg_hash(text)
        what = f"{count} object list{'s' if count != 1 else ''} as columns+rows, " if count else ""
        note = f"[{where}{what}compact, all values kept; as sent: context_guru_expand {marker(hash_)}]"
        return never_worse(text, f"{encoded}\n{note}", hash_)
