"""Search across stored bodies and stashed originals: what every backend's index answers.

How it works: a commit that stores a body or a reducer's original also queues its id for indexing,
in the same transaction, so every stored entry is either indexed or queued, never silently missing.
The index is written off the call path (an `Indexer` thread, or the search itself, bounded), since
indexing 1 MB of text costs ~20 times what offloading it does; a search first indexes what is queued
for as long as its budget allows and reports how many entries are still queued.

Matching is by substring, case-insensitively, term by term (SQLite: FTS5's trigram tokenizer;
PostgreSQL: pg_trgm), so identifiers (`trm_...`, shas, LAPTOP-14-M3, src/pool.py, 1,299.00) are
found inside longer tokens as well as words. User text never becomes query syntax: each term is
passed as one quoted string. Results are ranked (bm25 on SQLite), ties by id, so the same ledger
and query give the same hits.
"""

from __future__ import annotations

import logging
import re
import threading
from dataclasses import dataclass
from typing import Literal, Protocol

import orjson

from . import codec
from .errors import LedgerError
from .text_view import text_view

log = logging.getLogger(__name__)

HitKind = Literal["body", "stash"]
_SEPARATORS = re.compile(r"[\s\x00-\x1f\x7f]+")

TOKEN_CHARS = "-_./:@#+~%"
"""Punctuation that joins a token (SQLite's `search_tokens`): LAPTOP-14-M3, src/pool.py, trm_..., user@host are one token each."""
WHOLE_TOKEN = re.compile(r"[\w" + re.escape(TOKEN_CHARS) + r"]+")
"""A term a token index may hold whole: letters and digits, and TOKEN_CHARS between or around them."""

MIN_TERM_CHARS = 3
"""Shorter terms cannot be matched by a trigram index; they are left out of the search (and said so)."""
MAX_TERMS = 12
MAX_QUERY_CHARS = 512
SEARCH_TIME_LIMIT_S = 3.0
"""A query the index cannot answer in this time (a term in nearly every body of a huge ledger) ends
with a clear error rather than holding the ledger."""
INDEX_BUDGET_S = 1.0
"""How long a search spends indexing queued entries before it runs."""
INDEX_MAX_CHARS = 2_000_000
"""Of a larger entry only the first this many characters are indexed: indexing holds the ledger's
connection (~0.1 s per MB), and reads wait behind it for at most their deadline. A query with a
`mem_id` still searches a whole body."""


class SearchRefused(LedgerError):
    """The query cannot be answered as given (too slow, or nothing searchable in it); `cause` says why."""


@dataclass(frozen=True)
class SearchHit:
    ref: str
    """A `trm_` id, or a stash entry's cg hash."""
    kind: HitKind
    tool: str
    """The tool that produced it (a body's tool; "" for a stashed original)."""
    created_at: float


@dataclass(frozen=True)
class SearchPage:
    hits: list[SearchHit]
    queued: int
    """Stored entries not yet indexed when the search ran (their text was not searched)."""
    all_terms: bool
    """Whether each hit holds every term (else no entry did, and hits hold some of them)."""


def search_terms(query: str) -> tuple[list[str], list[str]]:
    """(terms searched, terms left out as too short) of a query: separated by whitespace and control
    characters (FTS5 reads a NUL as the end of its query), deduplicated case-insensitively, in order."""
    searched: list[str] = []
    short: list[str] = []
    seen: set[str] = set()
    for term in _SEPARATORS.split(query):
        if not term:
            continue
        key = term.casefold()
        if key in seen:
            continue
        seen.add(key)
        (searched if len(term) >= MIN_TERM_CHARS else short).append(term)
    return searched, short


def fts_string(term: str) -> str:
    """`term` as one FTS5 string: double quotes around it, inner ones doubled, so no user text is syntax."""
    return '"' + term.replace('"', '""') + '"'


def entry_text(data: bytes, codec_name: str, kind: str) -> str | None:
    """The text a stored entry is searched as (a body's text view, a stash entry's original), from its
    stored bytes; None when they cannot be read (the entry is not indexed; recall reports the damage
    when asked for it). Lone surrogates and NULs, which neither SQLite's nor PostgreSQL's text takes,
    are replaced."""
    try:
        raw = codec.decompress(data, codec_name)
        text = text_view(orjson.loads(raw)) if kind == "body" else raw.decode("utf-8", "surrogatepass")
    except (codec.Undecompressable, orjson.JSONDecodeError, UnicodeDecodeError) as err:
        log.warning("search index: a stored %s cannot be read (%s); it is not indexed", kind, err)
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text[:INDEX_MAX_CHARS].replace("\x00", " ")


class IndexQueue(Protocol):
    """What the indexer thread needs of its ledger (a protocol: ledger.py imports this module)."""

    @property
    def location(self) -> str: ...

    def index_queued(self, budget_s: float, max_entries: int | None = None) -> tuple[int, int]: ...


class Indexer:
    """A daemon thread that indexes queued entries after commits, one entry per transaction so the
    shaper's commits wait at most one entry's indexing. `wake()` after a commit that queued some."""

    def __init__(self, ledger: IndexQueue) -> None:
        self._ledger = ledger
        self._wake = threading.Event()
        self._closed = False
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def wake(self) -> None:
        with self._lock:
            if self._closed:
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="ledger-search-index", daemon=True)
                self._thread.start()
        self._wake.set()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            thread = self._thread
        self._wake.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)

    def _run(self) -> None:
        while not self._closed:
            self._wake.wait()
            self._wake.clear()
            while not self._closed:
                try:
                    done, left = self._ledger.index_queued(budget_s=0.0, max_entries=1)
                except LedgerError as err:
                    log.warning("ledger %s: search index not updated: %s", self._ledger.location, err)
                    break
                if not left or not done:
                    break
