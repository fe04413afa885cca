"""`str.lower`, `str.count` and `str.find` over a large text, a piece at a time.

Why: one such call holds the GIL for its whole pass, and the event loop waits on it even when the
call runs in a worker thread, so on a body of tens of MB every other session's traffic stands still
(docs/design.md, "Text scans and the event loop"). Called a piece of PIECE_CHARS at a time, the
interpreter can hand the GIL to the loop between pieces: it waits at most one piece after its switch
interval.

Exact: a one-char needle is counted in pieces of any size, as no match can span a cut. Longer
needles are cut just after a line break: no match of a needle without a line break can span such a
cut, and `str.lower`'s one rule that reads context (a final sigma looks at the letters around it)
never sees past a line break, which is neither cased nor case-ignorable. A longer needle with a line
break, or a text without one past the first piece, is searched in one call.
"""

from __future__ import annotations

from collections.abc import Iterator

PIECE_CHARS = 1 << 20
"""Characters read per call."""


def _pieces(text: str, start: int, end: int, piece: int) -> Iterator[tuple[int, int]]:
    """(from, to) spans covering text[start:end], each ending just after a line break (or at `end`)."""
    while start < end:
        cut = text.find("\n", start + piece, end) if start + piece < end else -1
        stop = end if cut < 0 else cut + 1
        yield start, stop
        start = stop


def lower(text: str, piece: int | None = None) -> str:
    """`text.lower()`."""
    piece = piece or PIECE_CHARS
    if len(text) <= piece:
        return text.lower()
    return "".join(text[a:b].lower() for a, b in _pieces(text, 0, len(text), piece))


def count(text: str, needle: str, start: int = 0, end: int | None = None, piece: int | None = None) -> int:
    """`text.count(needle, start, end)` for a non-empty `needle`."""
    piece = piece or PIECE_CHARS
    end = len(text) if end is None else min(end, len(text))
    if end - start <= piece:
        return text.count(needle, start, end)
    if len(needle) == 1:
        return sum(text.count(needle, at, min(at + piece, end)) for at in range(start, end, piece))
    if "\n" in needle:
        return text.count(needle, start, end)
    return sum(text.count(needle, a, b) for a, b in _pieces(text, start, end, piece))


def find(text: str, needle: str, start: int = 0, piece: int | None = None) -> int:
    """`text.find(needle, start)` for a non-empty `needle`."""
    piece = piece or PIECE_CHARS
    if "\n" in needle or len(text) - start <= piece:
        return text.find(needle, start)
    for a, b in _pieces(text, start, len(text), piece):
        at = text.find(needle, a, b)
        if at >= 0:
            return at
    return -1
