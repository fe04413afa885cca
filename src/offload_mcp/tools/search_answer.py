"""recall_tool_result with a `query` and no `mem_id`: one search across every stored result the caller may read.

The answer lists ranked hits (store/search.py ranks them): each with its id (`trm_...`, or the
`<<cg:HASH>>` marker of a reduced result's original), the tool that produced it, when it was stored,
the lines holding the terms with their line numbers (the numbers `lines=` reads), and the recall
call that shows every match in it. A search that could not look at everything says so: entries
stored but not yet indexed are counted in the header, terms too short to search are named.

Bounded: the query's length and number of terms, the hits, the lines per hit and the characters
per line, the answer's size (recall.max_chars), and the index's time (a query too broad to answer
in time ends with an error saying so).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import anyio
import orjson

from ..store import Evicted, LedgerError, UnknownId
from ..store.search import MAX_QUERY_CHARS, MAX_TERMS, MIN_TERM_CHARS, SearchHit, search_terms
from ..store.text_view import text_view
from .echo import echoed

HITS = 5
"""Hits one answer shows."""
LINES_PER_HIT = 3
LINE_CHARS = 200
"""Characters of a matching line shown; a longer line is cut around its first match."""
_MATCHES_LOOKED_AT = 64
"""Matches per term a hit's lines are chosen from (the first ones in the text)."""


class SearchInputError(ValueError):
    """The query cannot be searched as given; the message says what to send instead."""


@dataclass(frozen=True)
class SearchAnswer:
    text: str
    hits: list[str]
    """The ids shown, best first (a stash entry as its marker)."""


def check_query(query: str) -> tuple[list[str], list[str]]:
    """(terms searched, terms too short) of a query, or SearchInputError."""
    if len(query) > MAX_QUERY_CHARS:
        raise SearchInputError(
            f"a search query is at most {MAX_QUERY_CHARS} chars (got {len(query):,}); search for a distinctive value "
            "such as an id, a name or a number, or give mem_id to search inside one result"
        )
    terms, short = search_terms(query)
    if not terms:
        raise SearchInputError(
            f"search terms need at least {MIN_TERM_CHARS} characters each (got {echoed(repr(query))}); "
            "give mem_id to search inside one result for a shorter string"
        )
    if len(terms) > MAX_TERMS:
        raise SearchInputError(
            f"a search takes at most {MAX_TERMS} terms (got {len(terms)}); keep the distinctive ones"
        )
    return terms, short


async def answer(env: Any, query: str, limit_chars: int) -> SearchAnswer:
    """The search answer for `query` (see the module docstring); raises SearchInputError, SearchRefused
    or LedgerError."""
    terms, short = check_query(query)
    ledger = env.ledger
    page = await anyio.to_thread.run_sync(lambda: ledger.search(terms, owner=env.ledger_owner, limit=HITS))
    notes = []
    if short:
        notes.append(f"left out as shorter than {MIN_TERM_CHARS} chars: {', '.join(map(repr, short))}")
    if page.queued:
        notes.append(
            f"{page.queued:,} stored result{'s' if page.queued != 1 else ''} not yet indexed were not searched; "
            "search again shortly"
        )
    shown_terms = " ".join(terms)
    label = echoed(repr(shown_terms))
    tail = "".join(f"; {n}" for n in notes)
    if not page.hits:
        return SearchAnswer(f"[search {label}: no stored result you may read holds it{tail}]\n", [])
    blocks: list[str] = []
    ids: list[str] = []
    for rank, hit in enumerate(page.hits, 1):
        block = await anyio.to_thread.run_sync(_hit_block, env, hit, terms, rank)
        if block is None:
            continue
        blocks.append(block)
        ids.append(_name(hit))
    which = "every term" if page.all_terms else "some of the terms (none holds every one)"
    head = (
        f"[search {label}: {len(blocks)} stored result{'s' if len(blocks) != 1 else ''} holding {which}, best first"
        f"{tail}; read more with the call under each]\n"
    )
    text = head
    for block in blocks:
        if len(text) + len(block) > limit_chars:
            text += f"[{len(blocks) - blocks.index(block)} more hit(s) not shown: over {limit_chars:,} chars]\n"
            break
        text += block
    return SearchAnswer(text, ids)


def _name(hit: SearchHit) -> str:
    return hit.ref if hit.kind == "body" else f"<<cg:{hit.ref}>>"


def _hit_block(env: Any, hit: SearchHit, terms: list[str], rank: int) -> str | None:
    """One hit: a header line, its matching lines, the call that reads more. None when it went away
    between the search and this read (or is not the caller's: the ledger checks the scope again)."""
    name = _name(hit)
    try:
        if hit.kind == "body":
            text = text_view(orjson.loads(env.ledger.get_body_json(hit.ref, session_id=env.ledger_owner)))
        else:
            text = env.ledger.get_stash(hit.ref, session_id=env.ledger_owner)
    except (UnknownId, Evicted, LedgerError, orjson.JSONDecodeError):
        return None
    starts = _line_starts(text)
    lines = _matching_lines(text, starts, terms)
    when = datetime.fromtimestamp(hit.created_at, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
    what = f"tool {hit.tool}" if hit.kind == "body" else "a reduced result's original"
    out = [f"{rank}. {name} · {what} · stored {when} · {len(starts):,} lines, {len(text):,} chars\n"]
    for number in lines:
        out.append(f"   L{number}: {_clipped(_line(text, starts, number), terms)}\n")
    lowered = text.lower()
    best = next((t for t in terms if t.lower() in lowered), terms[0])
    call_query = orjson.dumps(best).decode()
    out.append(f'   more: recall_tool_result(mem_id="{name}", query={call_query})\n')
    return "".join(out)


def _line_starts(text: str) -> list[int]:
    starts = [0]
    pos = text.find("\n")
    while pos != -1:
        starts.append(pos + 1)
        pos = text.find("\n", pos + 1)
    return starts


def _line(text: str, starts: list[int], number: int) -> str:
    start = starts[number - 1]
    end = starts[number] - 1 if number < len(starts) else len(text)
    return text[start:end]


def _matching_lines(text: str, starts: list[int], terms: list[str]) -> list[int]:
    """Up to LINES_PER_HIT line numbers holding terms: lines with the most distinct terms first, then
    the earliest; shown in line order."""
    lowered = text.lower()
    low = lowered if len(lowered) == len(text) else text
    held: dict[int, set[int]] = {}
    for i, term in enumerate(terms):
        needle = term.lower() if low is not text else term
        pos = low.find(needle)
        seen = 0
        while pos != -1 and seen < _MATCHES_LOOKED_AT:
            held.setdefault(bisect_right(starts, pos), set()).add(i)
            seen += 1
            pos = low.find(needle, pos + max(len(needle), 1))
    best = sorted(held, key=lambda n: (-len(held[n]), n))[:LINES_PER_HIT]
    return sorted(best)


def _clipped(line: str, terms: list[str]) -> str:
    if len(line) <= LINE_CHARS:
        return line
    low = line.lower()
    first = min((p for p in (low.find(t.lower()) for t in terms) if p != -1), default=0)
    start = max(0, min(first - LINE_CHARS // 3, len(line) - LINE_CHARS))
    return ("…" if start else "") + line[start : start + LINE_CHARS] + ("…" if start + LINE_CHARS < len(line) else "")
