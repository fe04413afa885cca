"""Benchmarks side by side with the peers; writes BENCHMARKS.md.

    python bench/run_all.py            # full run (< 20 min on 2 cores), writes BENCHMARKS.md + bench/plots/*.png
    python bench/run_all.py --quick    # < 2 min, writes bench/out/BENCHMARKS.quick.md (CI runs this)
    python bench/run_all.py --only tokens,latency   # some sections

Every peer is measured on the same inputs in the same run, so the tables are
ratios taken on one machine at one time. Peers that need other packages run
from their own virtualenvs under bench/out/ (created on demand by the full
run; `--quick` uses them only if they are already there and says so when
they are not). Tokens are estimated as chars / 4 everywhere (the project's
estimator), so ratios between peers are exact even where absolute token
counts would differ under a real tokenizer.

Sections (see each function): tokens (corpus), large (large real outputs),
dollars, latency, scale, catalog.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE / "peers"))
sys.path.insert(0, str(HERE))

import anyio  # noqa: E402
import venvs  # noqa: E402
from client_alone import claude_code_alone  # noqa: E402
from mcp_drive import log, open_session, result_text, summarize_ms  # noqa: E402

CORPUS = Path(os.environ.get("OFFLOAD_BENCH_CORPUS", ROOT.parent / "shared" / "corpus" / "dev.jsonl.gz"))
OUT = HERE / "out"
PY = sys.executable
PAYLOAD_SERVER = str(HERE / "peers" / "payload_server.py")
CPT = 4.0  # chars per token, the project's estimator
FASTMCP_LIMIT = 100_000  # bytes: set to Claude Code's own limit (25,000 tokens x 4), as a user would
MODELS = ("claude-opus-4-6", "claude-sonnet-4-6")


def tokens(chars: float) -> float:
    return chars / CPT


# ----------------------------------------------------------------------------- context


@dataclass
class Ctx:
    quick: bool
    install: bool
    work: Path
    peers: dict[str, venvs.Peer] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)

    def peer(self, name: str) -> venvs.Peer:
        if name not in self.peers:
            self.peers[name] = venvs.ensure(name, install=self.install)
            if not self.peers[name].available:
                self.notes.append(f"peer `{name}` skipped: {self.peers[name].missing_reason}")
                log(f"[bench] peer {name} skipped: {self.peers[name].missing_reason}")
        return self.peers[name]


@dataclass
class Section:
    key: str
    title: str
    body: str
    ok: bool = True


def md_table(headers: list[str], rows: list[list[Any]]) -> str:
    def cell(v: Any) -> str:
        if isinstance(v, float):
            if v != v:
                return "n/a"
            return f"{v:,.2f}" if abs(v) < 1000 else f"{v:,.0f}"
        if isinstance(v, int):
            return f"{v:,}"
        return str(v)

    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def pct(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole else float("nan")


# ----------------------------------------------------------------------------- corpus


def load_corpus(limit: int | None = None) -> list[dict[str, Any]]:
    records = []
    with gzip.open(CORPUS, "rt", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                records.append(json.loads(line))
                if limit and len(records) >= limit:
                    break
    return records


def write_records_file(records: list[dict[str, Any]], path: Path) -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps({"output": r["output"]}) + "\n")
    return path


@dataclass
class PeerRow:
    """One peer over a set of outputs: what reached the model, what can come back."""

    peer: str
    n: int = 0
    chars_in: int = 0
    chars_out: int = 0
    chars_recoverable: int = 0
    records_lossy: int = 0
    records_rejected: int = 0
    seconds: float = 0.0
    note: str = ""
    unverified: bool = False
    """Recoverability could not be checked (shown as such, never as a win or a loss)."""
    per_record: list[int] = field(default_factory=list)
    per_recoverable: list[int] = field(default_factory=list)

    def add(self, original: str, shown_chars: int, recoverable_chars: int, rejected: bool = False) -> None:
        self.n += 1
        self.chars_in += len(original)
        self.chars_out += shown_chars
        self.chars_recoverable += recoverable_chars
        self.per_record.append(shown_chars)
        self.per_recoverable.append(recoverable_chars)
        if recoverable_chars < len(original):
            self.records_lossy += 1
        if rejected:
            self.records_rejected += 1

    def row(self) -> list[Any]:
        reduction = pct(self.chars_in - self.chars_out, self.chars_in)
        recoverable = pct(self.chars_recoverable, self.chars_in)
        return [
            self.peer,
            self.n,
            round(tokens(self.chars_in)),
            round(tokens(self.chars_out)),
            f"{reduction:.1f}%",
            "not verifiable" if self.unverified else f"{recoverable:.2f}%",
            "?" if self.unverified else self.records_lossy,
            self.note,
        ]


ROW_HEADERS = [
    "peer",
    "outputs",
    "tokens in",
    "tokens to model",
    "reduction",
    "bytes recoverable",
    "outputs losing bytes",
    "notes",
]


def common_prefix_len(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    step = 4096
    while i < n and a[i : i + step] == b[i : i + step]:
        i += step
    while i < n and a[i] == b[i]:
        i += 1
    return min(i, n)


async def drive_proxy_records(
    command: list[str], texts: list[str], call: Callable[..., Any], env: dict[str, str] | None = None
) -> list[Any]:
    out = []
    async with open_session(command, env=env) as session:
        for i in range(len(texts)):
            out.append(await call(session, i))
    return out


def baseline_rows(texts: list[str], tools: list[str]) -> tuple[PeerRow, PeerRow]:
    raw = PeerRow("no proxy (client gets every byte)")
    cc = PeerRow("Claude Code alone (25K-token reject, 50K-char file)")
    for text, tool in zip(texts, tools, strict=True):
        raw.add(text, len(text), len(text))
        outcome = claude_code_alone(text, tool)
        cc.add(text, outcome.chars_to_model, outcome.chars_recoverable, rejected=outcome.fate == "rejected")
    files = sum(1 for t in texts if claude_code_alone(t).fate == "file")
    rejected = cc.records_rejected
    cc.note = f"{files} saved to file (re-read costs tokens), {rejected} rejected (lost)"
    raw.note = "also the bare SDK proxy (forwards unchanged)"
    return raw, cc


def fastmcp_row(
    ctx: Ctx,
    texts: list[str],
    downstream: list[str],
    call_args: list[tuple[str, dict[str, Any]]],
    limit: int = FASTMCP_LIMIT,
) -> PeerRow | None:
    peer = ctx.peer("fastmcp")
    if not peer.available:
        return None
    row = PeerRow(f"FastMCP proxy + ResponseLimitingMiddleware(max_size={limit:,})")
    command = [str(peer.python), str(HERE / "peers" / "fastmcp_proxy.py"), "--max-size", str(limit), *downstream]

    async def call(session: Any, i: int) -> str:
        name, args = call_args[i]
        return result_text(await session.call_tool(name, args))

    started = time.perf_counter()
    shown = anyio.run(drive_proxy_records, command, texts, call)
    row.seconds = time.perf_counter() - started
    for text, got in zip(texts, shown, strict=True):
        kept = len(text) if got == text else common_prefix_len(text, got)
        row.add(text, len(got), kept)
    row.note = f"truncated {row.records_lossy}; cut bytes are gone (fastmcp {peer.versions.get('fastmcp', '?')})"
    return row


def compressor_row(
    ctx: Ctx, texts: list[str], downstream: list[str], call_args: list[tuple[str, dict[str, Any]]], server_name: str
) -> PeerRow | None:
    peer = ctx.peer("compressor")
    if not peer.available:
        return None
    row = PeerRow("mcp-compressor --shrinkfit (20,000 chars)")
    out_dir = ctx.work / "compressor-out"
    out_dir.mkdir(exist_ok=True)
    env = {"MCP_COMPRESSOR_CLI_OUTPUT_DIR": str(out_dir), "TMPDIR": str(out_dir), "MCP_COMPRESSOR_NO_BROWSER": "1"}
    command = [str(peer.bin / "mcp-compressor"), "--shrinkfit", "-n", server_name, "--", *downstream]
    invoke = f"{server_name}_invoke_tool"

    async def call(session: Any, i: int) -> tuple[str, bool]:
        name, args = call_args[i]
        got = result_text(await session.call_tool(invoke, {"tool_name": name, "tool_input": args}))
        if got == texts[i]:
            return got, True
        full = result_text(await session.call_tool(invoke, {"tool_name": name, "tool_input": args, "full": True}))
        return got, full == texts[i]

    started = time.perf_counter()
    shown = anyio.run(drive_proxy_records, command, texts, call, env)
    row.seconds = time.perf_counter() - started
    shrunk = 0
    for text, (got, recovered) in zip(texts, shown, strict=True):
        shrunk += got != text
        row.add(text, len(got), len(text) if recovered else common_prefix_len(text, got))
    row.note = f"shrunk {shrunk}; originals come back with full=true (cached, or the tool runs again)"
    return row


def headroom_rows(ctx: Ctx, texts: list[str], modes: tuple[str, ...] = ("mcp", "library-recent0")) -> list[PeerRow]:
    peer = ctx.peer("headroom")
    if not peer.available:
        return []
    rows = []
    src = ctx.work / "headroom-in.jsonl"
    with open(src, "w", encoding="utf-8") as fh:
        for i, t in enumerate(texts):
            fh.write(json.dumps({"id": i, "text": t}) + "\n")
    labels = {
        "mcp": "headroom-ai headroom_compress (MCP path, defaults)",
        "library-recent0": "headroom-ai compress(protect_recent=0)",
    }
    for mode in modes:
        label = labels[mode]
        dst = ctx.work / f"headroom-{mode}.jsonl"
        ws = ctx.work / f"headroom-ws-{mode}"
        ws.mkdir(exist_ok=True)
        env = {
            **os.environ,
            "HEADROOM_OFFLINE": "1",
            "HEADROOM_WORKSPACE_DIR": str(ws),
            "HOME": str(ws),
            "HEADROOM_TELEMETRY": "off",
            "DO_NOT_TRACK": "1",
        }
        started = time.perf_counter()
        proc = subprocess.run(
            [str(peer.python), str(HERE / "peers" / "headroom_runner.py"), str(src), str(dst), mode],
            capture_output=True,
            text=True,
            env=env,
        )
        elapsed = time.perf_counter() - started
        if proc.returncode != 0:
            ctx.notes.append(f"headroom ({mode}) failed: {proc.stderr.strip()[-300:]}")
            continue
        results = [json.loads(line) for line in open(dst, encoding="utf-8")]
        row = PeerRow(label)
        row.seconds = elapsed
        changed = errors = 0
        for text, res in zip(texts, results, strict=True):
            changed += res["chars_out"] != len(text)
            errors += bool(res.get("error"))
            recoverable = len(text) if res.get("recovered_exact") else 0
            row.add(text, res["chars_out"], recoverable)
        if mode == "mcp":
            envelope = sum(r["envelope_chars"] for r in results)
            row.note = (
                f"changed {changed}; originals kept in its in-memory CCR store (1 h TTL, 1,000 entries); counted: the compressed text. "
                f"The JSON the MCP tool actually returns is {pct(envelope, row.chars_in):.0f}% of the original size"
            )
        else:
            row.unverified = True
            row.note = f"changed {changed}; library mode: retrieval of its cuts goes through headroom's proxy, not checked here"
        if errors:
            row.note += f"; {errors} errors"
        rows.append(row)
    return rows


def offload_row(
    ctx: Ctx, records: list[dict[str, Any]], label: str = "offload-mcp (defaults)"
) -> tuple[PeerRow | None, list[dict[str, Any]]]:
    from offload import Shaping, restore, shaper_status

    status = shaper_status()
    if status:
        ctx.notes.append(status)
        return None, []
    ledger_path = ctx.work / f"ledger-{label.replace(' ', '_').replace('(', '').replace(')', '')}.db"
    for suffix in ("", "-wal", "-shm"):
        Path(str(ledger_path) + suffix).unlink(missing_ok=True)
    shaping = Shaping(ledger_path)
    row = PeerRow(label)
    details = []
    reasons: dict[str, int] = defaultdict(int)
    started = time.perf_counter()
    try:
        for r in records:
            text = r["output"]
            shaped, report = shaping.shape(
                text,
                tool=r.get("tool") or "tool",
                arguments={"call": r.get("call") or ""},
                session=str(r.get("traj") or "default"),
            )
            back = restore(text, shaped, shaping.ledger)
            ok = back.ok
            row.add(text, len(shaped), len(text) if ok else 0)
            verdict = (
                getattr(getattr(report, "decision", None), "reason", None)
                or getattr(report, "reason", None)
                or back.via
            )
            reasons[str(verdict).split(" ")[0].split(":")[0]] += 1
            details.append({"chars_in": len(text), "chars_out": len(shaped), "via": back.via, "ok": ok})
    finally:
        row.seconds = time.perf_counter() - started
        shaping.close()
    stubs = sum(1 for d in details if d["via"] == "stub")
    marked = sum(1 for d in details if d["via"] == "markers")
    row.note = f"{stubs} offloaded to the ledger, {marked} reduced with markers; restored byte for byte: {row.n - row.records_lossy}/{row.n}"
    ctx.data.setdefault("offload_reasons", {})[label] = dict(reasons)
    return row, details


def section_tokens(ctx: Ctx) -> Section:
    limit = 250 if ctx.quick else None
    records = load_corpus(limit)
    texts = [r["output"] for r in records]
    tools = [r.get("tool") or "tool" for r in records]
    rec_file = write_records_file(records, ctx.work / "records.jsonl")
    downstream = [PY, PAYLOAD_SERVER, "--records", str(rec_file)]
    call_args = [("record", {"index": i}) for i in range(len(records))]

    rows: list[PeerRow] = list(baseline_rows(texts, tools))
    for maker in (
        lambda: fastmcp_row(ctx, texts, downstream, call_args),
        lambda: compressor_row(ctx, texts, downstream, call_args, "payload"),
    ):
        try:
            got = maker()
            if got:
                rows.append(got)
        except Exception as err:
            ctx.notes.append(f"corpus peer failed: {type(err).__name__}: {err}")
            traceback.print_exc()
    rows += headroom_rows(ctx, texts, ("mcp",))  # the tuned library mode runs on the large outputs (section 2)
    off, details = offload_row(ctx, records)
    if off:
        rows.append(off)
    ctx.data["corpus_rows"] = rows
    ctx.data["corpus_records"] = records
    ctx.data["offload_details"] = details

    # Same, restricted to outputs >= 8K chars (36% of corpus chars) where the peers differ most.
    big_idx = [i for i, t in enumerate(texts) if len(t) >= 8_000]
    big_rows = []
    for row in rows:
        if len(row.per_record) != len(texts):
            continue
        sub = PeerRow(row.peer)
        for i in big_idx:
            sub.n += 1
            sub.chars_in += len(texts[i])
            sub.chars_out += row.per_record[i]
        big_rows.append(
            [
                row.peer,
                sub.n,
                round(tokens(sub.chars_in)),
                round(tokens(sub.chars_out)),
                f"{pct(sub.chars_in - sub.chars_out, sub.chars_in):.1f}%",
            ]
        )

    first = []
    if len(texts) >= 2000:
        head_in = sum(len(t) for t in texts[:2000])
        for r in rows:
            if r.peer.startswith("headroom") and len(r.per_record) == len(texts):
                first.append(
                    f"{r.peer}: {pct(head_in - sum(r.per_record[:2000]), head_in):.1f}% fewer chars on the first 2,000 records"
                )
    scope = f"the first {len(records):,} records" if ctx.quick else f"all {len(records):,} records"
    body = [
        f"Corpus: `{CORPUS.name}`, {scope} ({sum(map(len, texts)):,} chars). Each output is served by the same downstream "
        "(bench/peers/payload_server.py) so every proxy peer sees identical bytes; Claude Code alone is its documented policy; "
        "headroom runs its own compressor on the same texts; offload-mcp runs its server's shaper with one session per trajectory "
        "and every result is restored through the ledger and compared byte for byte.",
        "",
        md_table(ROW_HEADERS, [r.row() for r in rows]),
        "",
        f"Outputs of 8,000 chars or more ({len(big_idx):,} of them):",
        "",
        md_table(["peer", "outputs", "tokens in", "tokens to model", "reduction"], big_rows),
        "",
        *(["", "Reproducing the new user's headroom finding: " + "; ".join(first) + ".", ""] if first else [""]),
        "Time for the whole set: "
        + ", ".join(f"{r.peer.split(' (')[0].split(' +')[0]} {r.seconds:.1f} s" for r in rows if r.seconds),
    ]
    return Section("tokens", "1. Tokens on the corpus", "\n".join(body))


# ----------------------------------------------------------------------------- large real outputs


def large_outputs(ctx: Ctx) -> list[dict[str, Any]]:
    sys.path.insert(0, str(HERE / "data" / "large"))
    import make_large

    out = OUT / "large"
    make_large.make_all(out, 3000, repo_only=ctx.quick)
    files = out / "files"
    fs = str(ROOT / "node_modules" / ".bin" / "mcp-server-filesystem")
    git = shutil.which("mcp-server-git") or str(Path(PY).parent / "mcp-server-git")
    repo = str(out / "repo")
    items = [
        {
            "name": "git_log 3,000 commits (mcp-server-git)",
            "server": [git, "--repository", repo],
            "tool": "git_log",
            "args": {"repo_path": repo, "max_count": 3000},
        }
    ]
    if not Path(fs).exists():
        ctx.notes.append("server-filesystem not installed (npm install): file-read outputs skipped")
        return items
    labels = {
        "pytest_log.txt": "pytest -v log, 3 real suites (read_text_file)",
        "pip_inspect.json": "pip inspect JSON listing (read_text_file)",
        "react_reconciler.js": "react-reconciler.development.js (read_text_file)",
        "vite_node.js": "vite node.js chunk, 1.4 MB (read_text_file)",
    }
    for name, label in labels.items():
        if (files / name).exists():
            items.append(
                {
                    "name": label,
                    "server": [fs, str(files)],
                    "tool": "read_text_file",
                    "args": {"path": str(files / name)},
                }
            )
    if ctx.quick:
        items = items[:1]
    return items


async def _direct_texts(items: list[dict[str, Any]]) -> list[str]:
    got = await _through(lambda server: server, items, lambda it: (it["tool"], it["args"]))
    return [g for g, _ in got]


async def _through(
    command_for: Callable[[list[str]], list[str]],
    items: list[dict[str, Any]],
    tool_for: Callable[[dict[str, Any]], tuple[str, dict[str, Any]]],
    env: dict[str, str] | None = None,
    full: bool = False,
) -> list[tuple[str, str | None]]:
    """Call each item through `command_for(its server)`; one session per distinct server, items in order."""
    out: dict[int, tuple[str, str | None]] = {}
    groups: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for i, item in enumerate(items):
        groups[tuple(item["server"])].append(i)
    for server, idxs in groups.items():
        async with open_session(command_for(list(server)), env=env) as s:
            for i in idxs:
                name, args = tool_for(items[i])
                got = result_text(await s.call_tool(name, args))
                again = None
                if full:
                    again = result_text(await s.call_tool(name, {**args, "full": True}))
                out[i] = (got, again)
    return [out[i] for i in range(len(items))]


def section_large(ctx: Ctx) -> Section:
    items = large_outputs(ctx)
    texts = anyio.run(_direct_texts, items)
    per_item: dict[str, list[tuple[int, int]]] = defaultdict(list)  # peer -> [(shown, recoverable)]
    unverified: set[str] = set()
    notes = []

    for text, item in zip(texts, items, strict=True):
        per_item["no proxy"].append((len(text), len(text)))
        o = claude_code_alone(text, item["tool"])
        per_item["Claude Code alone"].append((o.chars_to_model, o.chars_recoverable))

    fm = ctx.peer("fastmcp")
    if fm.available:
        limits = (
            ((FASTMCP_LIMIT, "FastMCP limit 100 KB"),)
            if ctx.quick
            else ((FASTMCP_LIMIT, "FastMCP limit 100 KB"), (1_000_000, "FastMCP limit 1 MB (default)"))
        )
        for limit, label in limits:
            got = anyio.run(
                _through,
                lambda s, limit=limit: [
                    str(fm.python),
                    str(HERE / "peers" / "fastmcp_proxy.py"),
                    "--max-size",
                    str(limit),
                    *s,
                ],
                items,
                lambda it: (it["tool"], it["args"]),
            )
            for text, (g, _) in zip(texts, got, strict=True):
                per_item[label].append((len(g), len(text) if g == text else common_prefix_len(text, g)))

    cp = ctx.peer("compressor")
    if cp.available:
        out_dir = ctx.work / "compressor-out"
        out_dir.mkdir(exist_ok=True)
        env = {"MCP_COMPRESSOR_CLI_OUTPUT_DIR": str(out_dir), "TMPDIR": str(out_dir)}
        got = anyio.run(
            _through,
            lambda s: [str(cp.bin / "mcp-compressor"), "--shrinkfit", "-n", "srv", "--", *s],
            items,
            lambda it: ("srv_invoke_tool", {"tool_name": it["tool"], "tool_input": it["args"]}),
            env,
            True,
        )
        for text, (g, full) in zip(texts, got, strict=True):
            per_item["mcp-compressor --shrinkfit"].append((len(g), len(text) if (g == text or full == text) else 0))

    if ctx.peer("headroom").available:
        for row in headroom_rows(ctx, texts):
            label = "headroom (MCP)" if "MCP" in row.peer else "headroom (protect_recent=0)"
            per_item[label] = list(zip(row.per_record, row.per_recoverable, strict=True))
            if row.unverified:
                unverified.add(label)

    from offload import restore, shaper_status

    status = shaper_status()
    if status:
        notes.append(status)
    else:
        from offload_mcp.config import OffloadSettings
        from offload_mcp.store.ledger import Ledger

        ledger_path = ctx.work / "ledger-large.db"
        for suffix in ("", "-wal", "-shm"):
            Path(str(ledger_path) + suffix).unlink(missing_ok=True)
        from offload import proxy_command

        got = anyio.run(_through, lambda s: proxy_command(s, ledger_path), items, lambda it: (it["tool"], it["args"]))
        ledger = Ledger.open(OffloadSettings().ledger, ledger_path)
        try:
            for text, (g, _) in zip(texts, got, strict=True):
                back = restore(text, g, ledger)
                per_item["offload-mcp proxy"].append((len(g), len(text) if back.ok else 0))
        finally:
            ledger.close()

    headers = ["output", "chars"] + list(per_item.keys())
    rows = []
    for i, (item, text) in enumerate(zip(items, texts, strict=True)):
        cells: list[Any] = [item["name"], len(text)]
        for peer, vals in per_item.items():
            shown, rec = vals[i]
            mark = (
                ""
                if rec >= len(text)
                else (
                    " *unverified*" if peer in unverified else " **lost " + f"{pct(len(text) - rec, len(text)):.0f}%**"
                )
            )
            cells.append(f"{round(tokens(shown)):,}{mark}")
        rows.append(cells)
    total_in = sum(map(len, texts))
    summary = []
    for peer, vals in per_item.items():
        shown = sum(v[0] for v in vals)
        rec = sum(v[1] for v in vals)
        summary.append(
            [
                peer,
                round(tokens(shown)),
                f"{pct(total_in - shown, total_in):.1f}%",
                "not verifiable" if peer in unverified else f"{pct(rec, total_in):.1f}%",
            ]
        )
    ctx.data["large_summary"] = summary
    ctx.data["large_per_item"] = {
        "chars": [len(t) for t in texts],
        "peers": dict(per_item),
        "unverified": set(unverified),
    }
    body = [
        "Large outputs made by real tools and fetched through real MCP servers (bench/data/large/make_large.py). Cells: tokens the model "
        "receives (chars / 4); **lost N%** marks outputs whose bytes cannot all be recovered exactly.",
        "",
        md_table(headers, rows),
        "",
        md_table(["peer", "tokens to model (all)", "reduction", "bytes recoverable"], summary),
    ]
    if notes:
        body += ["", *[f"- {n}" for n in notes]]
    return Section("large", "2. Tokens on large real outputs", "\n".join(body))


# ----------------------------------------------------------------------------- dollars


def _rates(model: str, cached: bool) -> Any:
    """The model's USD-per-token rates with prompt caching on (5 min writes) or off: policy/economics.py."""
    from offload_mcp.policy.economics import Rates
    from offload_mcp.policy.pricing import resolve_price

    price = resolve_price(model)
    assert price is not None, model
    return Rates.of(price, prompt_caching=cached, cache_ttl="5m")


def _recalled_and_carried(rates: Any, pol: Any, horizon: int) -> float:
    """One recall hop (economics.recall_hop) whose slice then rides along the remaining requests: the
    pessimistic price of an offloaded result. A horizon counts the request that read the result
    (economics.requests_carrying): at 1 no call follows it, so nothing recalls it."""
    if horizon <= 1:
        return 0.0
    slice_tokens = pol.recall_input_tokens
    return rates.recall_hop(slice_tokens, pol.recall_output_tokens) + slice_tokens * rates.carried * (horizon - 2)


def section_dollars(ctx: Ctx) -> Section:
    """Dollars from offload_mcp.policy.economics, the module the gate, stats, replay and the demo use:
    H = the requests that carried a result in its trajectory (`last step - step + 1`: the later calls and
    the request that read it, economics.requests_carrying), carry(x, H) and
    recall_hop(R_in, R_out) exactly as there, so these figures and `offload-mcp replay` agree."""
    records = ctx.data.get("corpus_records")
    rows: list[PeerRow] | None = ctx.data.get("corpus_rows")
    if not records or not rows:
        return Section(
            "dollars",
            "3. Dollars over real trajectories",
            "Needs the tokens section (run without --only or include `tokens`).",
            ok=False,
        )
    from offload_mcp.policy.economics import requests_carrying

    last_step: dict[str, int] = {}
    for r in records:
        last_step[r["traj"]] = max(last_step.get(r["traj"], 0), int(r["step"]))
    horizons = [requests_carrying(last_step[r["traj"]] - int(r["step"])) for r in records]
    details = ctx.data.get("offload_details") or []
    stub_idx = [i for i, d in enumerate(details) if d["via"] == "stub"]

    by_peer = {r.peer: r for r in rows if len(r.per_record) == len(records)}
    from offload_mcp.config import OffloadSettings

    pol = OffloadSettings().policy
    columns = [(m, c) for m in MODELS for c in (False, True)]
    cells: dict[str, list[str]] = {p: [] for p in by_peer}
    base_cells = []
    for model, cached in columns:
        rates = _rates(model, cached)

        def cost_of(chars: list[float], rates: Any = rates) -> float:
            return sum(rates.carry(tokens(c), h) for c, h in zip(chars, horizons, strict=True))

        base = cost_of([len(r["output"]) for r in records])
        base_cells.append(base)
        for peer, row in by_peer.items():
            cost = cost_of(row.per_record)
            if peer.startswith("offload-mcp"):
                hop = rates.recall_hop(pol.recall_input_tokens, pol.recall_output_tokens)
                prior = cost + pol.recall_probability * hop * len(stub_idx)
                pess = cost + sum(_recalled_and_carried(rates, pol, horizons[i]) for i in stub_idx)
                cells[peer].append(
                    f"${prior:,.2f} ({pct(base - prior, base):.1f}%) / ${pess:,.2f} ({pct(base - pess, base):.1f}%)"
                )
            else:
                cells[peer].append(f"${cost:,.2f} ({pct(base - cost, base):.1f}%)")
    headers = ["peer"] + [f"{m} {'cached' if c else 'uncached'}" for m, c in columns]
    table = [[peer, *vals] for peer, vals in cells.items()]
    ctx.data["dollars"] = {"columns": headers[1:], "rows": table}
    body = [
        "Cost of the tool-output part of the context over each trajectory's real calls, priced by "
        "`offload_mcp.policy.economics` (the module the gate, `stats`, `replay` and the demo use): a result is carried by "
        "the H requests that read it: the one right after its call and one per later call in its trajectory "
        "(`traj`/`step`), carry(x, H) = x × (new content + carried × (H − 1)). Uncached: the input rate "
        "each time. Cached (Claude Code): cache write once (5 min), cache read on each later request. For offload-mcp the "
        f"two figures price recalls at the configured prior (p = {pol.recall_probability}, one "
        f"{pol.recall_input_tokens:,}-token recall hop per offloaded result) and pessimistically (every offloaded result "
        "recalled once and the recalled slice carried for the rest of the trajectory), as `prior / pessimistic`; "
        "percentages are savings against no proxy. `offload-mcp replay --json` prices the same way and also charges "
        "one hop per needed fact the model could not see. Lossy peers look cheap because they drop bytes: read their "
        "rows with the recoverability column of section 1.",
        "",
        md_table(headers, table),
        "",
        f"{len(stub_idx):,} result(s) were offloaded behind a stub; reducer markers (`context_guru_expand`) are not priced: "
        "an expand brings the cut bytes back at the input rate, so a model that expands everything pays the no-proxy cost for those outputs.",
    ]
    body += _large_dollars(ctx, pol)
    return Section("dollars", "3. Dollars over real trajectories", "\n".join(body))


def _large_dollars(ctx: Ctx, pol: Any) -> list[str]:
    """The large real outputs of section 2, each followed by the policy's horizon prior of calls (economics.carry)."""
    large = ctx.data.get("large_per_item")
    if not large:
        return []
    h = pol.horizon
    columns = [(m, c) for m in MODELS for c in (False, True)]
    table = []
    for peer, vals in large["peers"].items():
        cells = [peer]
        for model, cached in columns:
            rates = _rates(model, cached)
            cost = sum(rates.carry(tokens(shown), h) for shown, _ in vals)
            if peer.startswith("offload-mcp"):
                cut = [i for i, (shown, _) in enumerate(vals) if shown < large["chars"][i]]
                pess = cost + sum(_recalled_and_carried(rates, pol, h) for _ in cut)
                cells.append(f"${cost:,.3f} / ${pess:,.3f}")
            else:
                lost = sum(1 for i, (_, rec) in enumerate(vals) if rec < large["chars"][i])
                tag = "unverified" if peer in large["unverified"] else "lost"
                cells.append(f"${cost:,.3f}" + (f" ({lost} {tag})" if lost else ""))
        table.append(cells)
    return [
        "",
        f"The {len(large['chars'])} large real outputs of section 2, each followed by the policy's horizon prior of {h} "
        "calls (for offload-mcp: no recall / every output recalled once with its slice carried; `lost` counts outputs "
        "whose bytes are gone):",
        "",
        md_table(["peer"] + [f"{m} {'cached' if c else 'uncached'}" for m, c in columns], table),
    ]


# ----------------------------------------------------------------------------- latency


def _bare_proxy_command(downstream: list[str]) -> list[str] | None:
    for candidate in (HERE / "bare_proxy.py", HERE / "peers" / "bare_proxy.py"):
        if candidate.exists():
            return [PY, str(candidate), *downstream]
    return None


async def _latency_run(
    peers: dict[str, list[str]],
    sizes: dict[str, tuple[int, int]],
    envs: dict[str, dict[str, str]],
    invoke: dict[str, str],
) -> dict[str, dict[str, dict[str, float]]]:
    from contextlib import AsyncExitStack

    results: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    async with AsyncExitStack() as stack:
        sessions = {}
        for name, cmd in peers.items():
            sessions[name] = await stack.enter_async_context(open_session(cmd, env=envs.get(name)))
        for label, (size, reps) in sizes.items():
            for name, s in sessions.items():  # warm-up, not timed
                await _call_sized(s, invoke.get(name), size, 0)
            for rep in range(reps):
                for name, s in sessions.items():  # interleaved: every peer shares the same noise
                    start = time.perf_counter()
                    await _call_sized(s, invoke.get(name), size, rep + 1)
                    results[name][label].append(time.perf_counter() - start)
    return {n: {lab: summarize_ms(v) for lab, v in d.items()} for n, d in results.items()}


async def _call_sized(session: Any, invoke: str | None, size: int, seed: int) -> Any:
    # Every call's bytes differ (seed), so no peer can answer a repeat from a cache or with a dedup pointer.
    args = {"size": size, "seed": seed}
    if invoke:
        return await session.call_tool(invoke, {"tool_name": "text", "tool_input": args})
    return await session.call_tool("text", args)


def section_latency(ctx: Ctx) -> Section:
    downstream = [PY, PAYLOAD_SERVER]
    peers: dict[str, list[str]] = {"direct (no proxy)": downstream}
    envs: dict[str, dict[str, str]] = {}
    invoke: dict[str, str] = {}
    notes = []
    bare = _bare_proxy_command(downstream)
    if bare:
        peers["bare mcp-SDK proxy"] = bare
    else:
        notes.append("bench/bare_proxy.py not in the tree yet: bare-proxy row missing")
    from offload import proxy_command, shaper_status

    ledger = ctx.work / "ledger-latency.db"
    for suffix in ("", "-wal", "-shm"):
        Path(str(ledger) + suffix).unlink(missing_ok=True)
    peers["offload-mcp"] = proxy_command(downstream, ledger)
    if shaper_status():
        notes.append("offload-mcp row measured with the pass-through shaper placeholder (its shaper had not landed)")
    fm = ctx.peer("fastmcp")
    if fm.available:
        peers["FastMCP proxy"] = [
            str(fm.python),
            str(HERE / "peers" / "fastmcp_proxy.py"),
            "--max-size",
            "0",
            *downstream,
        ]
    cp = ctx.peer("compressor")
    if cp.available:
        out_dir = ctx.work / "compressor-out"
        out_dir.mkdir(exist_ok=True)
        peers["mcp-compressor (medium)"] = [str(cp.bin / "mcp-compressor"), "-n", "payload", "--", *downstream]
        envs["mcp-compressor (medium)"] = {"MCP_COMPRESSOR_CLI_OUTPUT_DIR": str(out_dir), "TMPDIR": str(out_dir)}
        invoke["mcp-compressor (medium)"] = "payload_invoke_tool"
    sizes = {"small (200 B)": (200, 40 if ctx.quick else 300), "1 MB": (1_000_000, 3 if ctx.quick else 20)}
    if not ctx.quick:
        sizes["10 MB"] = (10_000_000, 6)
    try:
        res = anyio.run(_latency_run, peers, sizes, envs, invoke)
    except Exception as err:
        traceback.print_exc()
        return Section("latency", "4. Latency added per proxy", f"could not run: {type(err).__name__}: {err}", ok=False)
    ctx.data["latency"] = res
    direct = res["direct (no proxy)"]
    headers = (
        ["peer"] + [f"{lab} median / p99 ms" for lab in sizes] + [f"{lab} ratio to direct (median)" for lab in sizes]
    )
    rows = []
    for name, by_size in res.items():
        cells: list[Any] = [name]
        cells += [f"{by_size[lab]['median']:.2f} / {by_size[lab]['p99']:.2f}" for lab in sizes]
        cells += [f"{by_size[lab]['median'] / direct[lab]['median']:.2f}x" for lab in sizes]
        rows.append(cells)
    body = [
        "One client (mcp SDK, stdio) calls `text(size, seed)` on the same downstream directly and through each proxy; calls are interleaved "
        f"round-robin across peers so they share the machine's noise, and every call's bytes differ (no cache or dedup can answer it). Repetitions: {', '.join(f'{k} x{v[1]}' for k, v in sizes.items())}. "
        "offload-mcp answers 1 MB and 10 MB results with a stub (the body goes to its ledger): its client parses less, "
        "the proxy does more (reducers, compression, the ledger commit); FastMCP runs without the limiting middleware here (the plain hop); mcp-compressor is called "
        "through its `invoke_tool` wrapper without --shrinkfit. A ratio below 1.0 means the client handled that proxy's answer faster "
        "than the downstream's own (another server implementation and framing), not that a hop is free.",
        "",
        md_table(headers, rows),
    ]
    if notes:
        body += ["", *[f"- {n}" for n in notes]]
    return Section("latency", "4. Latency added per proxy", "\n".join(body))


# ----------------------------------------------------------------------------- scale

SCALE_CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[3])
from payload_server import make_text
from offload import Shaping, restore

def hwm_kb():
    # VmHWM is this process's own peak RSS; ru_maxrss would include the parent's peak from before exec.
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0

size = int(sys.argv[1]); ledger = sys.argv[2]
text = make_text(size)
shaping = Shaping(__import__("pathlib").Path(ledger))
base = hwm_kb()
times = []
for i in range(3 if size <= 10_000_000 else 1):
    t = text if i == 0 else text[:-1] + str(i % 10)
    start = time.perf_counter()
    shaped, _ = shaping.shape(t, tool="text", arguments={"size": size, "rep": i}, session=f"s{i}")
    times.append(time.perf_counter() - start)
peak = hwm_kb()
start = time.perf_counter()
back = restore(t, shaped, shaping.ledger)
restore_s = time.perf_counter() - start
print(json.dumps({"size": size, "shape_s": sorted(times)[len(times)//2], "peak_rss_kb": peak, "rss_growth_kb": peak - base,
                  "chars_out": len(shaped), "restored": back.ok, "restore_s": restore_s}))
"""


def section_scale(ctx: Ctx) -> Section:
    from offload import shaper_status

    if shaper_status():
        return Section("scale", "5. Scale", f"not measured: {shaper_status()}", ok=False)
    sizes = [10_000, 100_000, 1_000_000] if ctx.quick else [10_000, 100_000, 1_000_000, 10_000_000, 100_000_000]
    rows = []
    points = []
    for size in sizes:
        ledger = ctx.work / f"ledger-scale-{size}.db"
        for suffix in ("", "-wal", "-shm"):
            Path(str(ledger) + suffix).unlink(missing_ok=True)
        proc = subprocess.run(
            [PY, "-c", SCALE_CHILD, str(size), str(ledger), str(HERE / "peers")], capture_output=True, text=True
        )
        if proc.returncode != 0:
            rows.append([f"{size:,}", "failed", proc.stderr.strip()[-200:], "", "", ""])
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        points.append(r)
        rows.append(
            [
                f"{size:,}",
                f"{r['shape_s'] * 1000:.1f}",
                f"{r['peak_rss_kb'] / 1024:.0f}",
                f"{r['rss_growth_kb'] / 1024:.0f}",
                f"{r['chars_out']:,}",
                "yes" if r["restored"] else "**no**",
            ]
        )
    ctx.data["scale_points"] = points
    recall_rows, disk_rows = _recall_scale(ctx)
    body = [
        "offload-mcp's shaper in a fresh process per size (reducers + policy + ledger commit; median of 3 runs, 1 at 100 MB), "
        "peak RSS of that process and how much shaping added to it; then restored through the ledger and compared.",
        "",
        md_table(
            ["result chars", "shape ms", "peak RSS MB", "RSS added MB", "chars to model", "restored exactly"], rows
        ),
        "",
        "![size scaling](bench/plots/scale.png)" if not ctx.quick else "",
        "",
        "Recall latency by ledger size: a real ledger filled by direct inserts through the ledger API (24-line bodies of ~800 chars), "
        "then bench/bench_recall.py's `measure` calls the real `recall_tool_result` handler on random ids (range, query and line styles in turn).",
        "",
        md_table(
            ["entries", "fill s", "recall p50 / p99 ms", "p50 vs smallest", "p50 by style ms", "ledger MB"], recall_rows
        ),
        "",
        md_table(["stored", "raw MB", "ledger file MB", "MB on disk per stored MB"], disk_rows),
    ]
    return Section("scale", "5. Scale", "\n".join(body))


def _fill_ledger(path: Path, entries: int, words: list[str]) -> list[str]:
    """Direct inserts through the ledger API (1M entries in about a minute): 24-line bodies of ~800 chars."""
    import bench_recall

    nw = len(words)
    texts = (
        "\n".join(
            f"{i}:{n:02d} {words[(i * 7 + n) % nw]} {words[(i + n * 3) % nw]} {words[(i * 5 + n * 11) % nw]} id={i * 31 + n}"
            for n in range(24)
        )
        for i in range(entries)
    )
    return bench_recall.insert_bodies(path, texts, batch_size=5000)


def _recall_scale(ctx: Ctx) -> tuple[list[list[Any]], list[list[Any]]]:
    """Recall latency by ledger size, with H2's bench/bench_recall.py (fill + the real recall handler)."""
    import bench_recall
    from offload_mcp.config import OffloadSettings
    from offload_mcp.store.ledger import BodyRecord, Ledger

    settings = OffloadSettings()
    levels = [1_000, 10_000] if ctx.quick else [1_000, 100_000, 1_000_000]
    calls = 150 if ctx.quick else 900
    recall_rows = []
    base_p50 = None
    for n in levels:
        path = ctx.work / f"ledger-recall-{n}.db"
        for suffix in ("", "-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)
        started = time.perf_counter()
        ids = _fill_ledger(path, n, bench_recall.WORDS)
        fill_s = time.perf_counter() - started
        times = anyio.run(
            bench_recall.measure, path, ids, calls, 7, 700
        )  # offsets drawn below 600: inside every ~800-char body
        every = sum(times.values(), [])
        s_all = summarize_ms(every)
        base_p50 = base_p50 or s_all["median"]
        size_mb = sum(Path(str(path) + x).stat().st_size for x in ("", "-wal") if Path(str(path) + x).exists()) / 1e6
        per_style = ", ".join(f"{k} {summarize_ms(v)['median']:.2f}" for k, v in times.items())
        recall_rows.append(
            [
                f"{n:,}",
                f"{fill_s:.1f}",
                f"{s_all['median']:.3f} / {s_all['p99']:.3f}",
                f"{s_all['median'] / base_p50:.2f}x",
                per_style,
                f"{size_mb:,.0f}",
            ]
        )
        path.unlink(missing_ok=True)
        Path(str(path) + "-wal").unlink(missing_ok=True)
    samples = [r["output"] for r in (ctx.data.get("corpus_records") or load_corpus(2000)) if r["output"]]
    # Disk per stored MB: real corpus outputs, stored as bodies.
    path = ctx.work / "ledger-disk.db"
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    ledger = Ledger.open(settings.ledger, path)
    raw = 0
    batch = []
    for i, text in enumerate(samples):
        body = {"content": [{"type": "text", "text": text}], "isError": False}
        batch.append(
            BodyRecord.of(body, server="bench", tool="disk", arguments={"i": i}, session_id="disk", chars=len(text))
        )
        raw += len(text.encode())
        if len(batch) >= 1000:
            ledger.commit(bodies=batch)
            batch = []
    ledger.commit(bodies=batch)
    ledger.close()  # the last connection to close checkpoints the WAL into the file
    disk = sum(Path(str(path) + x).stat().st_size for x in ("", "-wal") if Path(str(path) + x).exists())
    disk_rows = [[f"{len(samples):,} corpus outputs", f"{raw / 1e6:.1f}", f"{disk / 1e6:.1f}", f"{disk / raw:.2f}"]]
    return recall_rows, disk_rows


# ----------------------------------------------------------------------------- catalog


def section_catalog(ctx: Ctx) -> Section:
    try:
        import bench_catalog  # H4's benchmark: the >=100-tool catalog and the search-accuracy queries
    except Exception as err:
        ctx.notes.append(
            f"bench/bench_catalog.py not importable ({type(err).__name__}: {err}): search accuracy not shown"
        )
        bench_catalog = None
    from catalog_peer import catalog_section

    return catalog_section(ctx, bench_catalog)


# ----------------------------------------------------------------------------- report


def machine() -> str:
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = "?"
    try:
        for line in open("/proc/meminfo", encoding="utf-8"):
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
                break
    except OSError:
        pass
    from importlib.metadata import version

    def v(d: str) -> str:
        try:
            return version(d)
        except Exception:
            return "?"

    node = (
        subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
        if shutil.which("node")
        else "?"
    )
    return (
        f"- CPU: {cpu}, {os.cpu_count()} cores (nproc); RAM {mem}; {platform.system()} {platform.release()}\n"
        f"- Python {platform.python_version()}; node {node}; offload-mcp {v('offload-mcp')}; mcp {v('mcp')}; "
        f"mcp-server-git {v('mcp-server-git')}; sqlite {__import__('sqlite3').sqlite_version}"
    )


def plots(ctx: Ctx, target: Path) -> list[str]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        ctx.notes.append("matplotlib not installed (`pip install -e .[bench]`): plots skipped")
        return []
    target.mkdir(parents=True, exist_ok=True)
    made = []
    points = ctx.data.get("scale_points") or []
    if points:
        fig, ax = plt.subplots(figsize=(6, 4))
        xs = [p["size"] for p in points]
        ax.loglog(xs, [p["shape_s"] * 1000 for p in points], "o-", label="shape time (ms)")
        ax.loglog(xs, [p["peak_rss_kb"] / 1024 for p in points], "s--", label="peak RSS of the process (MB)")
        ax.loglog(xs, [x / 1e6 for x in xs], ":", color="grey", label="result size (MB)")
        ax.set_xlabel("result size (chars)")
        ax.set_title("offload-mcp: cost of shaping one result, by size")
        ax.legend()
        ax.grid(True, which="both", alpha=0.3)
        fig.tight_layout()
        fig.savefig(target / "scale.png", dpi=110)
        plt.close(fig)
        made.append("scale.png")
    rows: list[PeerRow] = ctx.data.get("corpus_rows") or []
    large = ctx.data.get("large_summary") or []
    if rows:
        fig, axes = plt.subplots(1, 2 if large else 1, figsize=(11 if large else 6.5, 4.2), squeeze=False)
        ax = axes[0][0]
        names = [
            r.peer.split(" (")[0]
            .split("(")[0]
            .replace(" + ResponseLimitingMiddleware", " + limit 100 KB")
            .replace("headroom-ai ", "headroom ")
            for r in rows
        ]
        vals = [100.0 * r.chars_out / r.chars_in for r in rows]
        colors = ["tab:grey" if r.unverified else "tab:red" if r.records_lossy else "tab:green" for r in rows]
        ax.barh(names, vals, color=colors)
        ax.invert_yaxis()
        ax.set_xlim(min(vals) * 0.95 if vals else 0, 100.5)
        ax.set_xlabel("% of the tokens with no proxy")
        ax.set_title(f"Corpus ({rows[0].n:,} real outputs)")
        if large:
            ax2 = axes[0][1]
            lnames = [r[0] for r in large]
            total = large[0][1] or 1
            lvals = [max(100.0 * r[1] / total, 0.01) for r in large]
            lcolors = [
                "tab:grey" if r[3] == "not verifiable" else "tab:green" if r[3] == "100.0%" else "tab:red"
                for r in large
            ]
            ax2.barh(lnames, lvals, color=lcolors)
            ax2.set_xscale("log")
            ax2.invert_yaxis()
            ax2.set_xlabel("% of the tokens of the full outputs (log)")
            ax2.set_title("Large real outputs")
        fig.suptitle(
            "Tokens to the model per peer - green: every byte recoverable, red: bytes lost, grey: not verifiable",
            fontsize=9,
        )
        fig.tight_layout()
        fig.savefig(target / "tokens_per_peer.png", dpi=110)
        plt.close(fig)
        made.append("tokens_per_peer.png")
    return made


def reading(ctx: Ctx) -> list[str]:
    """A short, honest reading of this run: where offload-mcp is ahead and where it is not."""
    ahead: list[str] = []
    behind: list[str] = []
    rows: list[PeerRow] = ctx.data.get("corpus_rows") or []
    by = {r.peer.split(" (")[0].split(" +")[0]: r for r in rows}
    off = next((r for r in rows if r.peer.startswith("offload-mcp")), None)
    if off:
        red = pct(off.chars_in - off.chars_out, off.chars_in)
        others = [
            (name, pct(r.chars_in - r.chars_out, r.chars_in))
            for name, r in by.items()
            if r is not off and not name.startswith("no proxy")
        ]
        best = max(others, key=lambda x: x[1]) if others else ("", 0.0)
        ahead.append(
            f"- Corpus ({off.n:,} real agent outputs, most already cut to <= 10K chars by their agents): offload-mcp sends {red:.1f}% fewer "
            f"tokens and every one of its outputs comes back byte for byte; the best peer here, {best[0]}, saves {best[1]:.1f}%. "
            "The corpus has few outputs large enough for offload, so this is the reducers' share; it is modest, and a model that "
            "expands every marker gives it back."
        )
        if off.records_lossy:
            behind.append(
                f"- {off.records_lossy} corpus outputs did not restore exactly through the ledger: a defect to fix before any saving counts."
            )
    large = {row[0]: row for row in ctx.data.get("large_summary") or []}
    if "offload-mcp proxy" in large:
        o = large["offload-mcp proxy"]
        peers = ", ".join(
            f"{k} {v[2]} ({'recoverability not verified' if v[3] == 'not verifiable' else v[3] + ' recoverable'})"
            for k, v in large.items()
            if k not in ("offload-mcp proxy", "no proxy")
        )
        ahead.append(
            f"- Large real outputs: offload-mcp cuts {o[2]} of the tokens with {o[3]} of the bytes recoverable; peers: {peers}."
        )
        cmp = large.get("mcp-compressor --shrinkfit")
        if cmp and cmp[3] == "100.0%":
            behind.append(
                f"- mcp-compressor's --shrinkfit is the closest peer on large outputs ({cmp[2]} cut, originals back with `full=true`); "
                "its recovery returns the whole output in one piece (or runs the tool again), where offload-mcp pages slices from a persistent ledger."
            )
    lat = ctx.data.get("latency") or {}
    if "offload-mcp" in lat and "direct (no proxy)" in lat:
        small = next(iter(lat["direct (no proxy)"]))
        o, d = lat["offload-mcp"][small]["median"], lat["direct (no proxy)"][small]["median"]
        bare = lat.get("bare mcp-SDK proxy", {}).get(small, {}).get("median")
        hop = f"{o:.2f} ms vs {d:.2f} ms direct" + (f" and {bare:.2f} ms through a bare SDK proxy" if bare else "")
        (ahead if bare and o <= bare * 1.15 else behind).append(f"- Small-result hop: {hop} (median).")
        for label in [k for k in lat["offload-mcp"] if k != small]:
            o_l, d_l = lat["offload-mcp"][label]["median"], lat["direct (no proxy)"][label]["median"]
            if o_l <= d_l:
                ahead.append(
                    f"- {label} results: the client gets offload-mcp's stub in {o_l:.0f} ms, the full result directly in {d_l:.0f} ms."
                )
            else:
                behind.append(
                    f"- {label} results: offload-mcp takes {o_l:.0f} ms to answer vs {d_l:.0f} ms direct ({o_l / d_l:.1f}x): shaping a large unique result costs more than moving it."
                )
        fastest = min(
            ((n, v[small]["median"]) for n, v in lat.items() if n not in ("direct (no proxy)",)), key=lambda x: x[1]
        )
        if fastest[0] != "offload-mcp":
            behind.append(f"- The cheapest hop for small results is {fastest[0]} ({fastest[1]:.2f} ms median).")
    cat = ctx.data.get("catalog")
    if cat:
        s_mode = cat["modes"]["search"]
        base = cat["modes"]["off"]["listed_tokens"]
        ahead.append(
            f"- Tool definitions: `search` mode lists {s_mode['listed_tools']} tools ({s_mode['listed_tokens']:.0f} tokens, "
            f"{pct(base - s_mode['listed_tokens'], base):.0f}% fewer than all {cat['modes']['off']['listed_tools']}) and finds the right tool in "
            f"the top 3 for {cat['recall']['top3_recall']:.0%} of the task queries; `hint` only helps clients that honour `defer_loading`."
        )
    dollars = ctx.data.get("dollars")
    if dollars:
        orow = next((r for r in dollars["rows"] if r[0].startswith("offload-mcp")), None)
        if orow:
            ahead.append(
                f"- Dollars over the corpus trajectories ({dollars['columns'][1]}): offload-mcp {orow[2]} (configured prior / pessimistic recall)."
            )
    if not ahead and not behind:
        return []
    return [
        "Where offload-mcp is ahead:",
        "",
        *ahead,
        "",
        "Where it is not, or where the comparison needs care:",
        "",
        *behind,
        "- Tokens are chars / 4 for every peer; the Claude Code row is its documented policy modelled, not a recorded session; "
        "headroom's tuned library mode is not checked for recoverability.",
    ]


SECTIONS: dict[str, Callable[[Ctx], Section]] = {
    "tokens": section_tokens,
    "large": section_large,
    "dollars": section_dollars,
    "latency": section_latency,
    "scale": section_scale,
    "catalog": section_catalog,
}


def run(quick: bool, only: list[str] | None, out: Path, install: bool) -> tuple[str, list[Section]]:
    work = Path(tempfile.mkdtemp(prefix="offload-bench-", dir=OUT if OUT.exists() else None))
    ctx = Ctx(quick=quick, install=install, work=work)
    started = time.perf_counter()
    sections: list[Section] = []
    for key, fn in SECTIONS.items():
        if only and key not in only:
            continue
        log(f"[bench] {key} ...")
        t0 = time.perf_counter()
        try:
            sec = fn(ctx)
        except Exception as err:
            traceback.print_exc()
            sec = Section(key, key, f"could not run: {type(err).__name__}: {err}", ok=False)
        log(f"[bench] {key} done in {time.perf_counter() - t0:.1f} s")
        sections.append(sec)
    made = plots(ctx, (ROOT / "bench" / "plots") if not quick else (OUT / "plots"))
    elapsed = time.perf_counter() - started
    command = "python bench/run_all.py" + (" --quick" if quick else "") + (f" --only {','.join(only)}" if only else "")
    versions = "; ".join(
        f"{p.name}: " + ", ".join(f"{k} {v}" for k, v in p.versions.items()) for p in ctx.peers.values() if p.available
    )
    parts = [
        "# Benchmarks" if not quick else "# Benchmarks (quick form, CI)",
        "",
        f"Generated by `{command}` in {elapsed / 60:.1f} min. Regenerate with the same command; peers are installed into "
        "their own virtualenvs under `bench/out/` on first use.",
        "",
        "## Machine",
        "",
        machine(),
        f"- Peers: {versions or 'none installed'}",
        "",
    ]
    lines = reading(ctx)
    if lines:
        parts += [
            "## Reading",
            "",
            "Written from this run's numbers by `reading()` in bench/run_all.py.",
            "",
            *lines,
            "",
        ]
    if "tokens_per_peer.png" in made and not quick:
        parts += ["![tokens per peer](bench/plots/tokens_per_peer.png)", ""]
    for sec in sections:
        parts += [f"## {sec.title}", "", sec.body, ""]
    if ctx.notes:
        parts += ["## Skipped or partial", "", *[f"- {n}" for n in dict.fromkeys(ctx.notes)], ""]
    text = "\n".join(parts)
    out.write_text(text, encoding="utf-8")
    with open(OUT / ("results.quick.json" if quick else "results.json"), "w", encoding="utf-8") as fh:
        json.dump(
            {
                "sections": {s.key: {"ok": s.ok, "body": s.body} for s in sections},
                "notes": ctx.notes,
                "seconds": elapsed,
            },
            fh,
            indent=1,
        )
    if os.environ.get("OFFLOAD_BENCH_KEEP_WORK") != "1":
        shutil.rmtree(work, ignore_errors=True)
    return text, sections


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the < 2 minute form CI runs; never installs peers")
    parser.add_argument("--only", help=f"comma-separated sections: {', '.join(SECTIONS)}")
    parser.add_argument(
        "--out",
        help="where to write the markdown (default BENCHMARKS.md, or bench/out/BENCHMARKS.quick.md with --quick)",
    )
    parser.add_argument(
        "--no-install", action="store_true", help="do not install missing peers (the full run installs them)"
    )
    args = parser.parse_args(argv)
    only = [s.strip() for s in args.only.split(",")] if args.only else None
    if only and (bad := [s for s in only if s not in SECTIONS]):
        parser.error(f"unknown section(s) {bad}; choose from {list(SECTIONS)}")
    OUT.mkdir(parents=True, exist_ok=True)
    out = Path(args.out) if args.out else (OUT / "BENCHMARKS.quick.md" if args.quick else ROOT / "BENCHMARKS.md")
    text, sections = run(args.quick, only, out, install=not (args.quick or args.no_install))
    print(text)
    log(f"[bench] wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
