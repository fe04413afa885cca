"""Peers scored like replay scores offload-mcp: tokens cut and needed facts visible, plain and in Claude Code.

    .venv/bin/python bench/fidelity_peers.py shared/corpus/mcp_dev.jsonl.gz bench/data/corpus/mcp_servers.jsonl.gz

For each corpus every record's output is served by bench/peers/payload_server.py
and fetched through each installed peer proxy over stdio (FastMCP's
ResponseLimitingMiddleware at 100 KB, mcp-compressor --shrinkfit), exactly as
bench/run_all.py drives them; Claude Code alone is clients.ClaudeCodeClient on
the raw outputs; offload-mcp is `replay` with its defaults. Each system's
per-record text is then scored by offload_mcp.analysis.fidelity (needed facts: values a
later call of the trajectory used that came from an earlier output), as
plain text and as Claude Code would show it. Peers must be installed
(bench/run_all.py installs them into bench/out/ on first use); a missing one
is skipped and named. headroom is left out: its runner reports sizes, not texts.
A peer that fails on a record is scored on the error the model would see
(`MCP error CODE: message`), and the run goes on (`drive_peer`). A shape zoo
written by bench/shape_zoo.py --out is a corpus like any other here.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "peers"))

from mcp_drive import open_session, result_text  # noqa: E402
from venvs import ensure  # noqa: E402

from offload_mcp.analysis.clients import ClaudeCodeClient  # noqa: E402
from offload_mcp.analysis.fidelity import measure_shown  # noqa: E402
from offload_mcp.analysis.replay import Record, read_records, replay  # noqa: E402
from offload_mcp.config import OffloadSettings  # noqa: E402

FASTMCP_LIMIT = 100_000
PAYLOAD_SERVER = str(HERE / "peers" / "payload_server.py")


MAX_PEER_DEATHS = 3
"""A peer that dies on this many records in a row without answering one is broken, not failing on a record."""

PeerCall = Callable[[Any, int], Awaitable[str]]


def peer_error_text(err: BaseException) -> str:
    """What the model sees when a tool call fails: Claude Code shows an MCP error as `MCP error CODE: message`."""
    if isinstance(err, MCPError):
        return f"MCP error {err.code}: {err.message}"
    return f"Error: {err}"


async def drive_peer(command: list[str], n: int, call: PeerCall, env: dict[str, str] | None = None) -> list[str]:
    """Each record's text as the peer returned it, records 0..n-1 in order.

    A peer that fails on one record (mcp-compressor's shrinkfit raises "could not fit response
    and truncation instructions in budget" on some large results) does not end the run: the
    error is what the model sees for that record, and the next record goes on. A peer that
    dies is started again for the next record; one that dies MAX_PEER_DEATHS times in a row
    before answering anything raises, naming the last error.
    """
    out: list[str] = []
    deaths = 0
    last_error = ""
    while len(out) < n:
        try:
            async with open_session(command, env=env) as session:
                while len(out) < n:
                    try:
                        out.append(await call(session, len(out)))
                    except Exception as err:
                        last_error = peer_error_text(err)
                        out.append(last_error)
                        if not isinstance(err, MCPError) or err.code == CONNECTION_CLOSED:
                            break  # the peer or its session is gone: start it again for the next record
                    deaths = 0
                else:
                    return out
        except Exception as err:  # the peer could not start, or its session failed closing
            last_error = peer_error_text(err)
        deaths += 1
        if deaths >= MAX_PEER_DEATHS:
            raise RuntimeError(f"peer {command[0]} failed {deaths} times in a row; last: {last_error}")
    return out


def peer_texts(records: list[Record], work: Path) -> dict[str, list[str]]:
    rec_file = work / "records.jsonl"
    rec_file.write_text("".join(json.dumps({"output": r.output}) + "\n" for r in records))
    downstream = [sys.executable, PAYLOAD_SERVER, "--records", str(rec_file)]
    shown: dict[str, list[str]] = {}
    fastmcp = ensure("fastmcp", install=False)
    if fastmcp.available:

        async def call_f(session: Any, i: int) -> str:
            return result_text(await session.call_tool("record", {"index": i}))

        command = [
            str(fastmcp.python),
            str(HERE / "peers" / "fastmcp_proxy.py"),
            "--max-size",
            str(FASTMCP_LIMIT),
            *downstream,
        ]
        shown[f"FastMCP ResponseLimiting {FASTMCP_LIMIT // 1000} KB"] = anyio.run(
            drive_peer, command, len(records), call_f
        )
    else:
        print(f"fastmcp skipped: {fastmcp.missing_reason}", file=sys.stderr)
    compressor = ensure("compressor", install=False)
    if compressor.available:
        out_dir = work / "compressor-out"
        out_dir.mkdir(exist_ok=True)
        env = {"MCP_COMPRESSOR_CLI_OUTPUT_DIR": str(out_dir), "TMPDIR": str(out_dir), "MCP_COMPRESSOR_NO_BROWSER": "1"}

        async def call_c(session: Any, i: int) -> str:
            return result_text(
                await session.call_tool("payload_invoke_tool", {"tool_name": "record", "tool_input": {"index": i}})
            )

        command = [str(compressor.bin / "mcp-compressor"), "--shrinkfit", "-n", "payload", "--", *downstream]
        shown["mcp-compressor --shrinkfit"] = anyio.run(drive_peer, command, len(records), call_c, env)
    else:
        print(f"compressor skipped: {compressor.missing_reason}", file=sys.stderr)
    return shown


def score(records: list[Record], texts: list[str]) -> tuple[float, float, float, float]:
    """(tokens cut %, facts visible %) as plain text, then as Claude Code shows it."""
    cc = ClaudeCodeClient()
    cc_texts = [
        cc.view({"content": [{"type": "text", "text": t}]}, tool=r.tool).text
        for r, t in zip(records, texts, strict=True)
    ]
    chars_in = sum(len(r.output) for r in records)
    out = []
    for shown in (texts, cc_texts):
        f = measure_shown(
            [(r.line, r.traj, r.tool, r.call, r.output, s) for r, s in zip(records, shown, strict=True)]
        ).as_dict()
        out += [round(100 * (chars_in - sum(map(len, shown))) / chars_in, 1), f["visible_pct"]]
    return out[0], out[1], out[2], out[3]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpora", nargs="+", type=Path)
    args = parser.parse_args(argv)
    print(
        "| corpus | system | tokens cut (plain) | needed facts visible (plain) | tokens cut (Claude Code) | needed facts visible (Claude Code) |"
    )
    print("|---|---|---|---|---|---|")
    for corpus in args.corpora:
        records = read_records(corpus)
        plain = replay(records, OffloadSettings()).as_dict()
        cc = replay(records, OffloadSettings(), client="claude-code").as_dict()
        # No proxy in Claude Code is replay's own client_alone: it shows a record's structuredContent where
        # the server sent one, as Claude Code does (the peers below only ever get the text from payload_server).
        alone = cc["client_alone"]
        rows: list[tuple[str, tuple[float, ...]]] = [
            ("no proxy", (0.0, 100.0, alone["reduction_pct"], alone["fidelity"]["visible_pct"]))
        ]
        with tempfile.TemporaryDirectory() as tmp:
            rows += [(name, score(records, texts)) for name, texts in peer_texts(records, Path(tmp)).items()]
        rows.append(
            (
                "offload-mcp (defaults)",
                (
                    plain["reduction_pct"],
                    plain["fidelity"]["visible_pct"],
                    cc["reduction_pct"],
                    cc["fidelity"]["visible_pct"],
                ),
            )
        )
        for name, (a, b, c, d) in rows:
            print(f"| {corpus.name} | {name} | {a}% | {b}% | {c}% | {d}% |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
