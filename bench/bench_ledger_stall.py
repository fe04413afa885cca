"""How long a proxy's unrelated requests wait while its PostgreSQL ledger is stuck (issue 40, D1).

The attacks of issue 40's adversarial pass, against a real PostgreSQL (tests/support/pg.py) and a real
proxy over streamable HTTP with the default configuration (`busy_timeout_s` 2):

1. every process of the server stopped (SIGSTOP) for `--freeze-s` seconds: /healthz (what it
   says), a plain 404, /metrics, an `echo` on a new session, and one offloading call;
2. `LOCK TABLE events` held by another session for `--lock-s` seconds: /metrics and a new
   session's `echo` (its first tools/list reads call counts from `events`);
3. `LOCK TABLE bodies` for `--lock-s` seconds: a recall of a stored body.

Prints the slowest and the median answer of each probe (seconds). Not a timed test: the bounds
live in tests/test_ledger_stalls.py; this gives the figures beside the issue's.

    python bench/bench_ledger_stall.py [--freeze-s 25] [--lock-s 14] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "fixtures")]

import anyio  # noqa: E402
import httpx2  # noqa: E402

from support.pg import frozen, locked, start_server, timed  # noqa: E402
from support.proxy import TRM, running_proxy, text_of  # noqa: E402
from support.proxy import http_session as session  # noqa: E402
from support.servers import HOSTILE, write_config  # noqa: E402


class Probe:
    def __init__(self) -> None:
        self.times: dict[str, list[float]] = {}
        self.notes: dict[str, set[str]] = {}

    async def time(self, kind: str, probe: Callable[[], Awaitable[Any]]) -> Any:
        took, answer = await timed(probe)
        self.times.setdefault(kind, []).append(took)
        return answer

    def note(self, kind: str, what: str) -> None:
        self.notes.setdefault(kind, set()).add(what)

    def summary(self) -> dict[str, Any]:
        return {
            kind: {
                "n": len(times),
                "max_s": round(max(times), 3),
                "median_s": round(statistics.median(times), 3),
                **({"said": sorted(self.notes[kind])} if kind in self.notes else {}),
            }
            for kind, times in self.times.items()
        }


async def probe_loop(base: str, url: str, seconds: float, kinds: set[str], probe: Probe) -> None:
    end = time.monotonic() + seconds
    async with httpx2.AsyncClient(timeout=120) as http:
        while time.monotonic() < end:
            if "healthz" in kinds:
                health = await probe.time("healthz", lambda: http.get(base + "/healthz"))
                probe.note("healthz", json.dumps(health.json(), sort_keys=True))
            if "404" in kinds:
                await probe.time("404", lambda: http.get(base + "/nowhere"))
            if "metrics" in kinds:
                await probe.time("metrics", lambda: http.get(base + "/metrics"))
            if "echo" in kinds:

                async def echo() -> None:
                    async with session(url) as fresh:
                        assert text_of(await fresh.call_tool("echo", {"text": "hi"})) == "hi"

                await probe.time("new session echo", echo)
            await anyio.sleep(0.5)


async def run(postgres: Any, url: str, base: str, freeze_s: float, lock_s: float) -> dict[str, Any]:
    pg_url = postgres.url()
    out: dict[str, Any] = {}
    async with session(url) as worker:
        stored = text_of(await worker.call_tool("chunks", {"size": 200_000, "seed": 1}))
        trm_id = TRM.search(stored).group(0)  # type: ignore[union-attr]

        probe = Probe()
        with frozen(postgres):
            async with anyio.create_task_group() as tg:
                tg.start_soon(probe_loop, base, url, freeze_s, {"healthz", "404", "metrics", "echo"}, probe)
                result = await probe.time(
                    "offloading call", lambda: worker.call_tool("chunks", {"size": 200_000, "seed": 2})
                )
                body = result.model_dump(by_alias=True, mode="json", exclude_none=True)
                probe.note("offloading call", f"{sum(len(b.get('text', '')) for b in body['content'])} chars")
        out["SIGSTOP"] = probe.summary()

        probe = Probe()
        with locked(pg_url, "events"):
            await probe_loop(base, url, lock_s, {"metrics", "echo"}, probe)
        out["LOCK TABLE events"] = probe.summary()

        probe = Probe()
        with locked(pg_url, "bodies"):
            end = time.monotonic() + lock_s
            while time.monotonic() < end:
                answer = await probe.time(
                    "recall", lambda: worker.call_tool("recall_tool_result", {"mem_id": trm_id, "max_chars": 1000})
                )
                probe.note("recall", "error" if answer.is_error else "ok")
                await anyio.sleep(0.5)
        out["LOCK TABLE bodies"] = probe.summary()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--freeze-s", type=float, default=25.0)
    parser.add_argument("--lock-s", type=float, default=14.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    postgres = start_server()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            config = write_config(Path(tmp), {"h": {"command": HOSTILE[0], "args": HOSTILE[1:]}})
            with running_proxy(["-c", str(config), "--ledger", postgres.url()]) as proxy:
                base = proxy.url.rsplit("/mcp", 1)[0]
                out = anyio.run(run, postgres, proxy.url, base, args.freeze_s, args.lock_s)
    finally:
        postgres.destroy()
    if args.json:
        print(json.dumps(out, indent=2))
        return
    for attack, probes in out.items():
        print(attack)
        for kind, figures in probes.items():
            said = f"  said {', '.join(figures['said'])}" if "said" in figures else ""
            print(
                f"  {kind:18} max {figures['max_s']:7.3f} s  median {figures['median_s']:7.3f} s  n={figures['n']}{said}"
            )


if __name__ == "__main__":
    main()
