"""What one proxy process did, for operators: Prometheus metrics and one log line per call.

How it works: the server owns one `ProxyMetrics` per process and calls
`observe_call(...)` once per downstream tool call (after shaping), plus
`observe_recall`, `observe_expand` and `observe_restart` as those happen.
Each call updates the counters and histograms below and writes one
structured line to the `offload_mcp.calls` logger at INFO: server, tool,
decision, reason, sizes, duration. Bodies and argument values never appear
in that line unless `offload.server.log_bodies` is on.

Each `ProxyMetrics` has its own `CollectorRegistry` (not prometheus-client's
global one), so tests and embedders can run several proxies in one process.
`metrics_route(metrics)` serves it as `GET /metrics` on the HTTP transports;
on stdio there is no HTTP face, so the counters stay inert and only the log
line is written.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any

import orjson
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from ..downstream.budget import InflightBudget
from ..record import DecisionEvent
from ..reducers.pipeline import ReducerEvent

call_log = logging.getLogger("offload_mcp.calls")

PREFIX = "offload_mcp"
# Calls span a cache hit of a millisecond to a minutes-long git log; shaping takes a few milliseconds.
CALL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
SHAPE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class ProxyMetrics:
    """The metric objects of one proxy process, on a private registry."""

    def __init__(self, *, chars_per_token: float = 4.0, log_bodies: bool = False) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}
        self.chars_per_token = chars_per_token
        self.log_bodies = log_bodies
        # Defined in exposition order: the registry renders its collectors as they were registered.
        self._define_result_metrics()
        self._define_operation_metrics()

    def _define_result_metrics(self) -> None:
        """Counters of what results were and became: calls, decisions, reducers, chars and tokens."""
        r = self.registry
        self.calls = Counter(
            f"{PREFIX}_calls",
            "Downstream tool calls answered, by outcome (ok, error).",
            ["server", "tool", "outcome"],
            registry=r,
        )
        self.results = Counter(
            f"{PREFIX}_results",
            "Results by policy decision and its reason; mode=observe counts what would have happened.",
            ["server", "decision", "reason", "mode"],
            registry=r,
        )
        self.reducer_events = Counter(
            f"{PREFIX}_reducer_events",
            "Reducer runs by reducer, outcome (acted, declined) and reason.",
            ["reducer", "outcome", "reason"],
            registry=r,
        )
        self.chars_in = Counter(
            f"{PREFIX}_result_chars_in",
            "Characters of results the downstream servers sent (text + structuredContent + _meta).",
            ["server"],
            registry=r,
        )
        self.chars_out = Counter(
            f"{PREFIX}_result_chars_out",
            "Characters of results the client received, both channels (in observe mode: the original).",
            ["server", "mode"],
            registry=r,
        )
        self.tokens_saved = Counter(
            f"{PREFIX}_tokens_saved",
            "Estimated tokens kept out of the transcript (chars saved / chars_per_token); mode=observe: what the reducers would have saved.",
            ["server", "mode"],
            registry=r,
        )
        self.tokens_saved_net = Gauge(
            f"{PREFIX}_tokens_saved_net",
            "Estimated tokens kept out of the model's context, net, by baseline: raw (the results as the servers sent "
            "them, as tokens_saved counts) or client_alone (what the calling client, named by its clientInfo, shows its "
            "model of them without the proxy: Claude Code files over 50,000 chars with a 2,000-char preview and "
            "answers over 400,000 with an error naming the saved file). Negative where the proxy put more in than the "
            "client alone would (a stub beside a preview). mode=observe: what enforce mode would have sent.",
            ["server", "mode", "baseline", "client"],
            registry=r,
        )
        self.client_alone_results = Counter(
            f"{PREFIX}_client_alone_results",
            "Results by what the calling client alone would have done with the raw result (inline, file, rejected).",
            ["client", "fate"],
            registry=r,
        )

    def _define_operation_metrics(self) -> None:
        """Counters and timings of the proxy's own work: retrieval, restarts, pass-throughs, durations."""
        r = self.registry
        self.recalls = Counter(
            f"{PREFIX}_recalls", "recall_tool_result calls, by outcome (ok, error).", ["outcome"], registry=r
        )
        self.expands = Counter(
            f"{PREFIX}_expands",
            "context_guru_expand calls and GET /expand requests, by outcome.",
            ["outcome", "via"],
            registry=r,
        )
        self.restarts = Counter(
            f"{PREFIX}_downstream_restarts",
            "Downstream server restarts after a crash or timeout.",
            ["server"],
            registry=r,
        )
        self.shape_failures = Counter(
            f"{PREFIX}_passthrough_failures",
            "Results passed through unmodified because shaping or the ledger failed, by cause.",
            ["cause"],
            registry=r,
        )
        self.call_seconds = Histogram(
            f"{PREFIX}_call_duration_seconds",
            "Wall time of a tool call through the proxy, downstream included.",
            ["server"],
            buckets=CALL_BUCKETS,
            registry=r,
        )
        self.shape_seconds = Histogram(
            f"{PREFIX}_shape_duration_seconds",
            "Wall time spent shaping one result (reducers, policy, ledger commit).",
            ["server"],
            buckets=SHAPE_BUCKETS,
            registry=r,
        )

    def _child(self, metric: Any, *labels: str) -> Any:
        """`metric.labels(*labels)`, kept: prometheus-client validates and locks on every lookup,
        a dozen times a call; the children live as long as the registry, so the cache is as bounded as it."""
        key = (id(metric), labels)
        found = self._children.get(key)
        if found is None:
            found = self._children[key] = metric.labels(*labels)
        return found

    # ------------------------------------------------------------ hooks the server calls

    def observe_call(
        self,
        *,
        server: str,
        tool: str,
        duration_s: float,
        decision: str,
        reason: str = "",
        chars_in: int = 0,
        chars_out: int = 0,
        reducer_events: Iterable[ReducerEvent] = (),
        is_error: bool = False,
        observe: bool = False,
        shape_s: float | None = None,
        arguments: Mapping[str, Any] | None = None,
        body: str | None = None,
        would_chars_out: int | None = None,
        quiet: bool = False,
    ) -> str:
        """Record one downstream call and log its line; returns the line (for tests and the demo).

        `quiet` (the server's call path): the line is formatted only when the `offload_mcp.calls`
        logger would write it (INFO; off by default), else "" is returned.

        In observe mode the client gets the original (`chars_out == chars_in`); `would_chars_out` is
        what enforce mode would have sent, counted in tokens_saved{mode="observe"}.

        `decision` is a record's verdict (keep, reduce, offload) or `passthrough` for a result that was
        not shaped. `arguments` and `body` are logged only when log_bodies is on.
        """
        mode = "observe" if observe else "enforce"
        child = self._child
        child(self.calls, server, tool, "error" if is_error else "ok").inc()
        child(self.results, server, decision, reason or "none", mode).inc()
        for event in reducer_events:
            acted = event.acted
            child(
                self.reducer_events,
                event.reducer,
                "acted" if acted else "declined",
                "acted" if acted else (event.reason or "none"),
            ).inc()
        child(self.chars_in, server).inc(max(0, chars_in))
        child(self.chars_out, server, mode).inc(max(0, chars_out))
        shaped = would_chars_out if observe and would_chars_out is not None else chars_out
        saved = max(0, chars_in - shaped)
        if saved:
            child(self.tokens_saved, server, mode).inc(saved / self.chars_per_token)
        child(self.call_seconds, server).observe(max(0.0, duration_s))
        if shape_s is not None:
            child(self.shape_seconds, server).observe(max(0.0, shape_s))
        if quiet and not call_log.isEnabledFor(logging.INFO):
            return ""
        line = call_log_line(
            server=server,
            tool=tool,
            decision=decision,
            reason=reason,
            chars_in=chars_in,
            chars_out=chars_out,
            duration_s=duration_s,
            is_error=is_error,
            observe=observe,
            arguments=arguments if self.log_bodies else None,
            body=body if self.log_bodies else None,
        )
        call_log.info(line)
        return line

    def observe_report(
        self,
        *,
        server: str,
        tool: str,
        duration_s: float,
        report: DecisionEvent | None,
        is_error: bool = False,
        shape_s: float | None = None,
        arguments: Mapping[str, Any] | None = None,
        body: str | None = None,
        quiet: bool = False,
    ) -> str:
        """`observe_call` from the shaper's decision record (None when the result was not shaped, e.g. an error).

        In observe mode the decision counted is what enforce mode would have done, and the tokens saved
        what it would have sent (the record's `would_chars_out`)."""
        if report is not None:
            self.observe_baselines(server, report)
        if report is None:
            return self.observe_call(
                server=server,
                tool=tool,
                duration_s=duration_s,
                is_error=is_error,
                shape_s=shape_s,
                decision="passthrough",
                reason="not_shaped",
                arguments=arguments,
                body=body,
                quiet=quiet,
            )
        return self.observe_call(
            server=server,
            tool=tool,
            duration_s=duration_s,
            is_error=is_error,
            shape_s=shape_s,
            arguments=arguments,
            body=body,
            decision=report.effective_verdict,
            reason=report.reason,
            chars_in=report.chars_in,
            chars_out=report.chars_out,
            reducer_events=report.reducer_events,
            observe=report.observe,
            would_chars_out=report.would_chars_out,
            quiet=quiet,
        )

    def observe_baselines(self, server: str, report: DecisionEvent) -> None:
        """Both net savings of one shaped result (policy/economics.py, as `offload-mcp stats` counts them)."""
        client = report.client_model()
        account = report.account(client, self.chars_per_token)
        mode = "observe" if report.observe else "enforce"
        child = self._child
        child(self.tokens_saved_net, server, mode, "raw", client.name).inc(account.raw_tokens_saved)
        child(self.tokens_saved_net, server, mode, "client_alone", client.name).inc(account.client_tokens_saved)
        child(self.client_alone_results, client.name, account.client_alone.fate).inc()

    def observe_recall(self, ok: bool) -> None:
        self.recalls.labels("ok" if ok else "error").inc()

    def observe_expand(self, ok: bool, via: str = "tool") -> None:
        """via: `tool` (context_guru_expand) or `http` (GET /expand/{hash})."""
        self.expands.labels("ok" if ok else "error", via).inc()

    def observe_restart(self, server: str) -> None:
        self.restarts.labels(server).inc()

    def observe_passthrough_failure(self, cause: str) -> None:
        """A result went back unmodified because shaping failed (e.g. `ledger_write`, `shaper_error`)."""
        self.shape_failures.labels(cause).inc()

    def watch_budget(self, budget: InflightBudget) -> None:
        """Expose the in-flight byte budget of large answers (downstream/budget.py), read at each scrape."""
        self.registry.register(_BudgetCollector(budget))

    # ------------------------------------------------------------ exposition

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _BudgetCollector:
    def __init__(self, budget: InflightBudget) -> None:
        self.budget = budget

    def collect(self) -> Iterable[Metric]:
        budget = self.budget
        yield GaugeMetricFamily(
            f"{PREFIX}_inflight_result_bytes",
            "Memory large downstream answers in flight hold of offload.downstream.max_inflight_result_bytes "
            "(each byte read counted 4 times, until the result is shaped and stored).",
            value=budget.used,
        )
        yield GaugeMetricFamily(
            f"{PREFIX}_inflight_result_limit_bytes",
            "offload.downstream.max_inflight_result_bytes: the memory large answers in flight may hold together.",
            value=budget.limit,
        )
        yield CounterMetricFamily(
            f"{PREFIX}_inflight_refusals",
            "Large answers refused for want of room in the in-flight budget (each got a clear isError result).",
            value=budget.refused,
        )


_BARE_VALUE = re.compile(r"[\w\-./:@+]+")
"""Printed unquoted: \\w is exactly str.isalnum() or "_" (the characters allowed before were isalnum and -_./:@+)."""


def _logfmt_value(value: Any) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    if _BARE_VALUE.fullmatch(text):
        return text
    return orjson.dumps(text).decode()


def call_log_line(
    *,
    server: str,
    tool: str,
    decision: str,
    reason: str,
    chars_in: int,
    chars_out: int,
    duration_s: float,
    is_error: bool = False,
    observe: bool = False,
    arguments: Mapping[str, Any] | None = None,
    body: str | None = None,
) -> str:
    """One logfmt line for one call: `call server=git tool=git_log decision=offload ...`.

    Argument values and bodies are included only when passed (the caller passes
    them only when `log_bodies` is on); otherwise only argument names appear.
    """
    parts = [
        ("server", server),
        ("tool", tool),
        ("decision", decision),
        ("reason", reason or "none"),
        ("chars_in", chars_in),
        ("chars_out", chars_out),
        ("ms", round(duration_s * 1000.0, 1)),
    ]
    if observe:
        parts.append(("mode", "observe"))
    if is_error:
        parts.append(("error", "true"))
    if arguments is not None:
        parts.append(("args", orjson.dumps(dict(arguments), default=str, option=orjson.OPT_SORT_KEYS).decode()))
    if body is not None:
        parts.append(("body", body))
    return "call " + " ".join(f"{k}={_logfmt_value(v)}" for k, v in parts)


def metrics_route(metrics: ProxyMetrics) -> Any:
    """`GET /metrics` in the Prometheus text format, for upstream/http_extras.extra_routes."""
    from starlette.responses import Response
    from starlette.routing import Route

    async def endpoint(request: Any) -> Response:
        return Response(metrics.render(), media_type=CONTENT_TYPE_LATEST)

    return Route("/metrics", endpoint, methods=["GET"], name="metrics")
