"""What offload-mcp did, read back from the ledger: per server and tool, priced per model.

How it works: the shaper writes one decision record (record.DecisionEvent:
verdict, reason, mode, chars in and out, reducer events, the gate's terms) per
downstream result, read back strictly; the own tools write `recall` and
`expand` events. `aggregate()` folds those
into a `StatsReport`: results seen, reduced, offloaded, tokens and dollars
saved, the recall rate and conversation horizon actually observed next to the
configured priors (with suggested values), decisions by reason and reducer
declines by reason. The `stats` command, `serve`'s exit summary and the demo
all read this one aggregation.

Pricing: policy/economics.py, the same terms the gate decides on. A token
kept out of the transcript saves carry(1, H), H being observed, never assumed:
the requests that carried the result, i.e. the calls that followed it in its
session plus the one that read it (economics.py defines H). Recalls and expands are charged
back as a recall hop: the slice they returned enters the context as new content
and the model writes the call (`recall_output_tokens` at the output rate). Observe-mode results are priced
the same way and reported as "would have saved"; since nothing was offloaded,
their recall cost is the configured prior, p_recall x one recall hop.

Two baselines (economics.account_result): every result is counted against the
raw result (`tokens_saved`, `usd_saved`: the server's characters minus the
proxy's) and against what the calling client alone would have shown its model
(`client_tokens_saved`, `client_usd_saved`: Claude Code's 2,000-char preview
of a filed result, its error for one over 400,000 chars; analysis/clients.py, the
model `replay --client` uses). The client is the `clientInfo.name` recorded
with each decision; `client` (stats --client) names one for every result, for
ledgers recorded before clients were. Recalls are charged against both.
"""

from __future__ import annotations

import base64
import hashlib
import heapq
import re
import sys
import time
from array import array
from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import orjson

from ..policy.economics import Rates, requests_carrying
from ..policy.pricing import Price, price_for
from ..policy.settings import PolicySettings
from ..record import DecisionEvent
from ..store import Ledger
from .clients import ClientModel, client_model

CALL_KINDS = ("decision", "recall", "expand", "tool_search", "invoke", "search")
"""Ledger event kinds that are one model-visible tool call each (they count toward the observed horizon)."""
MIN_SAMPLES_FOR_SUGGESTION = 5
TIMELINE_BUCKETS = 60
"""At most this many time buckets: the width is the first of BUCKET_WIDTHS_S that fits the span."""
BUCKET_WIDTHS_S = (1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 6 * 3600.0, 86400.0, 7 * 86400.0, 30 * 86400.0)
LARGEST_KEPT = 100


# ---------------------------------------------------------------- reading events


def chars_sent(record: DecisionEvent) -> int:
    """Characters the client received (enforce) or would have received (observe): the record says which."""
    return record.shaped_chars_out


# ---------------------------------------------------------------- the report


@dataclass
class ToolStats:
    server: str
    tool: str
    results: int = 0
    reduced: int = 0
    offloaded: int = 0
    observed: int = 0
    """Results handled in observe mode (their savings are `would_*`)."""
    chars_in: int = 0
    chars_out: int = 0
    tokens_saved: float = 0.0
    usd_saved: float = 0.0
    would_tokens_saved: float = 0.0
    would_usd_saved: float = 0.0
    client_tokens_saved: float = 0.0
    """Against the client alone (what it shows of the raw result minus what it shows of the proxy's); may be < 0."""
    client_usd_saved: float = 0.0
    would_client_tokens_saved: float = 0.0
    would_client_usd_saved: float = 0.0
    recalls: int = 0
    expands: int = 0
    decisions: dict[str, int] = field(default_factory=dict)
    """`verdict/reason` -> count for this tool's results."""
    reducers_acted: dict[str, int] = field(default_factory=dict)
    reducer_declines: dict[str, int] = field(default_factory=dict)
    """`reducer/reason` -> count for this tool's results."""

    def count(self, table: str, key: str) -> None:
        counts: dict[str, int] = getattr(self, table)
        counts[key] = counts.get(key, 0) + 1

    def add(self, other: ToolStats) -> None:
        for name in (
            "results",
            "reduced",
            "offloaded",
            "observed",
            "chars_in",
            "chars_out",
            "tokens_saved",
            "usd_saved",
            "would_tokens_saved",
            "would_usd_saved",
            "client_tokens_saved",
            "client_usd_saved",
            "would_client_tokens_saved",
            "would_client_usd_saved",
            "recalls",
            "expands",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for table in ("decisions", "reducers_acted", "reducer_declines"):
            mine: dict[str, int] = getattr(self, table)
            for key, n in getattr(other, table).items():
                mine[key] = mine.get(key, 0) + n

    def sort_counts(self) -> None:
        """Most frequent first, then by name: the same ledger gives the same bytes."""
        for table in ("decisions", "reducers_acted", "reducer_declines"):
            counts: dict[str, int] = getattr(self, table)
            setattr(self, table, dict(sorted(counts.items(), key=lambda item: (-item[1], item[0]))))


@dataclass
class TimeBucket:
    """What the results recorded in one span of time saved (recall hops charged when they happened)."""

    start: float
    results: int = 0
    tokens_saved: float = 0.0
    usd_saved: float = 0.0
    client_tokens_saved: float = 0.0
    client_usd_saved: float = 0.0
    would_tokens_saved: float = 0.0
    would_usd_saved: float = 0.0
    would_client_tokens_saved: float = 0.0
    would_client_usd_saved: float = 0.0


@dataclass
class LargeResult:
    """One of the largest results and what happened to it."""

    event_id: int
    at: float
    server: str
    tool: str
    verdict: str
    reason: str
    chars_in: int
    chars_out: int
    trm_id: str
    recalled: bool = False


@dataclass
class PriorCheck:
    """An observed quantity next to the configured prior the gate uses."""

    configured: float
    observed: float | None
    samples: int
    suggested: float | None
    note: str = ""


@dataclass
class ResultSearchUse:
    """Searches across stored results (recall_tool_result with a query and no mem_id)."""

    searches: int = 0
    failed: int = 0
    hits: int = 0
    """Ids the searches named (each search counts its own)."""
    hops_saved: int = 0
    """Later recalls, in the same session, of an id a search named: each is a hop the model would
    otherwise have spent guessing which result held the value (counted once per session and id)."""


@dataclass
class StatsReport:
    since: float | None
    model: str
    priced: bool
    rows: list[ToolStats]
    totals: ToolStats
    decisions: dict[str, int]
    """`verdict/reason` -> count (observe-mode results counted under what would have happened)."""
    reducer_acts: dict[str, int]
    reducer_declines: dict[str, int]
    """`reducer/reason` -> count."""
    recall: PriorCheck
    horizon: PriorCheck
    recall_calls: int
    expand_calls: int
    failed_recalls: int
    failed_expands: int
    sessions: int
    assumptions: list[str] = field(default_factory=list)
    price_note: str | None = None
    """Set when the model has no pricing row of its own: priced by its family's newest row, or not at all."""
    search_events: dict[str, int] = field(default_factory=dict)
    """Search mode: `tool_search/<verdict>/<reason>` and `invoke/refused/<reason>` -> count."""
    clients: dict[str, int] = field(default_factory=dict)
    """Client model each result was counted against -> results (`plain`: a client with no size rules)."""
    client_source: str = "recorded"
    """`recorded` (each decision's clientInfo) or `--client` (one client named for every result)."""
    client_alone_fates: dict[str, int] = field(default_factory=dict)
    """What the client alone would have done with the raw results: `inline`, `file` (a preview), `rejected`."""
    client_fates: dict[str, int] = field(default_factory=dict)
    """What the client did (or, in observe mode, would do) with what the proxy sent."""
    bucket_s: float = 0.0
    """The width of each `timeline` bucket in seconds (chosen so the span fits TIMELINE_BUCKETS)."""
    timeline: list[TimeBucket] = field(default_factory=list)
    """Savings per span of time, oldest first; buckets with no event are left out."""
    largest: list[LargeResult] = field(default_factory=list)
    """The LARGEST_KEPT largest results by characters in, largest first."""

    @property
    def client(self) -> str:
        """The one client every result was counted against, or the clients joined by `+`."""
        return "+".join(self.clients) or "plain"

    result_search: ResultSearchUse = field(default_factory=lambda: ResultSearchUse())

    @property
    def observe_mode(self) -> bool:
        return self.totals.observed > 0

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["observe_mode"] = self.observe_mode
        data["client"] = self.client
        return data


def _rates(price: Price, settings: PolicySettings) -> Rates:
    return Rates.of(price, prompt_caching=settings.prompt_caching, cache_ttl=settings.cache_ttl)


def _recall_hop_usd(rates: Rates, settings: PolicySettings, chars_returned: float) -> float:
    return rates.recall_hop(chars_returned / settings.chars_per_token, settings.recall_output_tokens)


def _suggest_horizon(values: IntMean) -> float | None:
    if values.n < MIN_SAMPLES_FOR_SUGGESTION:
        return None
    # carry(x, H) is linear in H, so what results save on average is what they save at the mean H: the
    # prior is the observed mean, rounded down because the gate wants an underestimate. A
    # lower quartile let the short tails (the last results of each session) alone set the prior, far
    # under the mean printed beside it.
    return float(max(1, int(values.mean())))


def aggregate(
    events: Iterable[Mapping[str, Any]],
    settings: PolicySettings | None = None,
    *,
    since: float | None = None,
    session_ids: Iterable[str] | None = None,
    model: str | None = None,
    client: str | None = None,
) -> StatsReport:
    """Fold ledger events (Ledger.events() dicts, in any order) into a StatsReport.

    `client` names the client model (analysis/clients.py) every result is counted against; None: the one each
    decision recorded (`plain` where it recorded none)."""
    wanted = set(session_ids) if session_ids is not None else None
    calls: list[Mapping[str, Any]] = [
        e
        for e in events
        if e.get("kind") in CALL_KINDS
        and (since is None or float(e.get("at") or 0) >= since)
        and (wanted is None or e.get("session_id") in wanted)
    ]
    calls.sort(key=lambda e: (float(e.get("at") or 0), int(e.get("id") or 0)))
    session_calls = Counter(str(e.get("session_id") or "") for e in calls)
    fold = Accumulator(settings, session_calls, model=model, client=client)
    for event in calls:
        fold.add(event)
    return fold.report(since)


_COUNTERS = ("decisions", "acts", "declines", "clients", "alone_fates", "client_fates", "search_events")
"""The Accumulator's Counter attributes, carried by a checkpoint in their insertion order."""


class Accumulator:
    """One pass over the events in (at, id) order, one method per event kind; `report()` at the end.

    `session_calls` (session -> how many call events it holds, from the whole pass) gives each
    result, as it passes, the number of calls that follow it in its session (the observed horizon),
    so no event is held once it is folded: a ledger of any size is read in one page at a time."""

    def __init__(
        self,
        settings: PolicySettings | None,
        session_calls: Mapping[str, int],
        *,
        model: str | None = None,
        client: str | None = None,
    ) -> None:
        self.settings = settings = settings or PolicySettings()
        self.model = model or settings.model
        self.price, self.price_note = price_for(self.model, settings.pricing)
        self.rates = _rates(self.price, settings) if self.price else None
        self.named: ClientModel | None = client_model(client) if client is not None else None
        self.session_calls = session_calls
        self.seen_in_session: Counter[str] = Counter()
        self.earlier_sessions = SessionSet()
        """Sessions a resumed state had counted, all of them ended (none is in `session_calls`)."""
        self.rows: dict[tuple[str, str], ToolStats] = {}
        self.decisions: Counter[str] = Counter()
        self.acts: Counter[str] = Counter()
        self.declines: Counter[str] = Counter()
        self.clients: Counter[str] = Counter()
        self.alone_fates: Counter[str] = Counter()
        self.client_fates: Counter[str] = Counter()
        self.offload_owner: dict[str, tuple[str, str]] = {}
        self.stash_owner: dict[str, tuple[str, str]] = {}
        self.offload_horizons = IntMean()
        self.all_horizons = IntMean()
        self.recalled_ids: set[str] = set()
        self.offloaded_ids: set[str] = set()
        self.recall_calls = self.expand_calls = self.failed_recalls = self.failed_expands = 0
        self.recall_usd_by_row: defaultdict[tuple[str, str], float] = defaultdict(float)
        self.search_events: Counter[str] = Counter()
        self.result_search = ResultSearchUse()
        self.found_by_search: set[tuple[str, str]] = set()
        """(session, id) a search named, until a recall of it counts the hop saved."""
        self.flow = Timeline()
        self.largest: list[tuple[int, int, LargeResult]] = []

    def state(self) -> dict[str, Any]:
        """What has been folded so far, as plain JSON data (`resume` carries on from it): the same events
        folded in the same order give the same data, so a checkpoint's bytes are stable too. Counters keep
        their insertion order, which breaks ties in the report's most-common lists."""
        return {
            "sessions": self.earlier_sessions.with_more(self.seen_in_session).state(),
            "rows": [asdict(row) for row in self.rows.values()],
            "counters": {name: list(getattr(self, name).items()) for name in _COUNTERS},
            "offload_owner": [[ref, *key] for ref, key in self.offload_owner.items()],
            "stash_owner": [[ref, *key] for ref, key in self.stash_owner.items()],
            "offload_horizons": asdict(self.offload_horizons),
            "all_horizons": asdict(self.all_horizons),
            "recalled_ids": sorted(self.recalled_ids),
            "offloaded_ids": sorted(self.offloaded_ids),
            "calls": [self.recall_calls, self.expand_calls, self.failed_recalls, self.failed_expands],
            "recall_usd_by_row": [[*key, usd] for key, usd in self.recall_usd_by_row.items()],
            "result_search": asdict(self.result_search),
            "found_by_search": sorted(self.found_by_search),
            "timeline": self.flow.state(),
            "largest": [[chars, neg_id, asdict(large)] for chars, neg_id, large in self.largest],
        }

    @classmethod
    def resume(
        cls,
        state: Mapping[str, Any],
        settings: PolicySettings | None,
        session_calls: Mapping[str, int],
        *,
        model: str | None = None,
        client: str | None = None,
    ) -> Accumulator:
        """An Accumulator that holds what `state` folded, to fold the events after it. `session_calls`
        counts the sessions of those later events (a session the state holds must not go on in them:
        its results were priced with the calls it had then). Raises KeyError, TypeError or ValueError
        on state data that is not what `state()` writes."""
        fold = cls(settings, session_calls, model=model, client=client)
        fold.earlier_sessions = SessionSet.from_state(state["sessions"])
        for row in state["rows"]:
            tool = ToolStats(**row)
            fold.rows[(tool.server, tool.tool)] = tool
        for name in _COUNTERS:
            setattr(fold, name, Counter(dict(state["counters"][name])))
        fold.offload_owner = {ref: (server, tool) for ref, server, tool in state["offload_owner"]}
        fold.stash_owner = {ref: (server, tool) for ref, server, tool in state["stash_owner"]}
        fold.offload_horizons = IntMean(**state["offload_horizons"])
        fold.all_horizons = IntMean(**state["all_horizons"])
        fold.recalled_ids = set(state["recalled_ids"])
        fold.offloaded_ids = set(state["offloaded_ids"])
        fold.recall_calls, fold.expand_calls, fold.failed_recalls, fold.failed_expands = map(int, state["calls"])
        for server, tool, usd in state["recall_usd_by_row"]:
            fold.recall_usd_by_row[(server, tool)] = float(usd)
        fold.result_search = ResultSearchUse(**state["result_search"])
        fold.found_by_search = {(session, ref) for session, ref in state["found_by_search"]}
        fold.flow = Timeline.from_state(state["timeline"])
        fold.largest = [(int(chars), int(neg_id), LargeResult(**large)) for chars, neg_id, large in state["largest"]]
        return fold

    def add(self, event: Mapping[str, Any]) -> None:
        """Fold one call event; events must come in (at, id) order."""
        session = str(event.get("session_id") or "")
        following = self.session_calls.get(session, 0) - self.seen_in_session[session] - 1
        self.seen_in_session[session] += 1
        kind = event.get("kind")
        if kind == "decision":
            self.decision(DecisionEvent.from_ledger_row(event), event, following)
        elif kind in ("tool_search", "invoke"):
            self.search_events[f"{kind}/{event.get('verdict') or 'ok'}/{event.get('reason') or 'none'}"] += 1
        elif kind == "search":
            self.result_search_event(event)
        elif kind in ("recall", "expand"):
            self.retrieval(event)

    def decision(self, record: DecisionEvent, event: Mapping[str, Any], following: int) -> None:
        """A result the proxy shaped: its counts, its reducers, and what it saved against both baselines."""
        key = (record.server, record.tool)
        row = self.rows.setdefault(key, ToolStats(*key))
        verdict = record.effective_verdict
        sent = chars_sent(record)
        row.results += 1
        row.chars_in += record.chars_in
        row.chars_out += sent
        decided = f"{verdict}/{record.reason or 'none'}"
        self.decisions[decided] += 1
        row.count("decisions", decided)
        reduced = False
        for r in record.reducer_events:
            if r.acted:
                self.acts[r.reducer] += 1
                row.count("reducers_acted", r.reducer)
                reduced = True
            else:
                declined = f"{r.reducer}/{r.reason or 'none'}"
                self.declines[declined] += 1
                row.count("reducer_declines", declined)
        row.reduced += reduced
        turns = requests_carrying(following)
        self.all_horizons.add(turns)
        for cg in record.stash_hashes:
            self.stash_owner.setdefault(cg, key)
        offloaded = verdict == "offload"
        if offloaded:
            row.offloaded += 1
            self.offload_horizons.add(turns)
            ref = record.trm_id or ""
            if ref and not record.observe:
                self.offloaded_ids.add(ref)
                self.offload_owner[ref] = key
        at = float(event.get("at") or 0)
        self._price(record, row, turns, offloaded, at)
        event_id = int(event.get("id") or 0)
        large = LargeResult(
            event_id, at, record.server, record.tool, verdict, record.reason, record.chars_in, sent, record.trm_id or ""
        )
        entry = (record.chars_in, -event_id, large)
        if len(self.largest) < LARGEST_KEPT:
            heapq.heappush(self.largest, entry)
        elif entry[:2] > self.largest[0][:2]:
            heapq.heapreplace(self.largest, entry)

    def _price(self, record: DecisionEvent, row: ToolStats, turns: int, offloaded: bool, at: float) -> None:
        """What one result saved (or, in observe mode, would have), in tokens and dollars, on both baselines."""
        settings, rates = self.settings, self.rates
        viewer = record.client_model(self.named)
        self.clients[viewer.name] += 1
        account = record.account(viewer, settings.chars_per_token)
        self.alone_fates[account.client_alone.fate] += 1
        self.client_fates[account.client_seen.fate] += 1
        saved_tokens = account.raw_tokens_saved
        usd = rates.carry(saved_tokens, turns) if rates else 0.0
        client_usd = rates.carry(account.client_tokens_saved, turns) if rates else 0.0
        if record.observe:
            row.observed += 1
            if offloaded and rates:
                # Nothing was offloaded, so no recall was observed: charge the configured prior.
                prior = settings.recall_probability * _recall_hop_usd(
                    rates, settings, settings.recall_input_tokens * settings.chars_per_token
                )
                usd -= prior
                client_usd -= prior
            row.would_tokens_saved += saved_tokens
            row.would_usd_saved += usd
            row.would_client_tokens_saved += account.client_tokens_saved
            row.would_client_usd_saved += client_usd
        else:
            row.tokens_saved += saved_tokens
            row.usd_saved += usd
            row.client_tokens_saved += account.client_tokens_saved
            row.client_usd_saved += client_usd
        self.flow.add(at, True, record.observe, saved_tokens, usd, account.client_tokens_saved, client_usd)

    def result_search_event(self, event: Mapping[str, Any]) -> None:
        """A search across stored results: the ids it named, so a later recall of one counts a hop saved."""
        session = str(event.get("session_id") or "")
        hits = [_search_ref(h) for h in _detail(event).get("hits") or []]
        self.result_search.searches += 1
        self.result_search.failed += str(event.get("verdict") or "ok") != "ok"
        self.result_search.hits += len(hits)
        self.found_by_search.update((session, h) for h in hits)

    def retrieval(self, event: Mapping[str, Any]) -> None:
        """A recall or an expand: counted, and its hop charged to the tool whose result it brought back."""
        kind = event.get("kind")
        ok = str(event.get("verdict") or "ok") == "ok"
        ref = str(event.get("ref_id") or "")
        searched = (str(event.get("session_id") or ""), _search_ref(ref))
        if kind == "recall" and ok and searched in self.found_by_search:
            self.result_search.hops_saved += 1
            self.found_by_search.discard(searched)
        if kind == "recall":
            self.recall_calls += 1
            self.failed_recalls += not ok
            if ok and ref:
                self.recalled_ids.add(ref)
        else:
            self.expand_calls += 1
            self.failed_expands += not ok
        owner = (self.offload_owner if kind == "recall" else self.stash_owner).get(ref)
        owner = owner or (str(event.get("server") or ""), str(event.get("tool") or ""))
        if kind == "expand" and ok and owner in self.rows:
            self.rows[owner].expands += 1
        if self.rates and ok:
            hop = _recall_hop_usd(self.rates, self.settings, int(event.get("chars_out") or 0))
            self.recall_usd_by_row[owner] += hop
            self.flow.add(float(event.get("at") or 0), False, False, 0.0, -hop, 0.0, -hop)

    def _charge_retrievals(self) -> None:
        """Recall and expand hops are charged to the tool whose result they brought back."""
        for owner, usd in self.recall_usd_by_row.items():
            charged = self.rows.get(owner)
            if charged is None:
                charged = self.rows.setdefault(owner, ToolStats(owner[0] or "(own tools)", owner[1] or "recall/expand"))
            charged.usd_saved -= usd
            charged.client_usd_saved -= usd
        for ref in self.recalled_ids:
            if ref in self.offload_owner:
                self.rows[self.offload_owner[ref]].recalls += 1

    def report(self, since: float | None) -> StatsReport:
        """The report of every event folded so far."""
        self._charge_retrievals()
        totals = ToolStats("all", "all")
        ordered = sorted(self.rows.values(), key=lambda r: (-(r.tokens_saved + r.would_tokens_saved), r.server, r.tool))
        for row in ordered:
            row.sort_counts()
            totals.add(row)
        totals.sort_counts()
        bucket_s, timeline = self.flow.buckets()
        biggest = [entry[2] for entry in sorted(self.largest, key=lambda entry: entry[:2], reverse=True)]
        for large in biggest:
            large.recalled = bool(large.trm_id) and large.trm_id in self.recalled_ids
        totals.recalls = len(self.recalled_ids & self.offloaded_ids)
        totals.expands = (
            self.expand_calls - self.failed_expands
        )  # as each row counts them: the ones that brought text back
        return StatsReport(
            since=since,
            model=self.model,
            priced=self.price is not None,
            price_note=self.price_note,
            rows=ordered,
            totals=totals,
            decisions=dict(self.decisions.most_common()),
            reducer_acts=dict(self.acts.most_common()),
            reducer_declines=dict(self.declines.most_common()),
            recall=self._recall_check(any(r.observed for r in ordered)),
            horizon=self._horizon_check(),
            recall_calls=self.recall_calls,
            expand_calls=self.expand_calls,
            failed_recalls=self.failed_recalls,
            failed_expands=self.failed_expands,
            sessions=self.earlier_sessions.count + len(self.seen_in_session),
            assumptions=self._assumptions(totals),
            search_events=dict(self.search_events.most_common()),
            clients=dict(self.clients.most_common()),
            client_source="--client" if self.named else "recorded",
            client_alone_fates=dict(sorted(self.alone_fates.items())),
            client_fates=dict(sorted(self.client_fates.items())),
            result_search=self.result_search,
            bucket_s=bucket_s,
            timeline=timeline,
            largest=biggest,
        )

    def _recall_check(self, observe_seen: bool) -> PriorCheck:
        n_offloaded = len(self.offloaded_ids)
        observed_rate = (len(self.recalled_ids & self.offloaded_ids) / n_offloaded) if n_offloaded else None
        return PriorCheck(
            configured=self.settings.recall_probability,
            observed=observed_rate,
            samples=n_offloaded,
            suggested=round(observed_rate, 2)
            if observed_rate is not None and n_offloaded >= MIN_SAMPLES_FOR_SUGGESTION
            else None,
            note=(
                "share of offloaded results recalled at least once"
                if n_offloaded
                else "no offloaded results yet" + (" (observe mode offloads nothing)" if observe_seen else "")
            ),
        )

    def _horizon_check(self) -> PriorCheck:
        horizon_values = self.offload_horizons if self.offload_horizons.n else self.all_horizons
        return PriorCheck(
            configured=float(self.settings.horizon),
            observed=horizon_values.mean() if horizon_values.n else None,
            samples=horizon_values.n,
            suggested=_suggest_horizon(horizon_values),
            note=(
                "mean requests that carried each offloaded result: the calls that followed it in its session + 1"
                if self.offload_horizons.n
                else "mean requests that carried each result: the calls that followed it in its session + 1 (no offloads yet)"
            ),
        )

    def _assumptions(self, totals: ToolStats) -> list[str]:
        settings, price = self.settings, self.price
        assumptions = [
            f"model {self.model}: "
            + (
                f"input ${price.input:g}/M, output ${price.output:g}/M, cache write ({settings.cache_ttl}) ${price.cache_write(settings.cache_ttl):g}/M, cache read ${price.cache_read:g}/M"
                if price
                else "no pricing row, so dollars are not computed (add one under offload.policy.pricing)"
            ),
            *([self.price_note] if self.price_note else []),
            f"tokens = chars / {settings.chars_per_token:g}",
            (
                "prompt caching on: a kept token costs one cache write, then a cache read per later turn"
                if settings.prompt_caching
                else "prompt caching off: a kept token costs full input on every later turn"
            ),
            "requests that carried a result = the calls that followed it in its session + the one that read it (observed, not the configured horizon)",
            f"recalls and expands are charged back: returned chars as new input + {settings.recall_output_tokens} output tokens per call",
        ]
        counted = ", ".join(f"{name} x{n}" for name, n in self.clients.most_common())
        assumptions.append(
            f"'vs client alone' counts each result against what the client shows its model of the raw result ({counted}; "
            + (
                "named by --client"
                if self.named
                else "from the clientInfo recorded with each result, plain where none was"
            )
            + "); 'vs raw' against the raw result's characters"
        )
        if totals.observed:
            assumptions.append(
                f"observe mode: nothing was changed; 'would save' charges p_recall={settings.recall_probability:g} x one "
                f"{settings.recall_input_tokens}-token recall hop per would-be offload"
            )
        return assumptions


def _detail(event: Mapping[str, Any]) -> Mapping[str, Any]:
    """An event's detail: decoded by Ledger.events(), JSON text from Ledger.events_in_order()."""
    detail = event.get("detail")
    if isinstance(detail, str | bytes):
        detail = orjson.loads(detail) if detail else {}
    return detail if isinstance(detail, Mapping) else {}


def _search_ref(ref: str) -> str:
    """An id as searches and recalls both name it: a marker `<<cg:HASH>>` as its hash."""
    return ref.removeprefix("<<cg:").removesuffix(">>")


@dataclass
class IntMean:
    """The mean of whole numbers, kept as their exact sum and count: `mean()` equals statistics.fmean of
    the numbers themselves (both are the sum over the count, rounded once), and the pair is all a
    checkpoint needs to carry on."""

    total: int = 0
    n: int = 0

    def add(self, value: int) -> None:
        self.total += value
        self.n += 1

    def mean(self) -> float:
        return self.total / self.n


class SessionSet:
    """Sessions as sorted 64-bit hashes of their ids, with their count: what a checkpoint keeps of the
    sessions it counted, a few bytes each. A test of membership may say yes for a session that is not
    in the set (two ids with one hash), never no for one that is."""

    def __init__(self, hashes: Iterable[int] = (), count: int = 0) -> None:
        self.hashes = array("Q", sorted(set(hashes)))
        self.count = count

    @staticmethod
    def hash_of(session: str) -> int:
        return int.from_bytes(hashlib.blake2b(session.encode(), digest_size=8).digest(), "little")

    def holds_any(self, sessions: Iterable[str]) -> bool:
        hashes = self.hashes
        for session in sessions:
            h = self.hash_of(session)
            at = bisect_left(hashes, h)
            if at < len(hashes) and hashes[at] == h:
                return True
        return False

    def with_more(self, sessions: Mapping[str, int]) -> SessionSet:
        """This set and `sessions` (none of them in it: ended sessions do not go on)."""
        return SessionSet([*self.hashes, *map(self.hash_of, sessions)], self.count + len(sessions))

    def state(self) -> dict[str, Any]:
        hashes = array("Q", self.hashes)
        if sys.byteorder != "little":
            hashes.byteswap()
        return {"count": self.count, "hashes": base64.b64encode(hashes.tobytes()).decode()}

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> SessionSet:
        hashes = array("Q")
        hashes.frombytes(base64.b64decode(state["hashes"], validate=True))
        if sys.byteorder != "little":
            hashes.byteswap()
        sessions = cls(count=int(state["count"]))
        sessions.hashes = hashes
        return sessions


class Timeline:
    """Each event's part of the savings, bucketed as it arrives (events come in time order) by every
    bucket width the span still allows: a width is dropped once the span holds TIMELINE_BUCKETS of it,
    since the span only grows. `buckets()` picks the width the whole span fits, as if every event had
    been kept and bucketed at the end (same buckets, same sums, added in the same order), and what it
    holds is a few buckets per width, so a checkpoint can carry it."""

    def __init__(self) -> None:
        self.first: float | None = None
        self.last = 0.0
        self.origins: dict[float, float] = {}
        self.by_width: dict[float, dict[int, TimeBucket]] = {}

    def add(
        self,
        at: float,
        is_result: bool,
        observe: bool,
        tokens: float,
        usd: float,
        client_tokens: float,
        client_usd: float,
    ) -> None:
        if self.first is None:
            self.first = self.last = at
            self.origins = {w: at - at % w for w in BUCKET_WIDTHS_S}
            self.by_width = {w: {} for w in BUCKET_WIDTHS_S}
        elif at < self.first:
            raise ValueError(f"events out of time order: {at} before {self.first}")
        elif at > self.last:
            self.last = at
            span = at - self.first
            for width in [w for w in self.by_width if span / w >= TIMELINE_BUCKETS and w != BUCKET_WIDTHS_S[-1]]:
                del self.by_width[width], self.origins[width]
        for width, buckets in self.by_width.items():
            origin = self.origins[width]
            slot = int((at - origin) // width)
            bucket = buckets.get(slot)
            if bucket is None:
                bucket = buckets[slot] = TimeBucket(origin + slot * width)
            bucket.results += is_result
            if observe:
                bucket.would_tokens_saved += tokens
                bucket.would_usd_saved += usd
                bucket.would_client_tokens_saved += client_tokens
                bucket.would_client_usd_saved += client_usd
            else:
                bucket.tokens_saved += tokens
                bucket.usd_saved += usd
                bucket.client_tokens_saved += client_tokens
                bucket.client_usd_saved += client_usd

    def buckets(self) -> tuple[float, list[TimeBucket]]:
        """The width that fits the span in TIMELINE_BUCKETS (the widest if none does) and its buckets, oldest first."""
        if self.first is None:
            return 0.0, []
        span = self.last - self.first
        width = next((w for w in self.by_width if span / w < TIMELINE_BUCKETS), BUCKET_WIDTHS_S[-1])
        buckets = self.by_width[width]
        return width, [buckets[slot] for slot in sorted(buckets)]

    def state(self) -> dict[str, Any]:
        return {
            "first": self.first,
            "last": self.last,
            "widths": [
                [w, self.origins[w], [[slot, asdict(b)] for slot, b in buckets.items()]]
                for w, buckets in self.by_width.items()
            ],
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> Timeline:
        timeline = cls()
        timeline.first, timeline.last = state["first"], float(state["last"])
        for width, origin, buckets in state["widths"]:
            timeline.origins[float(width)] = float(origin)
            timeline.by_width[float(width)] = {int(slot): TimeBucket(**bucket) for slot, bucket in buckets}
        return timeline


def fold_ledger(
    ledger: Ledger,
    settings: PolicySettings | None = None,
    *,
    since: float | None = None,
    session_ids: Iterable[str] | None = None,
    model: str | None = None,
    client: str | None = None,
    owner: str | None = None,
) -> StatsReport:
    """Fold every event of the ledger (since `since`, of `session_ids`, of `owner`: a ledger ownership
    key, `principal:<name>`) into a report; analysis/reports.py carries on from a checkpoint instead.

    The database counts each session's calls (GROUP BY) and hands the events over in (at, id) order
    a page at a time, so the fold holds no event once it has counted it."""
    session_calls = ledger.session_calls(since, CALL_KINDS, owner)
    fold = Accumulator(settings, session_calls, model=model, client=client)
    wanted = set(session_ids) if session_ids is not None else None
    for event in ledger.events_in_order(since, CALL_KINDS, owner):
        if wanted is None or event.get("session_id") in wanted:
            fold.add(event)
    return fold.report(since)


def owned_by(events: Iterable[Mapping[str, Any]], owner: str) -> Iterator[Mapping[str, Any]]:
    """The events recorded for one caller: their `owner` (decision records and recall/expand details) is `owner`."""
    for event in events:
        if _detail(event).get("owner") == owner:
            yield event


# ---------------------------------------------------------------- durations


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_since(text: str, now: float | None = None) -> float:
    """`7d`, `12h`, `30m`, `2w` or an ISO date/time (UTC if no zone) -> a Unix time."""
    now = time.time() if now is None else now
    match = _DURATION.match(text)
    if match:
        return now - float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    from datetime import UTC, datetime

    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"--since {text!r}: use a duration like 7d, 12h, 30m, 2w or a date like 2026-01-31") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


# ---------------------------------------------------------------- exit summary


def _n(value: float) -> str:
    return f"{value:,.0f}"


CLIENT_TITLES = {"claude-code": "Claude Code", "plain": "a client that shows every byte"}


def client_title(name: str) -> str:
    return CLIENT_TITLES.get(name, name)


def _net(tokens: float, usd: float, *, priced: bool, model: str, would: bool) -> str:
    """One net figure with one sign: the dollars decide it when priced (they net out recalls), else the tokens.

    The tokens are named beside the dollars only when they point the same way, so no sentence claims
    a saving and a loss at once.
    """
    saved, cost = ("would have saved", "would have cost") if would else ("saved", "cost")
    kept, added = ("would have kept", "would have put") if would else ("kept", "put")
    if priced and abs(usd) >= 0.005:
        if usd > 0:
            extra = f" (~{_n(tokens)} tokens kept out of the context)" if tokens >= 0.5 else ""
            return f"{saved} ~${usd:,.2f} at {model}{extra}"
        extra = f" (~{_n(-tokens)} more tokens in the context)" if tokens <= -0.5 else ""
        return f"{cost} ~${-usd:,.2f} more at {model}{extra}"
    if tokens >= 0.5:
        return f"{kept} ~{_n(tokens)} tokens out of the context"
    if tokens <= -0.5:
        return f"{added} ~{_n(-tokens)} more tokens in the context"
    return ""


def saving_lines(report: StatsReport) -> list[str]:
    """The net saving against the raw results and against the client alone, one labelled line each,
    for what was done (enforce) and apart for what would have been (observe)."""
    t = report.totals
    lines: list[str] = []
    alone = client_title(report.client)
    fates = report.client_alone_fates
    gone = [f"{label} {fates[fate]}" for fate, label in (("rejected", "rejects"), ("file", "files")) if fates.get(fate)]
    fate_note = f"; {alone} alone {' and '.join(gone)} of these {t.results} result(s)" if gone else ""
    parts: list[tuple[bool, float, float, float, float]] = []
    if t.results > t.observed:
        parts.append((False, t.tokens_saved, t.usd_saved, t.client_tokens_saved, t.client_usd_saved))
    if t.observed:
        parts.append(
            (True, t.would_tokens_saved, t.would_usd_saved, t.would_client_tokens_saved, t.would_client_usd_saved)
        )
    for would, tokens, usd, client_tokens, client_usd in parts:
        against_raw = _net(tokens, usd, priced=report.priced, model=report.model, would=would)
        if against_raw:
            lines.append(f"against the raw results: {against_raw}")
        if report.client != "plain":
            against_client = _net(client_tokens, client_usd, priced=report.priced, model=report.model, would=would)
            if against_client:
                lines.append(f"against {alone} alone: {against_client}{fate_note}")
    return lines


def summary_lines(report: StatsReport) -> list[str]:
    """Short lines naming only the levers that fired; empty when none did (a quiet session stays quiet)."""
    t = report.totals
    lines: list[str] = []
    observe = t.observed > 0 and t.observed == t.results
    would = "would have " if observe else ""
    if report.reducer_acts:
        acts = ", ".join(f"{name} x{n}" for name, n in report.reducer_acts.items())
        lines.append(f"reducers {would}cut {t.reduced} of {t.results} results ({acts})")
    offloaded = sum(n for key, n in report.decisions.items() if key.startswith("offload/"))
    if offloaded:
        reasons = ", ".join(
            f"{key.split('/', 1)[1]} x{n}" for key, n in report.decisions.items() if key.startswith("offload/")
        )
        lines.append(f"{would}offloaded {offloaded} result(s) to the ledger ({reasons})")
    recalled, expanded = report.recall_calls - report.failed_recalls, report.expand_calls - report.failed_expands
    retrievals: list[str] = []
    if recalled or expanded:
        retrievals.append(f"{recalled} recall(s), {expanded} expand(s) brought details back")
    if report.failed_recalls or report.failed_expands:
        # Apart, as `offload-mcp stats` has them: a failure brought nothing back, and many say something is off.
        retrievals.append(f"{report.failed_recalls} recall(s), {report.failed_expands} expand(s) failed")
    if retrievals:
        lines.append("; ".join(retrievals))
    found = report.result_search
    if found.searches:
        lines.append(
            f"{found.searches} search(es) of stored results named {found.hits} hit(s); "
            f"{found.hops_saved} recall(s) followed a hit"
        )
    searches = sum(n for key, n in report.search_events.items() if key.startswith("tool_search/"))
    refusals = sum(n for key, n in report.search_events.items() if key.startswith("invoke/"))
    if searches or refusals:
        lines.append(
            f"tool search answered {searches} search(es)" + (f"; {refusals} invoke call(s) refused" if refusals else "")
        )
    if lines:
        lines += saving_lines(report)
    if lines and observe:
        lines.append("observe mode: every result was passed through unchanged; run `offload-mcp stats` for details")
    return lines


def exit_summary(
    ledger: Ledger | None,
    session_ids: Iterable[str] | None = None,
    settings: PolicySettings | None = None,
    *,
    since: float | None = None,
) -> str:
    """What `serve` prints to stderr on exit: only the levers that fired in these sessions; "" if none did.

    Never raises: a summary must not turn a clean shutdown into a failure.
    """
    if ledger is None:
        return ""
    try:
        report = fold_ledger(ledger, settings, since=since, session_ids=session_ids)
    except Exception as err:  # noqa: BLE001 - shutdown path
        return f"offload-mcp: no summary ({type(err).__name__}: {err})"
    lines = summary_lines(report)
    if not lines:
        return ""
    return "\n".join(["offload-mcp summary:"] + [f"  {line}" for line in lines])
