"""Catalog benchmark: definition tokens per deferral mode, and search recall, through the real proxy.

    python bench/bench_catalog.py [--json OUT.json] [--queries bench/data/catalog/queries.jsonl]

The catalog is the real servers named in DESIGN.md together —
@modelcontextprotocol/server-filesystem, server-everything, PyPI
mcp-server-git and mcp-server-time — plus a generated GitHub-like server of
91 tools (bench/data/catalog/github_like_tools.json, served over stdio by
catalog_server.py): 130+ tools. For each mode the real `offload-mcp serve`
is started in front of them and its tools/list is read raw over stdio
JSON-RPC (so wire-only fields count), and tokens are chars/4 of each tool's
JSON as sent. Reported side by side in one run:

- tokens listed and tokens loaded up front ("eager": what a client that
  honours defer_loading/alwaysLoad loads), and the cut against `off`;
  target: search mode cuts >= 85% of the definition tokens;
- search recall: each task query of queries.jsonl (written from the tools'
  own descriptions, paraphrased as a user would ask) is sent to
  `search_tools` through the proxy; a hit is an expected tool in the top 3.
  Target >= 90%. Top-1 and mean reciprocal rank are printed too.

Two hot sets are measured: the default (only the proxy's own tools; a fresh
ledger has nothing to learn from) and a typical one with five hot tools.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data" / "catalog"
NPM_BIN = ROOT / "node_modules" / ".bin"
BIN = Path(sys.executable).parent
OFFLOAD_MCP = str(BIN / "offload-mcp")
TYPICAL_HOT = ["read_text_file", "list_directory", "git_status", "git_diff_unstaged", "get_file_contents"]


class Raw:
    """`offload-mcp serve` spoken to in raw JSON-RPC over stdio."""

    def __init__(self, config: Path) -> None:
        self.proc = subprocess.Popen(
            [OFFLOAD_MCP, "serve", "--config", str(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=str(ROOT),
        )
        self.ids = 0
        self.request(
            "initialize",
            {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
        )
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.ids += 1
        self._send(
            {"jsonrpc": "2.0", "id": self.ids, "method": method, **({"params": params} if params is not None else {})}
        )
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"proxy exited during {method}")
            response = json.loads(line)
            if response.get("id") == self.ids:
                if "error" in response:
                    raise RuntimeError(f"{method}: {response['error']}")
                return response["result"]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def servers(workdir: Path) -> dict[str, Any]:
    found: dict[str, Any] = {}
    if (NPM_BIN / "mcp-server-filesystem").exists():
        found["filesystem"] = {"command": str(NPM_BIN / "mcp-server-filesystem"), "args": [str(workdir)]}
        found["everything"] = {"command": str(NPM_BIN / "mcp-server-everything")}
    else:
        print("note: npm servers not installed (npm ci): filesystem and everything left out", file=sys.stderr)
    found["git"] = {"command": str(BIN / "mcp-server-git"), "args": ["--repository", str(ROOT)]}
    found["time"] = {"command": str(BIN / "mcp-server-time")}
    found["github"] = {"command": sys.executable, "args": [str(DATA / "catalog_server.py")]}
    return found


def write_config(workdir: Path, name: str, mode: str, hot: list[str]) -> Path:
    path = workdir / f"{name}.json"
    offload = {
        "catalog": {"deferral": mode, "hot_tools": hot, "learn_hot_tools": False},
        "ledger": {"path": str(workdir / f"{name}.db")},
    }
    path.write_text(json.dumps({"mcpServers": servers(workdir), "offload": offload}))
    return path


def tool_chars(tool: dict[str, Any]) -> int:
    return len(json.dumps(tool, separators=(",", ":"), ensure_ascii=False))


def measure_modes(workdir: Path, label: str, hot: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for mode in ("off", "hint", "search"):
        proxy = Raw(write_config(workdir, f"{label}-{mode}", mode, hot))
        try:
            tools = proxy.request("tools/list")["tools"]
        finally:
            proxy.close()
        listed = sum(tool_chars(t) for t in tools)
        eager = sum(tool_chars(t) for t in tools if not t.get("defer_loading"))
        out[mode] = {
            "listed_tools": len(tools),
            "listed_tokens": listed / 4,
            "eager_tools": sum(1 for t in tools if not t.get("defer_loading")),
            "eager_tokens": eager / 4,
        }
    base = out["off"]["listed_tokens"]
    for mode in out:
        out[mode]["eager_cut_vs_off"] = 1 - out[mode]["eager_tokens"] / base
    return out


def measure_recall(workdir: Path, queries: list[dict[str, Any]]) -> dict[str, Any]:
    proxy = Raw(write_config(workdir, "recall", "search", []))
    hits = top1 = 0
    rr = 0.0
    misses = []
    started = time.perf_counter()
    try:
        for q in queries:
            result = proxy.request(
                "tools/call", {"name": "search_tools", "arguments": {"query": q["query"], "limit": 3}}
            )
            names = (
                [m["name"] for m in json.loads(result["content"][0]["text"])["matches"]]
                if not result.get("isError")
                else []
            )
            rank = next((i for i, n in enumerate(names) if n in q["expect"]), None)
            if rank is None:
                misses.append({"query": q["query"], "expect": q["expect"], "got": names})
            else:
                hits += 1
                top1 += rank == 0
                rr += 1 / (rank + 1)
    finally:
        proxy.close()
    elapsed = time.perf_counter() - started
    n = len(queries)
    return {
        "queries": n,
        "top3_recall": hits / n,
        "top1_recall": top1 / n,
        "mrr_at_3": rr / n,
        "misses": misses,
        "ms_per_search": 1000 * elapsed / n,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", default=str(DATA / "queries.jsonl"))
    parser.add_argument("--json", metavar="OUT", help="Also write the numbers as JSON here.")
    args = parser.parse_args(argv)
    queries = [json.loads(line) for line in Path(args.queries).read_text().splitlines() if line.strip()]
    workdir = Path(tempfile.mkdtemp(prefix="bench-catalog-"))
    os.environ.setdefault("XDG_STATE_HOME", str(workdir / "state"))
    try:
        default = measure_modes(workdir, "default", [])
        typical = measure_modes(workdir, "typical", TYPICAL_HOT)
        recall = measure_recall(workdir, queries)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    print(
        f"Catalog: {default['off']['listed_tools'] - 2} downstream tools + 2 own tools; tokens = chars/4 of the tools/list JSON as sent\n"
    )
    print(
        f"{'hot set':<28} {'mode':<7} {'listed':>7} {'tokens':>8} {'eager':>6} {'eager tokens':>13} {'cut vs off':>11}"
    )
    for label, table in (("own tools only (default)", default), (f"+ {len(TYPICAL_HOT)} hot tools", typical)):
        for mode, row in table.items():
            print(
                f"{label:<28} {mode:<7} {row['listed_tools']:>7} {row['listed_tokens']:>8.0f} {row['eager_tools']:>6} {row['eager_tokens']:>13.0f} {row['eager_cut_vs_off']:>10.1%}"
            )
    target_cut = default["search"]["eager_cut_vs_off"] >= 0.85 and typical["search"]["eager_cut_vs_off"] >= 0.85
    print(
        f"\nsearch mode definition-token cut vs off: {default['search']['eager_cut_vs_off']:.1%} (default), "
        f"{typical['search']['eager_cut_vs_off']:.1%} (5 hot) — target >= 85%: {'met' if target_cut else 'NOT met'}"
    )
    print(
        f"search recall over {recall['queries']} task queries: top-3 {recall['top3_recall']:.1%}, top-1 {recall['top1_recall']:.1%}, "
        f"MRR@3 {recall['mrr_at_3']:.3f}, {recall['ms_per_search']:.1f} ms per search through the proxy — target top-3 >= 90%: "
        f"{'met' if recall['top3_recall'] >= 0.9 else 'NOT met'}"
    )
    for miss in recall["misses"]:
        print(
            f"  miss: {miss['query']!r}: expected {' or '.join(miss['expect'])}, got {', '.join(miss['got']) or 'nothing'}"
        )
    if args.json:
        Path(args.json).write_text(
            json.dumps({"default_hot": default, "typical_hot": typical, "recall": recall}, indent=2) + "\n"
        )
    return 0 if target_cut and recall["top3_recall"] >= 0.9 else 1


if __name__ == "__main__":
    sys.exit(main())
