"""Search across stored bodies and stashed originals: what every backend's index answers.

How it works: a commit that stores a body or a reducer's original also queues its id for indexing,
in the same transaction, so every stored entry is either indexed or queued, never silently missing.
The index is written off the call path (an `Indexer` thread, or the search itself, bounded), since
indexing 1 MB of text costs ~20 times what offloading it does; a search first indexes what is queued
for as long as its budget allows and reports how many entries are still queued.

An entry is indexed whole, in pieces of at most PIECE_CHARS (`pieces`), one transaction each, so a
commit or read waiting for the ledger's connection waits for one piece, never for a whole large
body; the queue keeps where the next piece starts, so indexing resumes after a restart. A hit is an
entry (its pieces merged); the lines a hit shows are read from the whole body.

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
from collections.abc import Callable
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
PIECE_CHARS = 256 * 1024
"""Most characters indexed in one transaction: a commit or read waiting for the ledger's connection
waits for one such piece at most (docs/search.md gives its time)."""
PIECE_OVERLAP = MAX_QUERY_CHARS
"""A piece cut inside a run with no separator starts again this many characters before the cut, so a
term (at most MAX_QUERY_CHARS, with no separator in it) crossing the cut lies whole in the next piece."""
_SEPARATOR = re.compile(r"[\s\x00-\x1f\x7f]")


def piece_bounds(text: str, start: int) -> tuple[int, int]:
    """(end, where the next piece starts) of the piece of `text` that starts at `start`; both are
    len(text) for the last piece.

    A piece ends after the last line break in the back half of its PIECE_CHARS, else after the last
    separator there (whitespace or a control character): no term (terms are split at separators) and no
    token crosses such a cut, so the pieces hold exactly the terms and tokens of the whole. A run of
    PIECE_CHARS / 2 with no separator (one huge token) is cut where the piece is full, and the next
    piece overlaps it by PIECE_OVERLAP: a term crossing the cut is found in the next piece."""
    limit = start + PIECE_CHARS
    if limit >= len(text):
        return len(text), len(text)
    floor = start + PIECE_CHARS // 2
    cut = text.rfind("\n", floor, limit)
    if cut == -1:
        cut = max((m.start() for m in _SEPARATOR.finditer(text, floor, limit)), default=-1)
    if cut != -1:
        return cut + 1, cut + 1
    return limit, limit - PIECE_OVERLAP


def pieces(text: str) -> list[tuple[int, int]]:
    """Every piece's (start, end) in `text`, in order (one empty piece for an empty text)."""
    out: list[tuple[int, int]] = []
    start = 0
    while True:
        end, following = piece_bounds(text, start)
        out.append((start, end))
        if end >= len(text):
            return out
        start = following


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
    return text.replace("\x00", " ")


class _LastText:
    """The text of the entry being indexed, kept between its pieces (each piece is its own transaction,
    and decompressing a 5 MB body for each of its 20 pieces would cost more than indexing them). An id
    names its content (a hash of it), so the same (kind, id) is always the same text."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: tuple[str, str, str | None] | None = None

    def get(self, kind: str, ref: str, read: Callable[[], str | None]) -> str | None:
        with self._lock:
            kept = self._kept
        if kept is not None and kept[:2] == (kind, ref):
            return kept[2]
        text = read()
        with self._lock:
            self._kept = (kind, ref, text)
        return text

    def forget(self, kind: str, ref: str) -> None:
        with self._lock:
            if self._kept is not None and self._kept[:2] == (kind, ref):
                self._kept = None


last_text = _LastText()


class IndexQueue(Protocol):
    """What the indexer thread needs of its ledger (a protocol: ledger.py imports this module)."""

    @property
    def location(self) -> str: ...

    def index_queued(self, budget_s: float, max_entries: int | None = None) -> tuple[int, int]:
        """Index up to `max_entries` pieces; returns (pieces indexed, entries still queued)."""
        ...


class Indexer:
    """A daemon thread that indexes queued entries after commits, one piece per transaction so the
    shaper's commits wait at most one piece's indexing. `wake()` after a commit that queued some."""

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
