"""The reducer pipeline: run the configured reducers in order, record why each acted or not.

Every reducer sees the previous one's output and skips marker-bearing content,
so the order is a priority: dedup, extract, smartcrush, collapse, linecap
(linecap last: its marker would make the drastic reducers decline). One exception: when a reducer
acted by appending the whole-output trailer (`<<cg:H>> [full output: ...]`,
extract and linecap do), the next reducers see the text without that trailer
and their cuts are folded into the same marker H, which still stashes the
untouched original. Without this, extract's small cleanups would steal
linecap's candidates (docs/design.md, "Reducers"). One marker per output keeps expand a single hop. The pipeline re-checks the never-worse rule and
that every new marker has its stash entry, and turns a reducer's crash into a
named decline (`reducer_error`) so a bug can only cost a missed saving.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from .base import (
    MARKER_RE,
    Acted,
    Declined,
    FloorTerms,
    ReduceContext,
    Reducer,
    cg_hash,
    floor_of,
    marker,
    shows_every_value,
    trailer,
    yields_to_offload,
)
from .collapse import Collapse
from .dedup import Dedup
from .extract import Extract
from .linecap import Linecap
from .settings import ReducerSettings
from .smartcrush import Smartcrush
from .tabulate import Tabulate

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReducerEvent:
    reducer: str
    acted: bool
    reason: str
    """"acted" when the reducer acted, else its decline reason."""
    chars_before: int
    chars_after: int


@dataclass
class PipelineResult:
    text: str
    stash: dict[str, str] = field(default_factory=dict)
    events: list[ReducerEvent] = field(default_factory=list)
    original_hash: str = ""
    """cg hash of the input text; what `commit_session` records for dedup."""
    original_chars: int = 0

    @property
    def acted(self) -> bool:
        return any(event.acted for event in self.events)


def _suffix(hash_: str) -> str:
    return "\n" + trailer(hash_)


def _fold(outcome: Acted, subject: str, original_hash: str, original: str) -> Acted | Declined:
    """Re-point a cut of the trailer-less text at the marker of the untouched original."""
    inner = cg_hash(subject)
    if set(outcome.stash) != {inner}:
        return Declined("reducer_error")
    text = outcome.text.replace(marker(inner), marker(original_hash))
    return Acted(text, {original_hash: original})


def floor_scan_step(enough: int) -> int:
    """Chars Pipeline.floor_chars scans first: just over `enough` (a bound over `enough` needs more chars
    than that), so a log of distinct lines is decided in one chunk where fixed 64K chunks read two. At
    least 64K, at most 1M chars: memory stays bounded when `enough` is a whole large result."""
    return min(max(65_536, enough + enough // 16 + 2), 1 << 20)


class Pipeline:
    def __init__(self, reducers: list[Reducer], dedup: Dedup | None = None) -> None:
        self.reducers = reducers
        self._dedup = dedup

    @property
    def names(self) -> list[str]:
        return [r.name for r in self.reducers]

    def without_offload_yielders(self) -> Pipeline | None:
        """This pipeline less the reducers that yield to offload (Reducer.yields_to_offload: they window
        an output a stub serves better), or None when it has none: what the shaper judges first."""
        kept = [r for r in self.reducers if not yields_to_offload(r)]
        if len(kept) == len(self.reducers):
            return None
        return Pipeline(kept, self._dedup if self._dedup in kept else None)

    def run(self, text: str, ctx: ReduceContext) -> PipelineResult:
        current = text
        stash: dict[str, str] = {}
        events: list[ReducerEvent] = []
        folded: str | None = None  # hash of the original when `current` ends in its trailer
        for reducer in self.reducers:
            before = len(current)
            subject = current[: -len(_suffix(folded))] if folded else current
            try:
                outcome = reducer.reduce(subject, ctx)
            except Exception:  # a reducer bug must never cost the result itself
                log.exception("reducer %s failed; output passed on unchanged", reducer.name)
                outcome = Declined("reducer_error")
            if isinstance(outcome, Acted) and folded:
                outcome = _fold(outcome, subject, folded, stash[folded])
            if isinstance(outcome, Acted):
                problem = self._check(current, outcome, stash)
                if problem:
                    outcome = Declined(problem)
            if isinstance(outcome, Acted):
                stash.update(outcome.stash)
                current = outcome.text
                events.append(ReducerEvent(reducer.name, True, "acted", before, len(current)))
                folded = next((h for h in outcome.stash if current.endswith(_suffix(h))), None)
            else:
                events.append(ReducerEvent(reducer.name, False, outcome.reason, before, before))
        return PipelineResult(current, stash, events, cg_hash(text), len(text))

    @staticmethod
    def _check(before: str, outcome: Acted, stash: dict[str, str]) -> str | None:
        if len(outcome.text) >= len(before):
            return "marker_no_win"
        for hash_, original in outcome.stash.items():
            if cg_hash(original) != hash_:
                return "reducer_error"
        known = set(MARKER_RE.findall(before)) | stash.keys() | outcome.stash.keys()
        if any(h not in known for h in MARKER_RE.findall(outcome.text)):
            return "reducer_error"  # a marker with nothing behind it would lose bytes
        return None

    def floor_chars(self, text: str, ctx: ReduceContext, enough: int) -> int | None:
        """A lower bound on the size of `run(text)`, or None when none can be given cheaply.

        Lets the shaper decide before reducing: when even the floor would be offloaded, no reducer's
        outcome can change the decision and their time is not spent. Each reducer adds its own term
        (Reducer.floor: what it promises about its output); one that gives none (smartcrush and
        collapse can cut anything, or a reducer without `floor`) leaves the pipeline without a floor.
        The terms are then read by one scan of the text's distinct lines (_floor_of_lines), which
        stops once the bound passes `enough` and drops the last, possibly partial, line.
        """
        terms = FloorTerms()
        for reducer in self.reducers:
            added = floor_of(reducer, text, ctx, terms)
            if added is None:
                return None
            terms = added
        return _floor_of_lines(text, terms, enough)

    def commit_session(self, result: PipelineResult, ctx: ReduceContext) -> None:
        """Record what dedup needs; the shaper calls this only after the ledger commit succeeded."""
        if self._dedup is None or not result.original_hash:
            return
        # Only after reducers that show every value (Reducer.shows_every_value): on real MCP results 14%
        # of the values reducers hid were dedup pointers, i.e. repeats of a copy the model had only seen cut.
        showing = {r.name for r in self.reducers if shows_every_value(r)}
        if any(e.acted and e.reducer not in showing for e in result.events):
            return  # the model saw a cut copy: a later pointer to it would hide what the cut hid
        self._dedup.remember_hash(result.original_hash, result.original_chars, ctx)


def _floor_of_lines(text: str, terms: FloorTerms, enough: int) -> int | None:
    """The floor `terms` promise for `text`: every distinct line once (whitespace-only lines count
    nothing), cut to no fewer than `terms.cap` chars unless `terms.keeps_whole` (a rewritten line is cut
    whatever it holds: the reducer that rewrote it may decline, leaving the raw line, which is no
    shorter). Read in chunks of floor_scan_step(enough), until the bound passes `enough`."""
    noisy = terms.clean_lines is not None
    json_head = terms.json_head_unbounded and noisy  # a noisy text's cleaned head is still to be read
    distinct: set[str] = set()
    floor = 0
    start, step = 0, floor_scan_step(enough)
    while start < len(text):
        chunk = text[start : start + step]
        last_break = chunk.rfind("\n")
        if start + step < len(text):
            if last_break < 0:
                step *= 2
                continue
            chunk = chunk[:last_break]
        start += len(chunk) + 1
        if terms.clean_lines is not None:
            lines = terms.clean_lines(chunk)
            if json_head and (head := next((line for line in lines if line.strip()), None)) is not None:
                if head.lstrip()[:1] in ("{", "["):
                    return None  # cleaned, it may be a JSON document that re-encodes
                json_head = False
            if terms.drop_lines is not None:
                lines = terms.drop_lines(lines)
        else:
            lines = chunk.split("\n")
        # The chunk's new lines by set operations, summed by map: the same sum as a loop over its lines
        # (their order within a chunk cannot matter), in C but for the rare blank or over-long line.
        fresh = set(lines)
        if not noisy and len(fresh) == len(lines) and not distinct:
            # every line new (a log's first chunk): their lengths are the chunk's, less its line breaks
            distinct = fresh
            floor += len(chunk) + 1
            if "" in fresh:
                fresh.discard("")
                floor -= 1
        else:
            fresh -= distinct
            distinct |= fresh
            fresh.discard("")
            floor += sum(map(len, fresh)) + len(fresh)
        for line in filter(str.isspace, fresh):  # a blank line may go in a blank run
            floor -= len(line) + 1
        cap = terms.cap
        if cap and max(map(len, fresh), default=0) > cap:
            keeps_whole = None if noisy else terms.keeps_whole
            for line in fresh:
                if len(line) <= cap or line.isspace():
                    continue
                if keeps_whole is None or not keeps_whole(line):
                    floor -= len(line) - cap
        if floor > enough:
            break
    return max(floor - 1, 0)


def build_pipeline(settings: ReducerSettings) -> Pipeline:
    factories: dict[str, Callable[[], Reducer]] = {
        "dedup": lambda: Dedup(settings.dedup),
        "extract": lambda: Extract(settings.extract),
        "smartcrush": lambda: Smartcrush(settings.smartcrush),
        "tabulate": lambda: Tabulate(settings.tabulate),
        "collapse": lambda: Collapse(settings.collapse),
        "linecap": lambda: Linecap(settings.linecap),
    }
    reducers: list[Reducer] = [factories[name]() for name in settings.pipeline]
    dedup = next((r for r in reducers if isinstance(r, Dedup)), None)
    return Pipeline(reducers, dedup)
