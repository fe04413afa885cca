"""`str.lower`, `str.count` and `str.find` over a large recalled body, a piece at a time.

Why: one such call holds the GIL for its whole pass, and the event loop waits on it even when the
call runs in a worker thread. On a 60 MB log body each took 37-44 ms, and a query did three of
them, so every other session's traffic stood still for about 100 ms per recall. Called a piece of
~1M chars at a time (COUNT_PIECE_CHARS), the interpreter can hand the GIL to the loop between
pieces: it waits at most one piece (~1 ms) after its switch interval.

Exact: pieces end just after a line break. No match of a needle without a line break can span
such a cut, and `str.lower`'s one rule that reads context (a final sigma looks at the letters
around it) never sees past a line break, which is neither cased nor case-ignorable. A needle with
a line break, or a text without one past the first piece, is searched in one call as before.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..policy.textscan import COUNT_PIECE_CHARS


def _pieces(text: str, start: int, end: int, piece: int) -> Iterator[tuple[int, int]]:
    """(from, to) spans covering text[start:end], each ending just after a line break (or at `end`)."""
    while start < end:
        cut = text.find("\n", start + piece, end) if start + piece < end else -1
        stop = end if cut < 0 else cut + 1
        yield start, stop
        start = stop


def lower(text: str, piece: int = COUNT_PIECE_CHARS) -> str:
    """`text.lower()`."""
    if len(text) <= piece:
        return text.lower()
    return "".join(text[a:b].lower() for a, b in _pieces(text, 0, len(text), piece))


def count(text: str, needle: str, start: int = 0, end: int | None = None, piece: int = COUNT_PIECE_CHARS) -> int:
    """`text.count(needle, start, end)` for a non-empty `needle`."""
    end = len(text) if end is None else min(end, len(text))
    if "\n" in needle or end - start <= piece:
        return text.count(needle, start, end)
    return sum(text.count(needle, a, b) for a, b in _pieces(text, start, end, piece))


def find(text: str, needle: str, start: int = 0, piece: int = COUNT_PIECE_CHARS) -> int:
    """`text.find(needle, start)` for a non-empty `needle`."""
    if "\n" in needle or len(text) - start <= piece:
        return text.find(needle, start)
    for a, b in _pieces(text, start, len(text), piece):
        at = text.find(needle, a, b)
        if at >= 0:
            return at
    return -1
