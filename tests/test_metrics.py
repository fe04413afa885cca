"""/metrics: private registry per proxy, scraped over real HTTP and parsed; the per-call log line."""

from __future__ import annotations

import logging
import socket
import threading
import time
import urllib.request

import pytest
import uvicorn
from prometheus_client.parser import text_string_to_metric_families
from starlette.applications import Starlette

from offload_mcp.reducers.pipeline import ReducerEvent
from offload_mcp.upstream.metrics import ProxyMetrics, call_log_line, metrics_route
from support.decision_records import decision_record


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(parsed, name, **labels) -> float:
    return parsed.get((name, tuple(sorted(labels.items()))), 0.0)


def scrape(url: str) -> tuple[int, str, str]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.headers["content-type"], response.read().decode()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def served_metrics():
    metrics = ProxyMetrics()
    app = Starlette(routes=[metrics_route(metrics)])
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started
    yield metrics, f"http://127.0.0.1:{port}/metrics"
    server.should_exit = True
    thread.join(timeout=10)


def record_session(metrics: ProxyMetrics) -> None:
    events = [
        ReducerEvent("dedup", False, "first_seen", 600_000, 600_000),
        ReducerEvent("linecap", True, "acted", 600_000, 1_000),
    ]
    metrics.observe_call(
        server="git",
        tool="git_log",
        duration_s=0.2,
        decision="offload",
        reason="gate_net_saving",
        chars_in=600_000,
        chars_out=1_000,
        reducer_events=events,
        shape_s=0.01,
    )
    metrics.observe_call(
        server="git", tool="git_status", duration_s=0.01, decision="keep", reason="small", chars_in=300, chars_out=300
    )
    metrics.observe_call(
        server="fs",
        tool="read_file",
        duration_s=3.0,
        decision="keep",
        reason="gate_declined",
        chars_in=70_000,
        chars_out=70_000,
        observe=True,
        is_error=True,
    )
    metrics.observe_recall(True)
    metrics.observe_recall(False)
    metrics.observe_expand(True, via="http")
    metrics.observe_restart("fs")


def test_metrics_scraped_over_http_parse_and_count(served_metrics):
    metrics, url = served_metrics
    record_session(metrics)
    status, content_type, text = scrape(url)
    assert status == 200
    assert content_type.startswith("text/plain")
    parsed = samples(text)

    assert value(parsed, "offload_mcp_calls_total", server="git", tool="git_log", outcome="ok") == 1
    assert value(parsed, "offload_mcp_calls_total", server="fs", tool="read_file", outcome="error") == 1
    assert (
        value(
            parsed,
            "offload_mcp_results_total",
            server="git",
            decision="offload",
            reason="gate_net_saving",
            mode="enforce",
        )
        == 1
    )
    assert (
        value(parsed, "offload_mcp_results_total", server="fs", decision="keep", reason="gate_declined", mode="observe")
        == 1
    )
    assert (
        value(parsed, "offload_mcp_reducer_events_total", reducer="dedup", outcome="declined", reason="first_seen") == 1
    )
    assert value(parsed, "offload_mcp_reducer_events_total", reducer="linecap", outcome="acted", reason="acted") == 1
    assert value(parsed, "offload_mcp_result_chars_in_total", server="git") == 600_300
    assert value(parsed, "offload_mcp_result_chars_out_total", server="git", mode="enforce") == 1_300
    assert value(parsed, "offload_mcp_tokens_saved_total", server="git", mode="enforce") == pytest.approx(599_000 / 4)
    assert value(parsed, "offload_mcp_recalls_total", outcome="ok") == 1
    assert value(parsed, "offload_mcp_recalls_total", outcome="error") == 1
    assert value(parsed, "offload_mcp_expands_total", outcome="ok", via="http") == 1
    assert value(parsed, "offload_mcp_downstream_restarts_total", server="fs") == 1
    assert value(parsed, "offload_mcp_call_duration_seconds_count", server="git") == 2
    assert value(parsed, "offload_mcp_call_duration_seconds_bucket", server="fs", le="2.5") == 0
    assert value(parsed, "offload_mcp_call_duration_seconds_bucket", server="fs", le="5.0") == 1
    assert value(parsed, "offload_mcp_shape_duration_seconds_count", server="git") == 1

    # the scrape is live: another call shows on the next scrape
    metrics.observe_call(
        server="git",
        tool="git_log",
        duration_s=0.1,
        decision="offload",
        reason="gate_net_saving",
        chars_in=10,
        chars_out=5,
    )
    again = samples(scrape(url)[2])
    assert value(again, "offload_mcp_calls_total", server="git", tool="git_log", outcome="ok") == 2


def test_each_proxy_has_its_own_registry():
    a, b = ProxyMetrics(), ProxyMetrics()  # would raise "Duplicated timeseries" on a shared registry
    a.observe_recall(True)
    assert value(samples(a.render().decode()), "offload_mcp_recalls_total", outcome="ok") == 1
    assert value(samples(b.render().decode()), "offload_mcp_recalls_total", outcome="ok") == 0


def test_call_log_line_has_no_bodies_or_argument_values_by_default(caplog):
    metrics = ProxyMetrics()
    with caplog.at_level(logging.INFO, logger="offload_mcp.calls"):
        line = metrics.observe_call(
            server="git",
            tool="git_log",
            duration_s=0.1234,
            decision="offload",
            reason="gate_net_saving",
            chars_in=600_000,
            chars_out=900,
            arguments={"repo_path": "/secret/path"},
            body="SECRET BODY",
        )
    assert (
        line
        == "call server=git tool=git_log decision=offload reason=gate_net_saving chars_in=600000 chars_out=900 ms=123.4"
    )
    assert [r.getMessage() for r in caplog.records if r.name == "offload_mcp.calls"] == [line]
    assert all(r.levelno == logging.INFO for r in caplog.records if r.name == "offload_mcp.calls")


def test_call_log_line_with_log_bodies_quotes_values():
    metrics = ProxyMetrics(log_bodies=True)
    line = metrics.observe_call(
        server="fs",
        tool="read file",
        duration_s=0.001,
        decision="keep",
        reason="small",
        chars_in=5,
        chars_out=5,
        arguments={"path": "/a b"},
        body="hi there",
        observe=True,
        is_error=True,
    )
    assert 'tool="read file"' in line and "mode=observe" in line and "error=true" in line
    assert 'args="{\\"path\\":\\"/a b\\"}"' in line and 'body="hi there"' in line


def test_log_line_values_cannot_forge_fields():
    line = call_log_line(
        server="a b",
        tool="x decision=offload",
        decision="keep",
        reason="r\nnext",
        chars_in=1,
        chars_out=1,
        duration_s=0,
    )
    assert "\n" not in line
    assert line.count("decision=") == 2 and 'tool="x decision=offload"' in line


def test_observe_report_reads_a_shape_report():
    """The fields come from the shaper's decision record: what the client got, or in observe mode what would have happened."""
    linecap = [{"reducer": "linecap", "acted": True, "reason": "acted", "chars_before": 10_000, "chars_after": 2_000}]
    enforce = decision_record("s", "s", "t", "reduce", "small", 10_000, 2_000, reducers=linecap, reduced_chars=2_000)
    observe = decision_record(
        "s", "s", "t", "reduce", "small", 10_000, reducers=linecap, mode="observe", reduced_chars=2_000
    )
    metrics = ProxyMetrics()
    line = metrics.observe_report(server="s", tool="t", duration_s=0.01, report=enforce)
    assert "decision=reduce reason=small chars_in=10000 chars_out=2000" in line
    line = metrics.observe_report(server="s", tool="t", duration_s=0.01, report=observe)
    assert "decision=reduce" in line and "mode=observe" in line
    metrics.observe_report(server="s", tool="t", duration_s=0.01, report=None, is_error=True)
    parsed = samples(metrics.render().decode())
    assert (
        value(parsed, "offload_mcp_results_total", server="s", decision="reduce", reason="small", mode="enforce") == 1
    )
    assert (
        value(parsed, "offload_mcp_results_total", server="s", decision="reduce", reason="small", mode="observe") == 1
    )
    assert (
        value(
            parsed, "offload_mcp_results_total", server="s", decision="passthrough", reason="not_shaped", mode="enforce"
        )
        == 1
    )
    assert value(parsed, "offload_mcp_tokens_saved_total", server="s", mode="enforce") == 2_000
    assert value(parsed, "offload_mcp_tokens_saved_total", server="s", mode="observe") == 2_000  # (10,000 - 2,000) / 4
    assert value(parsed, "offload_mcp_result_chars_out_total", server="s", mode="observe") == 10_000
    assert value(parsed, "offload_mcp_reducer_events_total", reducer="linecap", outcome="acted", reason="acted") == 2
    assert value(parsed, "offload_mcp_calls_total", server="s", tool="t", outcome="error") == 1


def test_the_call_path_formats_its_log_line_only_when_it_is_written(caplog):
    # The server passes quiet=True: with the call logger off (the default) the counters still count and
    # no line is built; at INFO the same line as ever is written and returned.
    metrics = ProxyMetrics()
    call = dict(server="fx", tool="echo", duration_s=0.002, decision="keep", reason="small", chars_in=40, chars_out=40)
    with caplog.at_level(logging.WARNING, logger="offload_mcp.calls"):
        assert metrics.observe_call(**call, quiet=True) == ""
    with caplog.at_level(logging.INFO, logger="offload_mcp.calls"):
        line = metrics.observe_call(**call, quiet=True)
    assert (
        line
        == metrics.observe_call(**call)
        == "call server=fx tool=echo decision=keep reason=small chars_in=40 chars_out=40 ms=2.0"
    )
    assert [r.getMessage() for r in caplog.records if r.name == "offload_mcp.calls"] == [line]
    parsed = samples(metrics.render().decode())
    assert value(parsed, "offload_mcp_calls_total", server="fx", tool="echo", outcome="ok") == 3
