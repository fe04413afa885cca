"""How an index is laid out: one line per record, at the richest level at which every record fits.

Every finder (json_records.py, text_records.py, document.py) hands its records here, lazily: a record
rendered at each of its levels, richest first. Pure and deterministic: same records and budget, same bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

TEXT_ENTRY_CHARS = 140
VALUE_CHARS = 60
"""A JSON field's value or a table's first cell, at most."""

Found = tuple[str, tuple[str, ...], Iterator[tuple[int, tuple[str, ...]]], int]
"""(head, what each level shows (richest first), (line number, the record at each level) lazily, how many records)."""


def text_render(
    head: str,
    whats: tuple[str, ...],
    entries: Iterable[tuple[int, tuple[str, ...]]],
    total: int,
    *,
    budget: int,
    trm_id: str,
    enrich: bool = True,
    paged: int | None = None,
    extra: tuple[str, ...] = (),
    pager: Callable[[int], str] | None = None,
) -> str:
    """The records of a text, one line each (render), paged by line number: `pager` names the call that reads
    on from a record's line (the text inside a JSON string has no lines of its own in the stored body), else
    a `lines=` range. `extra`: lines shown above the records (the ones that stand out)."""
    starts: list[int] = []

    def lines() -> Iterator[tuple[str, ...]]:
        for n, entry in entries:
            starts.append(n)
            yield entry

    def more(k: int) -> str:
        first = starts[k]
        call = (
            pager(first)
            if pager is not None
            else f'recall_tool_result(mem_id="{trm_id}", lines="{first}-{first + 400}")'
        )
        return f"{total - k:,} more not shown, from line {first:,}: {call}"

    return render(head, whats, list(extra), lines(), budget, more, total, enrich=enrich, paged=paged)


ALL_SHOWN = "; all shown"
_MORE_RESERVE = 180
"""Room kept for the "N more ... recall_tool_result(...)" line when not every entry fits."""


def render(
    head: str,
    whats: tuple[str, ...],
    extra: list[str],
    entries: Iterable[tuple[str, ...]],
    budget: int,
    more: Callable[[int], str],
    total: int,
    *,
    enrich: bool = True,
    paged: int | None = None,
    paged_below: float = 0.5,
    keys: tuple[int, ...] = (),
) -> str:
    """One line per record at the richest level at which EVERY record fits; else the most compact level, in order,
    or level `paged` when the most compact one would show less than `paged_below` of the records.

    Each entry is its record rendered at each level, richest first (git: sha date subject (author), then a
    shorter subject, then the sha alone; JSON: the chosen fields, then fewer). An agent passes one
    record's identifier to its next call, and which record it will pick is not known here, so covering
    more records beats saying more about the first ones: the measure is needed facts visible
    (docs/design.md, "The identifier index"). Entries are consumed lazily and only until even the most
    compact level is past the budget, so a 4 MB body costs what its first few hundred records do.
    When every record fits with room to spare, the first records take the richest level in that room
    (every issue number, and the first ones with their titles), unless `enrich` is False: the room is
    then left for another index sharing the budget (a document's URLs beside its outline).
    `keys`: how many identifier fields each level shows (JSON records); a richer level that shows more
    identifiers than every record at the level that fits them all is shown instead (_more_identifiers).
    """
    heads = tuple(head + what for what in whats)
    levels = len(heads)
    base = [len(h) + 1 + sum(len(x) + 1 for x in extra) for h in heads]
    sizes = list(base)
    kept: list[tuple[str, ...]] = []
    complete = True
    for entry in entries:
        kept.append(entry)
        for lv in range(levels):
            sizes[lv] += len(entry[lv]) + 3  # "  " indent and newline
        if sizes[-1] > budget:
            complete = False  # not even the most compact level holds them all: stop reading
            break
    # The "N more" line and the head's "; first N shown", with room for larger numbers than the first's.
    more_chars = max(_MORE_RESERVE, len(more(0)) + len(f"; first {total:,} shown") + 16) if kept else 0
    lv = levels - 1
    richer = None
    if complete:
        fits = next((lv for lv in range(levels) if sizes[lv] + len(ALL_SHOWN) <= budget), None)
        if fits is not None:
            spare = budget - sizes[fits] if enrich else 0
            enriched = _enriched(kept, fits, spare, whats[0])
            cells = (len(kept) - enriched) * keys[fits] + enriched * keys[0] if keys else 0
            richer = _more_identifiers(kept, keys, fits, cells, base, budget - more_chars)
            if richer is None:
                return _all_shown(heads[fits], whats[0], extra, kept, fits, spare)
    if richer is not None:
        lv = richer
    elif paged is not None and 0 <= paged < lv and len(kept) - 1 < total * paged_below:
        lv = paged
    out = [heads[lv], *extra]
    size = base[lv]
    shown = 0
    for entry in kept:
        line = "  " + entry[lv]
        reserve = 0 if shown == total - 1 else more_chars
        if size + len(line) + 1 + reserve > budget:
            break
        out.append(line)
        size += len(line) + 1
        shown += 1
    if shown == 0:
        return ""
    if shown < total:
        out[0] += f"; first {shown:,} shown"
        out.append("  " + more(shown))
    else:
        out[0] += "; all shown"
    return "\n".join(out)


def _more_identifiers(
    kept: list[tuple[str, ...]], keys: tuple[int, ...], fits: int, cells: int, base: list[int], room: int
) -> int | None:
    """A richer level than `fits` (the richest at which every record fits) that shows more identifier cells
    (rows shown x identifier fields a row shows, `keys[level]`) than every record at `fits` does (`cells`,
    its first records enriched), or None when none does.

    A row keyed by two identifiers (a part's sku and its part number) is used next by either: every row's
    first identifier alone shows half of what the agent may pass on, the rows that fit with both may show
    more. Ties keep every row. Which identifier an agent uses is not guessed, nor whether one column is a
    function of another (BRK-3001 and 3001 may be, 3613px69 is not)."""
    if not keys or fits >= len(keys) or keys[fits] <= 0:
        return None
    best, best_cells = None, cells
    for lv in range(fits):
        if keys[lv] <= keys[fits]:
            continue
        size, rows = base[lv], 0
        for entry in kept:
            size += len(entry[lv]) + 3
            if size > room:
                break
            rows += 1
        if rows * keys[lv] > best_cells:
            best, best_cells = lv, rows * keys[lv]
    return best


def _enriched(kept: list[tuple[str, ...]], lv: int, spare: int, richest: str) -> int:
    """How many of the first records are shown at the richest level when every record is at level `lv`."""
    richer = 0
    spare -= len(f"{ALL_SHOWN}, the first {len(kept):,} as {richest}")  # the head says which ones are richer
    while lv > 0 and richer < len(kept) and len(kept[richer][0]) - len(kept[richer][lv]) <= spare:
        spare -= len(kept[richer][0]) - len(kept[richer][lv])
        richer += 1
    return richer


def _all_shown(head: str, richest: str, extra: list[str], kept: list[tuple[str, ...]], lv: int, spare: int) -> str:
    """Every record at level `lv`, the first ones at the richest level while `spare` chars allow."""
    richer = _enriched(kept, lv, spare, richest)
    head += f"{ALL_SHOWN}, the first {richer:,} as {richest}" if richer else ALL_SHOWN
    lines = ("  " + (e[0] if i < richer else e[lv]) for i, e in enumerate(kept))
    return "\n".join([head, *extra, *lines])


def clip(s: str, n: int = TEXT_ENTRY_CHARS) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"
