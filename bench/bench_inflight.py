"""Peak memory of a proxy with many large remote answers in flight (issue 40, D4).

The real proxy over streamable HTTP, in front of the fixture server over streamable HTTP (SSE events, or
plain JSON bodies with `--json-response`): `--count` clients, each on its own session, call `make_text` for
`--size-mb` MB at once. Prints the proxy's peak RSS (VmHWM) beside its in-flight budget
(`offload.downstream.max_inflight_result_bytes`), its RSS after, and how many answers were stored (a stub
with a `trm_` id) and how many refused (a clear isError naming the setting). Issue 40 measured, before the
budget: peak 376 MB for one 60 MB answer, 891 for 4, 1,532 for 8, 2,107 for 16 (784 MB after).
Goal: peak under budget + 300 MB, every answer stored whole or refused clearly.

The default (4 x 60 MB) spares a shared 2-core host; `--full` is the issue's 16 x 60 MB. `--budget-mb 0`
lifts the budget (as before it existed), for the figure beside.

    python bench/bench_inflight.py [--count 4] [--size-mb 60] [--budget-mb N] [--full] [--json-response] [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "fixtures")]

import anyio  # noqa: E402

from offload_mcp.downstream.budget import SETTING  # noqa: E402
from offload_mcp.downstream.settings import DownstreamSettings  # noqa: E402
from support.proxy import http_session, running_proxy, text_of  # noqa: E402
from support.servers import fixture_over_http, write_config  # noqa: E402

MB = 1_000_000
UNBOUNDED = 1 << 50
TRM = re.compile(r"trm_[0-9a-f]+")


async def run(count: int, size: int, budget: int, json_response: bool) -> dict[str, Any]:
    opts = ("--json-response",) if json_response else ()
    with tempfile.TemporaryDirectory() as tmp, fixture_over_http("streamable-http", *opts) as remote:
        offload = {
            "downstream": {"max_inflight_result_bytes": budget, "max_inflight_wait_s": 300, "call_timeout_s": 600}
        }
        cfg = write_config(Path(tmp), {"remote": {"url": remote, "type": "http"}}, offload)
        with running_proxy(["-c", str(cfg), "--ledger", str(Path(tmp) / "l.db")]) as proxy:
            outcomes: list[str] = []
            started = time.perf_counter()

            async def call(index: int) -> None:
                async with http_session(proxy.url) as client:
                    # Each its own size: the ledger keeps one body per content, and equal answers would share it.
                    result = await client.call_tool("make_text", {"size": size + index})
                text = text_of(result)
                if not result.is_error and TRM.search(text):
                    outcomes.append("stored")
                elif result.is_error and SETTING in text:
                    outcomes.append("refused")
                else:
                    outcomes.append("other: " + text[:200])

            async with anyio.create_task_group() as tg:
                for index in range(count):
                    tg.start_soon(call, index)
            took = time.perf_counter() - started
            peak_kb = proxy.status("VmHWM")
            after_kb = proxy.status("VmRSS")
    return {
        "count": count,
        "size_mb": size / MB,
        "budget_mb": None if budget == UNBOUNDED else round(budget / MB),
        "peak_rss_mb": round(peak_kb * 1024 / MB),
        "rss_after_mb": round(after_kb * 1024 / MB),
        "stored": outcomes.count("stored"),
        "refused": outcomes.count("refused"),
        "other": [o for o in outcomes if o.startswith("other")],
        "seconds": round(took, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=4)
    parser.add_argument("--size-mb", type=float, default=60)
    default_mb = DownstreamSettings().max_inflight_result_bytes / MB
    parser.add_argument("--budget-mb", type=float, default=default_mb, help="0: no budget (as before it existed)")
    parser.add_argument("--full", action="store_true", help="the issue's 16 concurrent 60 MB answers")
    parser.add_argument("--json-response", action="store_true", help="plain JSON bodies instead of SSE events")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    count = 16 if args.full else args.count
    budget = UNBOUNDED if args.budget_mb == 0 else int(args.budget_mb * MB)
    figures = anyio.run(run, count, int(args.size_mb * MB), budget, args.json_response)
    if args.json:
        print(json.dumps(figures))
        return
    budget_text = "none" if figures["budget_mb"] is None else f"{figures['budget_mb']} MB"
    print(
        f"{figures['count']} x {figures['size_mb']:g} MB remote answers at once, budget {budget_text}: "
        f"peak RSS {figures['peak_rss_mb']} MB (after {figures['rss_after_mb']} MB), "
        f"stored {figures['stored']}, refused {figures['refused']}, other {len(figures['other'])}, "
        f"{figures['seconds']} s"
    )
    for other in figures["other"]:
        print("  other:", other)


if __name__ == "__main__":
    main()
