"""The dashboard: one read-only HTML page of what `stats` computes, with plots drawn here as inline SVG.

How it works: `render_page(report, ...)` lays out a StatsReport (stats.aggregate, the one
computation `stats --json` prints) as HTML: the savings over time against the raw results and
against the client alone, per server and tool the calls, characters, decisions, reducers and
retrievals, the largest results with the call that recalls each, and the settings `stats`
suggests with their evidence. Every figure taken from the report carries it exactly in
`data-figure` (its path in `stats --json`) and `data-value` (the JSON number), so a test or a
script can check the page against `stats --json` without parsing formatted text.

No script, stylesheet, font or image is fetched: the page works offline and as one file
(`offload-mcp stats --html FILE`). GET /dashboard (upstream/http_extras.py) serves the same page
with its tables paged (`?tools_page=N&largest_page=N`); the file holds every row. The same
report and arguments give the same bytes: nothing here reads the clock.
"""

from __future__ import annotations

import html
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeVar

import orjson

from ..policy.settings import PolicySettings
from ..store import Ledger
from .reports import report_from_ledger
from .stats import MIN_SAMPLES_FOR_SUGGESTION, LargeResult, StatsReport, ToolStats, client_title
from .stats_checkpoint import MIN_NEW_EVENTS, report_with_checkpoint

_Format = Callable[[float], str]
_T = TypeVar("_T")

PAGE_ROWS = 25
"""Rows per page of a paged table (the served page); the file shows every row."""
RECALL_TOOL = "recall_tool_result"

_RAW_COLOUR = "#2563eb"
_CLIENT_COLOUR = "#d97706"
_OUT_COLOUR = "#059669"

_STYLE = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;background:#f6f7f9;color:#1f2937}
header{background:#111827;color:#f9fafb;padding:14px 24px}header h1{margin:0;font-size:20px}
header p{margin:4px 0 0;color:#d1d5db;font-size:13px}
main{padding:16px 24px}
.wide{overflow-x:auto}td.why{min-width:220px;max-width:300px}
section{background:#fff;border:1px solid #e5e7eb;border-radius:8px;padding:12px 16px;margin:0 0 16px}
h2{font-size:16px;margin:0 0 8px}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin:0 0 16px}
.card{background:#fff;border:1px solid #e5e7eb;border-radius:8px;padding:10px 14px;min-width:180px}
.card b{display:block;font-size:22px}.card span{color:#6b7280;font-size:12px}
.neg{color:#b91c1c}
.plots{display:flex;flex-wrap:wrap;gap:16px}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{padding:4px 8px;border-bottom:1px solid #eef0f3;text-align:left;vertical-align:top}
th{background:#f9fafb;font-weight:600}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
code{font:12px ui-monospace,Menlo,Consolas,monospace;background:#f3f4f6;padding:1px 4px;border-radius:3px}
.small{font-size:12px;color:#4b5563}.pager a{margin-right:10px}
.legend{font-size:12px}.legend i{display:inline-block;width:10px;height:10px;margin:0 4px 0 10px}
"""


REFRESH_WAIT_S = 0.5
"""How long a page waits for a fresh report before it shows the last one (marked as such)."""


@dataclass
class CountedReport:
    """A report with the ledger's events mark it counted up to, and how many events came after it."""

    report: StatsReport
    mark: tuple[int, int]
    """The ledger's (lowest, highest event id) when the report was computed."""
    newer: int = 0
    """About how many events were recorded since the mark, not counted yet (0: the report is current)."""


class _Refresh:
    def __init__(self, mark: tuple[int, int]) -> None:
        self.mark = mark
        self.done = threading.Event()
        self.result: StatsReport | None = None
        self.error: BaseException | None = None


class ReportCache:
    """The last report for each viewer, recomputed when the ledger's events mark (lowest, highest id) moves.

    Aggregating a large ledger takes seconds (stats folds every event, a page at a time). A page opened
    while nothing was recorded costs one count; once events were recorded, the report is
    recomputed in a thread while the page waits at most `wait_s`, then shows the last report,
    saying how many events it does not count yet (the next open shows the new one). The mark is
    the ledger's, so replicas on a shared ledger agree on it. One refresh runs per viewer at a time.
    """

    def __init__(self, most: int = 32, wait_s: float = REFRESH_WAIT_S) -> None:
        self.most = most
        self.wait_s = wait_s
        self._reports: OrderedDict[str | None, CountedReport] = OrderedDict()
        self._refreshing: dict[str | None, _Refresh] = {}
        self._lock = threading.Lock()

    def report(self, ledger: Ledger, settings: PolicySettings, owner: str | None) -> CountedReport:
        mark = ledger.events_mark()
        with self._lock:
            kept = self._reports.get(owner)
            if kept is not None and kept.mark == mark:
                self._reports.move_to_end(owner)
                return kept
            refresh = self._refreshing.get(owner)
            if refresh is None:
                refresh = self._refreshing[owner] = _Refresh(mark)
                threading.Thread(
                    target=self._compute, args=(refresh, ledger, settings, owner), name="dashboard-report", daemon=True
                ).start()
        # With nothing to show yet the page waits for the report, however long it takes.
        if not refresh.done.wait(None if kept is None else self.wait_s):
            assert kept is not None
            return CountedReport(kept.report, kept.mark, newer=max(1, mark[1] - kept.mark[1]))
        if refresh.error is not None:
            raise refresh.error
        assert refresh.result is not None
        return CountedReport(refresh.result, refresh.mark)

    def _compute(self, refresh: _Refresh, ledger: Ledger, settings: PolicySettings, owner: str | None) -> None:
        try:
            # Events recorded after the mark are counted too; the next mark differs, so it is recomputed.
            refresh.result = report_from_ledger(ledger, settings, owner=owner)
        except BaseException as err:  # handed to the waiting page, which answers with it
            refresh.error = err
        with self._lock:
            if refresh.result is not None:
                self._reports[owner] = CountedReport(refresh.result, refresh.mark)
                self._reports.move_to_end(owner)
                while len(self._reports) > self.most:
                    self._reports.popitem(last=False)
            self._refreshing.pop(owner, None)
        refresh.done.set()

    def viewers(self) -> list[str | None]:
        """The viewers whose report is kept, least recently seen first."""
        with self._lock:
            return list(self._reports)


log = logging.getLogger(__name__)

CHECKPOINT_EVERY_S = 300.0
"""How often a serving proxy looks whether enough events were recorded to carry the stats checkpoints on."""


class CheckpointKeeper:
    """Carries the ledger's stats checkpoints on while a proxy serves, in a thread of its own (never on
    a call's path), so that a page opened by a process that has just started, or after a busy spell,
    folds few events: every `every_s` it reads the events mark, and once `min_new` events were recorded
    since it last wrote, it writes the checkpoint of every caller's rows and of each viewer the page
    cache holds (a tail fold each, since the stored checkpoint is carried on)."""

    def __init__(
        self,
        ledger: Ledger,
        settings: PolicySettings,
        reports: ReportCache,
        *,
        every_s: float = CHECKPOINT_EVERY_S,
        min_new: int = MIN_NEW_EVENTS,
    ) -> None:
        self.ledger, self.settings, self.reports = ledger, settings, reports
        self.every_s, self.min_new = every_s, min_new
        self.written_through = 0
        self._stop = threading.Event()

    def start(self) -> None:
        threading.Thread(target=self._loop, name="stats-checkpoint", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def run_once(self) -> int:
        """Write the checkpoints if enough events were recorded since the last time; how many were written."""
        highest = self.ledger.events_mark()[1]
        if highest - self.written_through < self.min_new:
            return 0
        owners = dict.fromkeys([None, *self.reports.viewers()])
        for owner in owners:
            report_with_checkpoint(self.ledger, self.settings, owner=owner, min_new=self.min_new)
        self.written_through = highest
        return len(owners)

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                self.run_once()
            except Exception as err:  # noqa: BLE001 - a cache of derived data: the next round tries again
                log.warning("stats checkpoint not carried on: %s: %s", type(err).__name__, err)


@dataclass(frozen=True)
class Pages:
    """Which page of each paged table to show; None: every row (the file)."""

    tools: int | None = None
    largest: int | None = None


def render_page(
    report: StatsReport,
    *,
    ledger: str,
    viewer: str = "every caller",
    pages: Pages | None = None,
    counted: CountedReport | None = None,
) -> str:
    """The whole dashboard for one report; `viewer` says whose rows it holds (`principal alice`, `every caller`)."""
    pages = pages or Pages()
    t = report.totals
    alone = client_title(report.client) if len(report.clients) <= 1 else "each client"
    window = _span(report)
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>offload-mcp dashboard</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<header><h1>offload-mcp dashboard</h1>",
        f"<p>ledger {_e(ledger)} · showing {_e(viewer)} · {window} · "
        f"{_fig('totals.results', t.results, _int)} results in {_fig('sessions', report.sessions, _int)} session(s) · "
        f"priced at {_e(report.model)}{'' if report.priced else ' (no pricing row: dollars not computed)'}</p>",
        _counted(counted),
        "</header>",
        "<main>",
        _cards(report, alone),
        _plots(report, alone),
        _tools(report, alone, pages.tools),
        _decisions(report),
        _retrievals(report),
        _largest(report.largest, pages.largest),
        _suggestions(report),
        _assumptions(report),
        "</main></body></html>",
    ]
    return "\n".join(part for part in parts if part) + "\n"


# ---------------------------------------------------------------- pieces


def _counted(counted: CountedReport | None) -> str:
    if counted is None:
        return ""
    note = f"counted up to event {counted.mark[1]:,}"
    if counted.newer:
        note += f"; about {counted.newer:,} event(s) recorded since are being counted: reload in a moment"
    return f"<p>{note}</p>"


def _cards(report: StatsReport, alone: str) -> str:
    t = report.totals
    cards = [
        ("tokens saved vs raw", _fig("totals.tokens_saved", t.tokens_saved, _int)),
        ("$ saved vs raw", _fig("totals.usd_saved", t.usd_saved, _usd)),
    ]
    if report.client != "plain":
        cards += [
            (f"tokens saved vs {alone} alone", _fig("totals.client_tokens_saved", t.client_tokens_saved, _int)),
            (f"$ saved vs {alone} alone", _fig("totals.client_usd_saved", t.client_usd_saved, _usd)),
        ]
    if t.observed:
        cards += [
            ("would save tokens vs raw (observe)", _fig("totals.would_tokens_saved", t.would_tokens_saved, _int)),
            ("would save $ vs raw (observe)", _fig("totals.would_usd_saved", t.would_usd_saved, _usd)),
        ]
    cards += [
        ("results reduced", _fig("totals.reduced", t.reduced, _int)),
        ("results offloaded", _fig("totals.offloaded", t.offloaded, _int)),
        ("offloads recalled", _fig("totals.recalls", t.recalls, _int)),
    ]
    body = "".join(f'<div class="card"><b>{value}</b><span>{_e(label)}</span></div>' for label, value in cards)
    return f'<div class="cards">{body}</div>'


def _plots(report: StatsReport, alone: str) -> str:
    if not report.timeline:
        return "<section><h2>Savings over time</h2><p>No results recorded yet.</p></section>"
    times = [b.start for b in report.timeline]
    tokens = [("vs raw", _RAW_COLOUR, _cumulative(b.tokens_saved + b.would_tokens_saved for b in report.timeline))]
    dollars = [("vs raw", _RAW_COLOUR, _cumulative(b.usd_saved + b.would_usd_saved for b in report.timeline))]
    if report.client != "plain":
        tokens.append(
            (
                f"vs {alone} alone",
                _CLIENT_COLOUR,
                _cumulative(b.client_tokens_saved + b.would_client_tokens_saved for b in report.timeline),
            )
        )
        dollars.append(
            (
                f"vs {alone} alone",
                _CLIENT_COLOUR,
                _cumulative(b.client_usd_saved + b.would_client_usd_saved for b in report.timeline),
            )
        )
    step = _duration(report.bucket_s)
    charts = [line_chart("tokens saved (cumulative)", times, tokens, _short)]
    if report.priced:
        charts.append(line_chart("dollars saved (cumulative)", times, dollars, lambda v: f"${v:,.2f}"))
    top = report.rows[:12]
    charts.append(
        bar_chart(
            "characters in vs out, largest tools",
            [f"{r.server} · {r.tool}" for r in top],
            [
                ("in (server sent)", _RAW_COLOUR, [r.chars_in for r in top]),
                ("out", _OUT_COLOUR, [r.chars_out for r in top]),
            ],
        )
    )
    return (
        f'<section><h2>Savings over time</h2><p class="small">one point per {step} with results; '
        "recall and expand hops are charged when they happened; observe-mode results count what they would have saved</p>"
        f'<div class="plots">{"".join(charts)}</div></section>'
    )


_TOOL_FIGURES: tuple[tuple[str, str, str], ...] = (
    ("results", "calls", "int"),
    ("reduced", "reduced", "int"),
    ("offloaded", "offloaded", "int"),
    ("recalls", "recalled", "int"),
    ("expands", "expanded", "int"),
    ("chars_in", "chars in", "int"),
    ("chars_out", "chars out", "int"),
    ("tokens_saved", "tokens vs raw", "int"),
    ("usd_saved", "$ vs raw", "usd"),
)
_CLIENT_FIGURES = (("client_tokens_saved", "tokens vs {alone}", "int"), ("client_usd_saved", "$ vs {alone}", "usd"))
_WOULD_FIGURES = (("would_tokens_saved", "would save tokens", "int"), ("would_usd_saved", "would save $", "usd"))


def _tools(report: StatsReport, alone: str, page: int | None) -> str:
    figures = list(_TOOL_FIGURES)
    if report.client != "plain":
        figures += [(name, label.format(alone=f"{alone} alone"), kind) for name, label, kind in _CLIENT_FIGURES]
    if report.totals.observed:
        figures += list(_WOULD_FIGURES)
    shown, pager = _page(list(enumerate(report.rows)), page, "tools_page")
    head = "".join(f'<th class="n">{_e(label)}</th>' for _, label, _ in figures)
    rows = []
    for index, row in shown:
        cells = "".join(
            f'<td class="n">{_fig(f"rows.{index}.{name}", getattr(row, name), _FORMATS[kind])}</td>'
            for name, _, kind in figures
        )
        rows.append(
            f"<tr><td>{_e(row.server)}</td><td>{_e(row.tool)}</td>{cells}<td class='n'>{_recall_rate(row)}</td>"
            f"<td class='small why'>{_detail(row)}</td></tr>"
        )
    t = report.totals
    foot = "".join(
        f'<td class="n"><b>{_fig(f"totals.{name}", getattr(t, name), _FORMATS[kind])}</b></td>'
        for name, _, kind in figures
    )
    return (
        "<section><h2>Per server and tool</h2>"
        f"<div class='wide'><table><thead><tr><th>server</th><th>tool</th>{head}"
        f"<th class='n'>recalled / offloaded (prior {report.recall.configured:.2f})</th>"
        "<th>decisions · reducers acted · declined (reason)</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody><tfoot><tr><td><b>all</b></td><td></td>{foot}"
        f"<td class='n'>{_recall_rate(t)}</td><td></td></tr></tfoot></table></div>"
        f"{pager}</section>"
    )


def _recall_rate(row: ToolStats) -> str:
    """This tool's offloads recalled at least once, beside the gate's prior; none in observe mode (nothing offloaded)."""
    offloaded = row.offloaded if not row.observed else 0
    return f"{row.recalls / offloaded:.2f}" if offloaded else "–"


def _detail(row: ToolStats) -> str:
    parts = [_counts(row.decisions)]
    if row.reducers_acted:
        parts.append("acted: " + _counts(row.reducers_acted))
    if row.reducer_declines:
        declined = sum(row.reducer_declines.values())
        parts.append(f"<details><summary>declined {declined:,}</summary>{_counts(row.reducer_declines)}</details>")
    return "<br>".join(parts)


def _decisions(report: StatsReport) -> str:
    charts = [
        bar_chart(
            "decisions (verdict/reason)",
            list(report.decisions),
            [("results", _RAW_COLOUR, list(report.decisions.values()))],
        )
    ]
    if report.reducer_acts:
        charts.append(
            bar_chart(
                "reducers acted",
                list(report.reducer_acts),
                [("results", _OUT_COLOUR, list(report.reducer_acts.values()))],
            )
        )
    if report.reducer_declines:
        charts.append(
            bar_chart(
                "reducers declined (reducer/reason)",
                list(report.reducer_declines),
                [("results", _CLIENT_COLOUR, list(report.reducer_declines.values()))],
            )
        )
    return f'<section><h2>Decisions and reducers</h2><div class="plots">{"".join(charts)}</div></section>'


def _retrievals(report: StatsReport) -> str:
    recall = report.recall
    observed = "n/a" if recall.observed is None else _fig("recall.observed", recall.observed, _rate)
    searches = _counts(report.search_events) if report.search_events else "none recorded"
    return (
        "<section><h2>Recalls, expands and searches</h2><table><tbody>"
        f"<tr><td>recall calls</td><td class='n'>{_fig('recall_calls', report.recall_calls, _int)}</td>"
        f"<td>failed {_fig('failed_recalls', report.failed_recalls, _int)}</td></tr>"
        f"<tr><td>expand calls</td><td class='n'>{_fig('expand_calls', report.expand_calls, _int)}</td>"
        f"<td>failed {_fig('failed_expands', report.failed_expands, _int)}</td></tr>"
        f"<tr><td>recall rate after an offload</td><td class='n'>{observed}</td>"
        f"<td>over {_fig('recall.samples', recall.samples, _int)} offloaded result(s); configured prior "
        f"{_fig('recall.configured', recall.configured, _rate)} ({_e(recall.note)})</td></tr>"
        f"<tr><td>tool search</td><td colspan='2'>{searches}</td></tr>"
        f"{_result_search(report)}"
        "</tbody></table></section>"
    )


def _result_search(report: StatsReport) -> str:
    """Searches across stored results, where this build's report counts them (the report's `result_search`)."""
    found = getattr(report, "result_search", None)
    if found is None:
        return ""
    return (
        f"<tr><td>result searches</td><td class='n'>{_fig('result_search.searches', found.searches, _int)}</td>"
        f"<td>failed {_fig('result_search.failed', found.failed, _int)}; "
        f"ids named {_fig('result_search.hits', found.hits, _int)}; "
        f"recalls of a named id (hops saved) {_fig('result_search.hops_saved', found.hops_saved, _int)}</td></tr>"
    )


def _largest(largest: Sequence[LargeResult], page: int | None) -> str:
    if not largest:
        return ""
    shown, pager = _page(list(enumerate(largest)), page, "largest_page")
    rows = []
    for index, item in shown:
        call = (
            f"<code>{_e(RECALL_TOOL)} {_e(orjson.dumps({'mem_id': item.trm_id}).decode())}</code>"
            if item.trm_id and item.verdict == "offload"
            else "<span class='small'>not offloaded: nothing to recall</span>"
        )
        rows.append(
            f"<tr><td class='n'>{_fig(f'largest.{index}.event_id', item.event_id, _plain)}</td>"
            f"<td>{_when(item.at)}</td><td>{_e(item.server)} · {_e(item.tool)}</td>"
            f"<td class='n'>{_fig(f'largest.{index}.chars_in', item.chars_in, _int)}</td>"
            f"<td>{_e(item.verdict)} / {_e(item.reason)}</td>"
            f"<td class='n'>{_fig(f'largest.{index}.chars_out', item.chars_out, _int)}</td>"
            f"<td>{'yes' if item.recalled else 'no'}</td><td>{call}</td></tr>"
        )
    return (
        "<section><h2>Largest results</h2>"
        "<table><thead><tr><th class='n'>event</th><th>at (UTC)</th><th>server · tool</th><th class='n'>chars in</th>"
        "<th>verdict / reason</th><th class='n'>chars sent (stub)</th><th>recalled</th><th>the call that recalls it</th>"
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table>{pager}</section>"
    )


def _suggestions(report: StatsReport) -> str:
    lines = []
    suggested = []
    for name, check, shown in (
        ("recall_probability", report.recall, _rate),
        ("horizon", report.horizon, lambda v: f"{v:,.1f}"),
    ):
        observed = "n/a" if check.observed is None else _fig(f"{_path(name)}.observed", check.observed, shown)
        hint = (
            f"suggest {_fig(f'{_path(name)}.suggested', check.suggested, shown)}"
            if check.suggested is not None
            else f"no suggestion yet (needs {MIN_SAMPLES_FOR_SUGGESTION} or more samples)"
        )
        if check.suggested is not None:
            value = check.suggested if name == "recall_probability" else int(check.suggested)
            suggested.append(f'"{name}": {value}')
        lines.append(
            f"<tr><td><code>{name}</code></td><td class='n'>{_fig(f'{_path(name)}.configured', check.configured, shown)}</td>"
            f"<td class='n'>{observed}</td><td class='n'>{_fig(f'{_path(name)}.samples', check.samples, _int)}</td>"
            f"<td>{hint}</td><td class='small'>{_e(check.note)}</td></tr>"
        )
    config = '{"offload": {"policy": {' + ", ".join(suggested) + "}}}"
    snippet = f"<p>suggested: <code>{_e(config)}</code></p>" if suggested else ""
    return (
        "<section><h2>Suggested settings</h2><table><thead><tr><th>setting</th><th class='n'>configured</th>"
        "<th class='n'>observed</th><th class='n'>samples</th><th>suggestion</th><th>evidence</th></tr></thead>"
        f"<tbody>{''.join(lines)}</tbody></table>{snippet}</section>"
    )


def _assumptions(report: StatsReport) -> str:
    items = "".join(f"<li>{_e(line)}</li>" for line in report.assumptions)
    return f"<section><h2>How these figures are counted</h2><ul class='small'>{items}</ul></section>"


# ---------------------------------------------------------------- plots


def line_chart(
    title: str,
    times: Sequence[float],
    series: Sequence[tuple[str, str, Sequence[float]]],
    label: _Format,
    *,
    width: int = 520,
    height: int = 220,
) -> str:
    """Lines over time as inline SVG: one polyline per series, the y axis from min(0, lowest) to the highest."""
    left, right, top, bottom = 70, 12, 26, 34
    values = [v for _, _, points in series for v in points]
    low, high = min(0.0, *values), max(0.0, *values)
    if high == low:
        high = low + 1.0
    t0, t1 = times[0], times[-1]
    span = (t1 - t0) or 1.0

    def x(at: float) -> float:
        return left + (at - t0) / span * (width - left - right) if len(times) > 1 else (left + width - right) / 2

    def y(value: float) -> float:
        return top + (high - value) / (high - low) * (height - top - bottom)

    out = [_svg_open(title, width, height)]
    for k in range(5):
        value = low + (high - low) * k / 4
        out.append(
            f'<line x1="{left}" x2="{width - right}" y1="{y(value):.1f}" y2="{y(value):.1f}" stroke="#e5e7eb"/>'
            f'<text x="{left - 6}" y="{y(value) + 4:.1f}" text-anchor="end" font-size="11" fill="#6b7280">{_e(label(value))}</text>'
        )
    out.append(f'<line x1="{left}" x2="{width - right}" y1="{y(0):.1f}" y2="{y(0):.1f}" stroke="#9ca3af"/>')
    for at, anchor in ((t0, "start"), (t1, "end")):
        out.append(
            f'<text x="{x(at):.1f}" y="{height - 12}" text-anchor="{anchor}" font-size="11" fill="#6b7280">{_when(at)}</text>'
        )
    for _, colour, points in series:
        coords = " ".join(f"{x(at):.1f},{y(value):.1f}" for at, value in zip(times, points, strict=True))
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{coords}"/>')
        if len(points) == 1:
            out.append(f'<circle cx="{x(times[0]):.1f}" cy="{y(points[0]):.1f}" r="3" fill="{colour}"/>')
    out.append("</svg>")
    return _figure(out, series)


def bar_chart(
    title: str, labels: Sequence[str], series: Sequence[tuple[str, str, Sequence[float]]], *, width: int = 520
) -> str:
    """Horizontal bars, one group per label, one bar per series, scaled to the largest value."""
    left, right, top, bar, gap = 190, 70, 26, 9, 6
    group = bar * len(series) + gap
    height = top + group * len(labels) + 8
    highest = max((v for _, _, values in series for v in values), default=0) or 1
    out = [_svg_open(title, width, height)]
    for i, name in enumerate(labels):
        y0 = top + i * group
        out.append(
            f'<text x="{left - 6}" y="{y0 + bar * len(series) / 2 + 4:.1f}" text-anchor="end" font-size="11" '
            f'fill="#374151">{_e(_clip(name, 30))}</text>'
        )
        for k, (_, colour, values) in enumerate(series):
            length = values[i] / highest * (width - left - right)
            yk = y0 + k * bar
            out.append(
                f'<rect x="{left}" y="{yk}" width="{max(length, 0.5):.1f}" height="{bar - 1}" fill="{colour}"/>'
                f'<text x="{left + length + 4:.1f}" y="{yk + bar - 1}" font-size="10" fill="#4b5563">{_short(values[i])}</text>'
            )
    out.append("</svg>")
    return _figure(out, series if len(series) > 1 else ())


def _svg_open(title: str, width: int, height: int) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{_e(title)}"><text x="0" y="14" font-size="13" font-weight="600" fill="#111827">{_e(title)}</text>'
    )


def _figure(svg: list[str], series: Iterable[tuple[str, str, object]]) -> str:
    legend = "".join(f'<i style="background:{colour}"></i>{_e(name)}' for name, colour, _ in series)
    return f'<div>{"".join(svg)}<div class="legend">{legend}</div></div>'


# ---------------------------------------------------------------- formatting


def _int(value: float) -> str:
    return f"{value:,.0f}"


def _plain(value: float) -> str:
    return f"{value:.0f}"


def _usd(value: float) -> str:
    return f"-${-value:,.2f}" if value <= -0.005 else f"${max(value, 0.0):,.2f}"


def _rate(value: float) -> str:
    return f"{value:.2f}"


_FORMATS: Mapping[str, _Format] = {"int": _int, "usd": _usd}


def _short(value: float) -> str:
    for size, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:.1f}{unit}"
    return f"{value:.0f}"


def _fig(path: str, value: float | None, shown: _Format) -> str:
    """A figure from the report: formatted for the eye, exact (as `stats --json` has it) in data-value."""
    if value is None:
        return "n/a"
    exact = orjson.dumps(value).decode()
    text = shown(value)
    cls = ' class="neg"' if text.startswith("-") else ""
    return f'<span data-figure="{_e(path)}" data-value="{exact}"{cls}>{_e(text)}</span>'


def _path(name: str) -> str:
    return "recall" if name == "recall_probability" else name


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{_e(key)} {n:,}" for key, n in counts.items())


def _cumulative(values: Iterable[float]) -> list[float]:
    total, out = 0.0, []
    for value in values:
        total += value
        out.append(total)
    return out


def _page(items: list[_T], page: int | None, name: str) -> tuple[list[_T], str]:
    if page is None or len(items) <= PAGE_ROWS:
        return items, ""
    last = (len(items) - 1) // PAGE_ROWS
    page = min(max(page, 0), last)
    links = [f"page {page + 1} of {last + 1}"]
    if page > 0:
        links.append(f'<a href="?{name}={page - 1}">previous</a>')
    if page < last:
        links.append(f'<a href="?{name}={page + 1}">next</a>')
    return items[page * PAGE_ROWS : (page + 1) * PAGE_ROWS], f'<p class="pager small">{" ".join(links)}</p>'


def _span(report: StatsReport) -> str:
    if not report.timeline:
        return "no events"
    first = report.timeline[0].start
    last = report.timeline[-1].start + report.bucket_s
    return f"{_when(first)} to {_when(last)} UTC"


def _when(at: float) -> str:
    return datetime.fromtimestamp(at, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


def _duration(seconds: float) -> str:
    for size, unit in ((86400, "day"), (3600, "hour"), (60, "minute")):
        if seconds >= size and seconds % size == 0:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if n > 1 else ''}" if n > 1 else unit
    return f"{seconds:g} s"


def _clip(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)
