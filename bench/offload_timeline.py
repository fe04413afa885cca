"""Where a large offload's time goes inside the proxy: one call's path through it, segment by segment.

    python bench/offload_timeline.py                 # the fixture's make_text, 1 MB, 100 calls
    python bench/offload_timeline.py --size 4 --calls 30

bench_offload.py says how a large result through the proxy compares with the direct call; this says
where the proxy's part of it goes, so a change aimed at that ratio starts from a measured segment.
The proxy runs as `offload-mcp serve` with the default configuration over stdio, in a child that
takes a timestamp at each point below (`time.perf_counter`, one clock for all its threads) and
writes them to a file when it exits (its path is an argument: the SDK starts a server with a bare
environment). The client calls `make_text` through it and directly, taking turns call by call, so
the direct call's time is printed beside the segments as their budget.

The points: the client's request read, the request written to the server, the first bytes of the
answer read, its parse, the SDK's hand-over of the result to the waiting call, the shaper's start in
its worker thread and its phases (the reducer floor, the body record, the stub text, the ledger
commit), its end, and the stub written to the client. They are taken by wrapping `os.read`,
`os.readv` and `os.write` and a few functions of the proxy in the child (see `_instrument`); a
renamed function stops the run with its name rather than timing nothing.

Measured on a 2-core machine (1 MB, 200 turns, direct 18.8-18.9 ms, through the proxy 18.0): request
forwarding 1.0 ms; answer bytes to parse 0.17; parse 0.51; the SDK's hand-over 0.35; the hop to the
worker thread 0.32; shaping 3.8 (floor 0.87, body record 0.35, stub text 1.06, commit 1.18); back,
serialise and write 0.48. The same shaping in-process, back to back, takes 2.6 ms: in the proxy the
worker starts on an idle core. Moving the worker onto the event loop's core for the shaping
(`os.sched_setaffinity`) left bench_offload's 1 MB ratio where it was (the default took 0.98-1.00 of
its time over three runs), so that gap is not a lever.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_offload import FIXTURE, Timing, open_session, timed  # noqa: E402

WARM_CALLS = 2
"""Untimed calls per path before the timed ones (bench_offload.timed's warm-up)."""

_PHASES = {
    "ResultShaper._offload_before_reducing": "reducer floor (offload decided first?)",
    "StubPricer.body_record": "body record (canonical JSON, id)",
    "StubPricer.stub_text": "stub text (describe, index)",
    "ResultShaper._record": "ledger commit (compress, write)",
}
"""Steps timed inside shaping (`class.method` of offload_mcp.shaping), in the order they run for an
offloaded result, with their labels."""


# ---- the child: the proxy, instrumented ------------------------------------------------------------


def _instrument(marks: list[tuple[str, float]]) -> None:
    """Wrap the points named in the module docstring so each appends (name, perf_counter()) to `marks`."""
    clock = time.perf_counter
    read, readv, write = os.read, os.readv, os.write

    def timed_read(fd: int, n: int) -> bytes:
        data = read(fd, n)
        if b'"method":"tools/call"' in data:
            marks.append(("request_read", clock()))
        return data

    def timed_readv(fd: int, buffers: Any) -> int:
        n = readv(fd, buffers)
        if n > 0:
            marks.append(("answer_bytes", clock()))
        return n

    def timed_write(fd: int, data: Any) -> int:
        n = write(fd, data)
        head = bytes(data[:200])
        if b'"method":"tools/call"' in head:
            marks.append(("request_written", clock()))
        elif b'"result"' in head:
            marks.append(("result_written", clock()))
        return n

    os.read, os.readv, os.write = timed_read, timed_readv, timed_write  # type: ignore[assignment]

    from offload_mcp import shaping
    from offload_mcp.downstream import stdio as downstream_stdio
    from offload_mcp.downstream import wrapped_server as downstream_server

    def around(owner: Any, name: str, start: str, end: str) -> None:
        if not hasattr(owner, name):
            raise SystemExit(f"offload_timeline: {owner.__name__}.{name} is gone; update _instrument")
        original = getattr(owner, name)

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            marks.append((start, clock()))
            try:
                return original(*args, **kwargs)
            finally:
                marks.append((end, clock()))

        is_static = isinstance(owner.__dict__.get(name), staticmethod)
        setattr(owner, name, staticmethod(wrapped) if is_static else wrapped)

    around(downstream_stdio, "parse_message", "parse_start", "parse_end")
    around(shaping.ResultShaper, "shape_with_report", "shape_start", "shape_end")
    for phase in _PHASES:
        owner, method = phase.split(".")
        around(getattr(shaping, owner), method, f"{phase}_start", f"{phase}_end")

    call_tool = downstream_server.DownstreamServer.call_tool

    async def timed_call_tool(*args: Any, **kwargs: Any) -> Any:
        result = await call_tool(*args, **kwargs)
        marks.append(("result_handed_over", clock()))
        return result

    downstream_server.DownstreamServer.call_tool = timed_call_tool  # type: ignore[method-assign]


def child(out: str, argv: list[str]) -> int:
    marks: list[tuple[str, float]] = []
    _instrument(marks)
    atexit.register(lambda: Path(out).write_text(json.dumps(marks)))
    from offload_mcp.__main__ import main as offload_main

    sys.argv = ["offload-mcp", *argv]
    return offload_main()


# ---- the parent: drive it, then read the marks -----------------------------------------------------

SEGMENTS = (
    ("request forwarding", "request_read", "request_written"),
    ("the server works (outside the proxy)", "request_written", "answer_bytes"),
    ("answer bytes read -> parse starts", "answer_bytes", "parse_start"),
    ("parse", "parse_start", "parse_end"),
    ("SDK hands the result over", "parse_end", "result_handed_over"),
    ("to the shaper's worker thread", "result_handed_over", "shape_start"),
    *((f"  {label}", f"{phase}_start", f"{phase}_end") for phase, label in _PHASES.items()),
    ("shaping, all of it", "shape_start", "shape_end"),
    ("back, serialise, stub written", "shape_end", "result_written"),
)
_PROXY_OWN = ("request_read", "request_written"), ("answer_bytes", "result_written")


def calls_of(marks: list[tuple[str, float]]) -> list[dict[str, float]]:
    """One dict of first timestamps per call: a call runs from its request read to its result written."""
    calls: list[dict[str, float]] = []
    current: dict[str, float] | None = None
    for name, at in marks:
        if name == "request_read":
            current = {name: at}
        elif current is not None:
            if name == "answer_bytes" and "request_written" not in current:
                continue  # bytes of an earlier answer
            current.setdefault(name, at)
            if name == "result_written" and "shape_end" in current:
                calls.append(current)
                current = None
    return calls


def report(calls: list[dict[str, float]], through_proxy: Timing, direct: Timing, size: int) -> str:
    lines = [
        f"make_text {size:,} chars, {len(calls)} calls through the proxy (default config), medians in ms",
        f"{'segment':42} {'median':>8} {'p25':>8} {'p75':>8}",
    ]
    for label, start, end in SEGMENTS:
        spans = [c[end] - c[start] for c in calls if start in c and end in c]
        if not spans:
            lines.append(f"{label:42} {'-':>8}")
            continue
        q1, _, q3 = statistics.quantiles(spans, n=4) if len(spans) > 1 else (spans[0],) * 3
        lines.append(f"{label:42} {statistics.median(spans) * 1e3:8.3f} {q1 * 1e3:8.3f} {q3 * 1e3:8.3f}")
    own = [sum(c[end] - c[start] for start, end in _PROXY_OWN) for c in calls]
    lines += [
        f"{'the proxy on the path (forwarding + answer)':42} {statistics.median(own) * 1e3:8.3f}",
        "",
        f"client's view: through the proxy {through_proxy.median * 1e3:.2f} ms, "
        f"direct {direct.median * 1e3:.2f} ms, ratio {through_proxy.ratio(direct).strip()}",
    ]
    return "\n".join(lines)


async def drive(size: int, calls: int) -> str:
    tmp = Path(tempfile.mkdtemp(prefix="offload-timeline-"))
    config = tmp / "config.json"
    config.write_text(json.dumps({"mcpServers": {"s": {"command": sys.executable, "args": [str(FIXTURE)]}}}))
    out = tmp / "marks.json"
    async with AsyncExitStack() as stack:
        proxy = await open_session(
            stack,
            sys.executable,
            [
                str(Path(__file__).resolve()),
                "--child",
                str(out),
                "serve",
                "-c",
                str(config),
                "--ledger",
                str(tmp / "l.db"),
            ],
        )
        server = await open_session(stack, sys.executable, [str(FIXTURE)])
        # bench_offload's turns: the two paths take turns call by call after WARM_CALLS each.
        timings = await timed({"direct": server, "proxy": proxy}, "make_text", {"size": size}, calls, 0.0)
    traced = calls_of(json.loads(out.read_text()))[WARM_CALLS:]
    if len(traced) != calls:
        raise SystemExit(f"offload_timeline: {len(traced)} of {calls} calls traced; the marks changed shape")
    return report(traced, timings["proxy"], timings["direct"], size)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        sys.exit(child(sys.argv[2], sys.argv[3:]))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=float, default=1.0, help="result size in MB (10^6 chars), default 1")
    parser.add_argument("--calls", type=int, default=100, help="timed calls each way (default 100)")
    args = parser.parse_args()
    print(anyio.run(drive, int(args.size * 1_000_000), args.calls))


if __name__ == "__main__":
    main()
